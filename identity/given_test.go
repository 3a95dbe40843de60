package identity

import (
	"errors"
	"testing"
)

// A name a person gives is trimmed and its capitals A to Z are small
// letters, as `parley agent register` always took them; a character that
// only looks like a letter is refused, and names read from the wire are
// not folded.
func TestParseGivenAgentName(t *testing.T) {
	for in, want := range map[string]AgentName{"Helper": "helper", " HELPER ": "helper", "claude-API.2": "claude-api.2", "human": "human"} {
		if got, err := ParseGivenAgentName(in); err != nil || got != want {
			t.Errorf("ParseGivenAgentName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"\u212aate", "Bad Name", "", "-x"} { // a Kelvin sign, not K
		if got, err := ParseGivenAgentName(in); !errors.Is(err, ErrBadName) {
			t.Errorf("ParseGivenAgentName(%q) = %q, %v; want ErrBadName", in, got, err)
		}
	}
	if _, err := ParseAgentName("Helper"); err == nil {
		t.Error("ParseAgentName took capitals: a name on the wire is checked as it is")
	}
	a, err := ParseGivenAgentAddr("Helper@12D3KooWGbUqnpDGXyUaKJrwpHvPTqKTu5UrYeFbtg4bUSNJBz7H")
	if err != nil || a.Name != "helper" || a.Peer.String() != "12D3KooWGbUqnpDGXyUaKJrwpHvPTqKTu5UrYeFbtg4bUSNJBz7H" {
		t.Errorf("ParseGivenAgentAddr: %+v %v", a, err)
	}
}
