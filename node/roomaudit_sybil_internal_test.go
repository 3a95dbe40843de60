package node

import (
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/rooms"
)

// Other nodes' decisions about third nodes are recorded within a bound in
// all (RoomAuditsInAll a minute), not only per deciding node: a member
// this node trusts can bring in nodes of its own making (fresh keys, no
// member limit; the room stores their events, vouched for by it), and each
// had a budget of RoomAudits lines a minute of its own, up to the
// limiter's 4,096 keys: about 80,000 lines (some 40 MB) a minute. Before,
// 100 such nodes inviting twice each wrote 200 lines at once.
func TestManyCoMembersAuditedWithinABoundInAll(t *testing.T) {

	home := t.TempDir()
	priv, self := testPeer(t)
	al, err := audit.New(home, priv)
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{id: self, audit: al, log: slog.New(slog.DiscardHandler)}
	a := newRoomAuditor(n)
	room := identity.RoomID("plans")
	a.joined[room] = 0
	depth := uint64(1)
	decide := func(by peer.ID, target peer.ID) {
		depth++
		var id rooms.ID
		copy(id[:], strconv.FormatUint(depth, 10))
		a.event(rooms.View{ID: id, Room: room, Author: by, Kind: rooms.KindInvite, Target: target, Depth: depth})
	}
	for range 100 {
		_, sybil := testPeer(t)
		for range 2 {
			_, p := testPeer(t)
			decide(sybil, p)
		}
	}
	es, err := audit.List(home, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) > 3*RoomAudits {
		t.Fatalf("100 co-members' 200 invites of third nodes wrote %d lines at once (RoomAudits is %d a minute per node)", len(es), RoomAudits)
	}
}
