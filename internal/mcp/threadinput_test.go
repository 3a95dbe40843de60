package mcp_test

import (
	"strings"
	"testing"

	"github.com/parley-mesh/parley/node/nodetest"
)

// TestMCPThreadIDRefusedInItsOwnWords: a thread_id the node cannot take
// (a line break in it, or one too long for a session key) is refused with
// an error that names thread_id and says what it may hold; before, the
// model read the HTTP client's words about a header it never gave
// ("invalid header field value for \"Parley-Session\"") or a limit of a
// session it never named ("session is 300 bytes"); now the MCP wrapper
// checks thread_id first.
func TestMCPThreadIDRefusedInItsOwnWords(t *testing.T) {
	nt := nodetest.Start(t, 1)
	a := connect(t, nt, 0, "a")
	for _, th := range []string{"main\nsecond", strings.Repeat("t", 300)} {
		_, text, isErr := try(t, a, "parley_who", map[string]any{"thread_id": th})
		if !isErr {
			t.Fatalf("thread_id %.20q taken: %s", th, text)
		}
		if !strings.Contains(text, "thread_id") || strings.Contains(text, "Parley-Session") || strings.Contains(text, "net/http") {
			t.Errorf("thread_id %.20q refused in words that do not name it: %s", th, text)
		}
	}
}
