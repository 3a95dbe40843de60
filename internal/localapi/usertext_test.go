package localapi

import "testing"

func TestUserText(t *testing.T) {
	for in, want := range map[string]string{
		`agents: register: bad input: identity: invalid name: agent name "bad name": character ' ' at 3`: `bad input: agent name "bad name": character ' ' at 3`,
		`agents: register: bad input: reserved name: "human" is you`:                                     `bad input: reserved name: "human" is you`,
		`agents: heartbeat nosuch: no such agent: "nosuch" is not registered`:                            `no such agent: "nosuch" is not registered`,
		`bad input: discovery: bad query: discovery: malformed: capability "x!"`:                         `bad input: bad query: malformed: capability "x!"`,
		`gitrepo: not inside a git repository: /tmp (run in the repository)`:                             `not inside a git repository: /tmp (run in the repository)`,
		`board: bad input: ttl 9h0m0s: use 1s to 8h`:                                                     `bad input: ttl 9h0m0s: use 1s to 8h`,
		`node: home is in use by a running node`:                                                         `home is in use by a running node`,
		`identity: invalid name`:                                                                         `invalid name`,
		`no room named "agents: x"`:                                                                      `no room named "agents: x"`,
		`contacts: approve bogus: no such contact or request: ID`:                                        `contacts: approve bogus: no such contact or request: ID`,
	} {
		if got := UserText(in); got != want {
			t.Errorf("UserText(%q) = %q, want %q", in, got, want)
		}
	}
}
