package agents

import (
	"fmt"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/discovery"
	"github.com/parley-mesh/parley/identity"
)

// Before, a Find kept every card any provider handed out (64 per
// stranger's node, 200 providers a query); now it keeps at most
// maxCardsPerPeer of a stranger's node and maxFound in all, and a
// stranger's card gives its place to a contact's or this node's, which
// are listed first.
func TestFindKeepsFewCardsOfStrangersAndContactsFirst(t *testing.T) {
	_, self := key(t)
	_, friend := key(t)
	contact := func(p peer.ID) bool { return p == friend }
	f := newFound(self, contact)
	card := func(p peer.ID, i int) *discovery.Card {
		return &discovery.Card{Peer: p, Agent: identity.AgentName(fmt.Sprintf("a-%03d", i)), Seq: 1}
	}
	strangers := 0
	for range maxFound/maxCardsPerPeer + 4 {
		_, p := key(t)
		for i := range discovery.MaxAgents {
			f.add(card(p, i))
			strangers++
		}
	}
	if n := len(f.cards); n != maxFound {
		t.Fatalf("%d strangers' cards: %d kept, want %d", strangers, n, maxFound)
	}
	for p, n := range f.perPeer {
		if n > maxCardsPerPeer {
			t.Fatalf("%d cards of stranger %s kept, limit %d", n, p, maxCardsPerPeer)
		}
	}
	for i := range 40 {
		f.add(card(friend, i))
	}
	f.add(card(self, 0))
	res := f.views()
	views, dropped := res.Cards, res.LeftOutPerNode+res.LeftOutInAll
	if len(views) != maxFound || dropped != strangers+41-maxFound {
		t.Fatalf("kept %d, left out %d; want %d and %d", len(views), dropped, maxFound, strangers+41-maxFound)
	}
	// Each stranger's node hands out 64 cards, 16 of which a Find may keep;
	// the strangers' nodes met after maxFound were kept have all theirs
	// left out over maxFound.
	if perNode := maxFound / maxCardsPerPeer * (discovery.MaxAgents - maxCardsPerPeer); res.LeftOutPerNode != perNode {
		t.Fatalf("left out over the limit per node: %d, want %d", res.LeftOutPerNode, perNode)
	}
	if views[0].PeerID != self.String() {
		t.Fatalf("first card is of %s, want this node's", views[0].PeerID)
	}
	for i := 1; i <= 40; i++ {
		if views[i].PeerID != friend.String() {
			t.Fatalf("card %d is of %s, want the contact's (all 40 kept, after this node's)", i, views[i].PeerID)
		}
	}
}
