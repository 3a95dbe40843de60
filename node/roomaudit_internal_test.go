package node

import (
	"crypto/rand"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/rooms"
)

func testPeer(t *testing.T) (crypto.PrivKey, peer.ID) {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p, err := peer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return k, p
}

// A member that invites without end writes RoomAudits lines a minute to
// this node's audit log, and the line after says how many were left out;
// its decisions about this node are all recorded.
func TestCoMemberInvitesAuditedWithinBounds(t *testing.T) {
	home := t.TempDir()
	priv, self := testPeer(t)
	al, err := audit.New(home, priv)
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{id: self, audit: al, log: slog.New(slog.DiscardHandler)}
	a := newRoomAuditor(n)
	_, member := testPeer(t)
	_, quiet := testPeer(t)
	room := identity.RoomID("plans")
	a.joined[room] = 0
	depth := uint64(1)
	decide := func(by peer.ID, kind rooms.Kind, target peer.ID) {
		depth++
		var id rooms.ID
		copy(id[:], strconv.FormatUint(depth, 10))
		a.event(rooms.View{ID: id, Room: room, Author: by, Kind: kind, Target: target, Depth: depth})
	}
	const invites = 3 * RoomAudits
	for range invites {
		_, p := testPeer(t)
		decide(member, rooms.KindInvite, p)
	}
	_, p := testPeer(t)
	decide(quiet, rooms.KindInvite, p) // another member has a bucket of its own
	decide(member, rooms.KindLeave, self)
	es, err := audit.List(home, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	byMember, byQuiet, aboutSelf := 0, 0, 0
	var told string
	for _, e := range es {
		switch e.Actor {
		case "peer:" + member.String():
			byMember++
			if e.Detail["peer"] == self.String() {
				aboutSelf++
				told = e.Detail["unlogged_before"]
			}
		case "peer:" + quiet.String():
			byQuiet++
		}
	}
	// A few tokens may come back while the test runs: at most one in 3 s.
	if byMember-aboutSelf < RoomAudits || byMember-aboutSelf > RoomAudits+2 {
		t.Fatalf("%d lines for %d invites of one member, want about %d", byMember-aboutSelf, invites, RoomAudits)
	}
	if byQuiet != 1 || aboutSelf != 1 {
		t.Fatalf("the other member's invite: %d lines; this node's removal: %d lines; want 1 each", byQuiet, aboutSelf)
	}
	if want := strconv.Itoa(invites - (byMember - aboutSelf)); told != want {
		t.Fatalf("the removal's line says %q invites were left out, want %s", told, want)
	}
	if rep, err := audit.Verify(home, self); err != nil || !rep.OK {
		t.Fatalf("the audit log does not verify: %+v %v", rep, err)
	}
}

// Of the decisions about this node, only those that let it in or put it out
// are recorded without limit, once each until the other comes: invites of
// its agents into a room it is in, and repeated removals, are held to
// RoomAudits a minute like decisions about third nodes.
func TestCoMemberDecisionsAboutThisNodeAuditedWithinBounds(t *testing.T) {
	home := t.TempDir()
	priv, self := testPeer(t)
	al, err := audit.New(home, priv)
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{id: self, audit: al, log: slog.New(slog.DiscardHandler)}
	a := newRoomAuditor(n)
	_, member := testPeer(t)
	room := identity.RoomID("plans")
	depth := uint64(1)
	decide := func(kind rooms.Kind, to string) {
		depth++
		var id rooms.ID
		copy(id[:], strconv.FormatUint(depth, 10))
		a.event(rooms.View{ID: id, Room: room, Author: member, Kind: kind, Target: self, To: to, Depth: depth})
	}
	decide(rooms.KindInvite, "a0") // an invite of one of its agents admits this node
	const invites = 3 * RoomAudits
	for i := range invites {
		decide(rooms.KindInvite, "a"+strconv.Itoa(i+1))
	}
	decide(rooms.KindLeave, "") // the removal
	decide(rooms.KindLeave, "") // again: no news, limited
	decide(rooms.KindInvite, "")
	es, err := audit.List(home, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range es {
		actions = append(actions, e.Action)
	}
	if len(es) < RoomAudits+2 || len(es) > RoomAudits+5 {
		t.Fatalf("%d lines for %d decisions about this node, want about %d: %v", len(es), invites+4, RoomAudits+3, actions)
	}
	if es[0].Action != audit.RoomInvite || es[0].Detail["agent"] != "a0" {
		t.Fatalf("the admission is not the first line: %+v", es[0])
	}
	last, removal := es[len(es)-1], es[len(es)-2]
	if removal.Action != audit.RoomRemove || removal.Detail["unlogged_before"] == "" {
		t.Fatalf("the removal: %+v (lines %v)", removal, actions)
	}
	if last.Action != audit.RoomInvite || last.Detail["agent"] != "" || last.Detail["unlogged_before"] != "1" {
		t.Fatalf("the invite back after the removal: %+v (lines %v)", last, actions)
	}
}
