package mcp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/inbox"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestMCPWaitBlocksPastALongUnreadMessage: a message over
// inbox.MaxListedText is never handed out with the pending items but left
// unread for parley_read, counted in more_unread. parley_wait with no
// ask_id ("block until anything new arrives") must still block when that
// message is all there is, already told; before, it returned "New for
// you:" at once, every time, until the agent read the room: an agent
// waiting for its next task spins, one call after another. Now only
// unread that no take reported yet counts as new.
func TestMCPWaitBlocksPastALongUnreadMessage(t *testing.T) {
	nt := nodetest.Start(t, 1)
	a := connect(t, nt, 0, "a")
	b := connect(t, nt, 0, "b")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	call(t, b, "parley_register", map[string]any{"name": "beta"})
	call(t, a, "parley_room_open", map[string]any{"name": "r", "members": []string{"beta"}})
	call(t, a, "parley_say", map[string]any{"room": "r", "text": strings.Repeat("long ", inbox.MaxListedText/5+100)})
	nodetest.WaitFor(t, 10*time.Second, func() bool {
		out, _ := call(t, b, "parley_who", nil)
		more, _ := out["more_unread"].([]any)
		return len(more) > 0
	}, "beta to be told of the long message in more_unread")
	for range 2 {
		start := time.Now()
		out, text := call(t, b, "parley_wait", map[string]any{"wait_seconds": 4})
		if took := time.Since(start); took < 3*time.Second {
			t.Fatalf("parley_wait with nothing new returned after %v, not the 4 s asked: %q (more_unread %v)", took, text, out["more_unread"])
		}
	}
}
