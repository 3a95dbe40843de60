package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// prefixRe is a context an error message opens with: "agents", "contacts:
// approve bogus" and the like.
var prefixRe = regexp.MustCompile(`^[a-z][a-z ]{0,40}$`)

// repeatedContext returns a context that msg ("parley: a: b: ...") names
// twice, or "".
func repeatedContext(msg string) string {
	seen := make(map[string]bool)
	for _, seg := range strings.Split(strings.TrimSpace(msg), ": ") {
		if !prefixRe.MatchString(seg) {
			continue
		}
		if seen[seg] {
			return seg
		}
		seen[seg] = true
	}
	return ""
}

// A failing command says each context of its error once: the agent and
// contact services' errors used to name their package twice ("agents:
// heartbeat: agents: no such agent", "contacts: approve x: contacts: no
// such contact or request"), their sentinels carrying the prefix their
// callers add.
func TestCLIErrorsSayTheirContextOnce(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	var id struct {
		PeerID string `json:"peer_id"`
	}
	runJSON(t, &id, "--home", home, "id")
	runJSON(t, &struct{}{}, "--home", home, "agent", "register", "held", "--session", "one")
	runJSON(t, &struct{}{}, "--home", home, "room", "create", "design")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "heartbeat", "nosuch"}, "parley: no such agent: "},
		{[]string{"agent", "unregister", "nosuch"}, "parley: no such agent: "},
		{[]string{"agent", "register", "held", "--session", "two"}, "parley: name held by another session: "},
		{[]string{"agent", "register", "Bad Name"}, `parley: bad input: agent name "bad name": `},
		{[]string{"agent", "register", "human"}, "parley: bad input: reserved name: "},
		{[]string{"agent", "mute", "Bad Name"}, `is not an agent (NAME, or NAME@PEER_ID): agent name "bad name": `},
		{[]string{"find", "cap:"}, `parley: bad input: bad query: "cap:" has no value`},
		{[]string{"claim", "x", "--note", "n", "--project", "p", "--ttl", "9h"}, "--ttl 9h0m0s: must be from 1s to 8h0m0s"},
		{[]string{"contact", "approve", "bogus"}, "contacts: approve bogus: no such contact or request: "},
		{[]string{"contact", "deny", "bogus"}, "contacts: deny bogus: no such contact or request: "},
		{[]string{"contact", "revoke", "bogus"}, "contacts: revoke bogus: no such contact or request: "},
		{[]string{"contact", "request", "bogus"}, "contacts: bad input: "},
		{[]string{"contact", "request", id.PeerID}, "bad input: that is this node's own peer ID"},
		{[]string{"room", "say", "nosuch", "hi"}, "no room named \"nosuch\" on this node (`parley room list` lists the rooms)"},
		{[]string{"room", "log", "desgin"}, "no room named \"desgin\" on this node (did you mean \"design\"? `parley room list` lists the rooms)"},
		{[]string{"invites", "accept", "nosuch"}, "rooms: unknown room: "},
		{[]string{"org", "accept", "bogus"}, `"bogus" is not an ORGKEY (`},
		{[]string{"org", "trust", "bogus", "--key", "k"}, `"bogus" is not an ORGKEY (`},
		{[]string{"contact", "request", "12D3KooWDpg8uJ23WCMp3pC5in3VfXd9rUnP3jSnY32zU88w3CiC"}, "contacts: request 12D3KooWDpg8uJ23WCMp3pC5in3VfXd9rUnP3jSnY32zU88w3CiC: peer cannot be reached: "},
	} {
		_, errs, code := run(t, append([]string{"--home", home}, tc.args...)...)
		if code == 0 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", tc.args, code, errs, tc.want)
		}
		// A peer ID is named where the error says what failed, and at most
		// once more in a command to copy.
		if n := strings.Count(errs, "12D3KooWDpg8"); n > 2 {
			t.Errorf("%v: %q names the peer %d times", tc.args, errs, n)
		}
		if r := repeatedContext(errs); r != "" {
			t.Errorf("%v: %q names %q twice", tc.args, errs, r)
		}
		// Nor does it name an internal package, or send a person at the
		// CLI to an MCP tool.
		if internalRe.MatchString(errs) || strings.Contains(errs, "parley_") {
			t.Errorf("%v: %q names an internal package or an MCP tool", tc.args, errs)
		}
	}
	// Outside a git repository, with no --project.
	cmd := exec.Command(parleyBin, "--home", home, "board")
	cmd.Dir = t.TempDir()
	if _, errs, code := runPrepared(t, cmd); code == 0 || !strings.HasPrefix(errs, "parley: not inside a git repository") {
		t.Errorf("board outside a repository: exit %d, %q", code, errs)
	}
}

// internalRe finds a context naming an internal package in an error's
// text.
var internalRe = regexp.MustCompile(`(^parley|:) (agents|identity|discovery|gitrepo|board|node|localapi): `)
