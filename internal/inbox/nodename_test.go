package inbox

import (
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

// shownNames names each node as the names service would.
type shownNames map[peer.ID]string

func (n shownNames) Resolve(string) (peer.ID, error) { return "", nil }
func (n shownNames) Name(p peer.ID) string           { return n[p] }

// TestNodeNameKeepsItsTail: a node's name in the name of a room an ask
// opens is cut to maxNodeName bytes. Before, the cut took the end off,
// and with it the ~SUFFIX a look-alike shows with: a long handle that
// reads like a contact's lost what tells it apart. Now the handle is cut
// and the tail kept; a name without a tail is cut at its end, on a
// character's boundary.
func TestNodeNameKeepsItsTail(t *testing.T) {
	p := peer.ID("a node")
	long := strings.Repeat("bob ", 8) + "(laptop)"
	for name, want := range map[string]string{
		"bob~X7kQ":                         "bob~X7kQ",
		long + "~X7kQ":                     "bob bob bob bob bob bob…~X7kQ",
		long:                               "bob bob bob bob bob bob bob b…",
		strings.Repeat("é", 20):            strings.Repeat("é", 14) + "…",
		strings.Repeat("é", 20) + "~Zz9a1": strings.Repeat("é", 11) + "…~Zz9a1",
	} {
		b := &Inbox{cfg: Config{Names: shownNames{p: name}}}
		got := b.nodeName(p)
		if got != want || len(got) > maxNodeName {
			t.Errorf("nodeName of %q = %q (%d bytes), want %q", name, got, len(got), want)
		}
	}
}
