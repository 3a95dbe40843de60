package rooms_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// A contact the creator revoked, then removed from its room, is told of
// its removal all the same: the notice only takes something away from it,
// and it comes from the one node the room's rules let remove it. Its next
// post is refused as out of the room. Before, its node refused the notice
// (and the sync that brings the removal) from a revoked contact, and it
// went on posting into a room nobody took its events from, told nothing.
func TestRevokedThenRemovedNodeIsTold(t *testing.T) {
	const alice, bob, carol = 0, 1, 2
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.SyncInterval = time.Hour // the notice tells, not anti-entropy
	}))
	ctx := context.Background()
	nt.ConnectAll()
	nt.Befriend(t, bob, alice)
	nt.Befriend(t, carol, alice)
	id := roomOf(t, nt, alice, "design", bob)
	waitConnected(t, nt, alice, carol)
	if _, err := mgr(nt, alice).Invite(ctx, id, nt.ID(carol), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(40*time.Second, func() bool { return hasJoined(nt, carol, id) }, "carol to join")
	say(t, nt, carol, id, "carol here")
	nt.WaitFor(20*time.Second, func() bool { return logHas(nt, alice, id, "carol here") }, "alice to hold carol's post")

	if _, err := nt.Node(alice).Contacts().Revoke(ctx, nt.ID(carol).String()); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		c, ok := nt.Node(carol).Contacts().Book().Get(nt.ID(alice), time.Now())
		return ok && c.State == consent.StateRevoked
	}, "carol to hold alice's revocation")
	if _, err := mgr(nt, alice).Remove(ctx, id, nt.ID(carol), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool { _, left := mgr(nt, carol).LeftRoom(id); return left },
		"carol to learn of her removal")
	if _, err := mgr(nt, carol).Say(ctx, id, rooms.SayArgs{Agent: identity.HumanAgent, Text: "still here?"}); !errors.Is(err, rooms.ErrUnknownRoom) && !errors.Is(err, rooms.ErrNotMember) {
		t.Fatalf("carol's post after her removal: %v, want it refused as out of the room", err)
	}
}

// The same removal, with the notice lost (the creator could not reach the
// node then), is learnt at the node's next sync with another member: the
// creator's removal of this node is taken, with the creator's events it
// is built on, though the creator is a contact revoked. Before, the node
// refused them as a cut-off node's, and never learnt it was out.
func TestRevokedThenRemovedNodeLearnsBySync(t *testing.T) {
	const alice, bob, carol = 0, 1, 2
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.SyncInterval = time.Second
	}))
	ctx := context.Background()
	nt.ConnectAll()
	nt.Befriend(t, bob, alice)
	nt.Befriend(t, carol, alice)
	id := roomOf(t, nt, alice, "design", bob)
	waitConnected(t, nt, alice, carol)
	if _, err := mgr(nt, alice).Invite(ctx, id, nt.ID(carol), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(40*time.Second, func() bool { return hasJoined(nt, carol, id) }, "carol to join")
	say(t, nt, carol, id, "carol here")
	nt.WaitFor(20*time.Second, func() bool { return logHas(nt, alice, id, "carol here") && logHas(nt, bob, id, "carol here") },
		"alice and bob to hold carol's post")

	if _, err := nt.Node(alice).Contacts().Revoke(ctx, nt.ID(carol).String()); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		c, ok := nt.Node(carol).Contacts().Book().Get(nt.ID(alice), time.Now())
		return ok && c.State == consent.StateRevoked
	}, "carol to hold alice's revocation")
	// Alice posts once more (carol refuses it, as a revoked contact's),
	// then removes carol while she cannot reach her.
	nt.Partition([]int{alice, bob}, []int{carol})
	say(t, nt, alice, id, "after the revocation")
	if _, err := mgr(nt, alice).Remove(ctx, id, nt.ID(carol), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		ms, err := mgr(nt, bob).Members(id)
		return err == nil && !slices.Contains(ms, nt.ID(carol))
	}, "bob to hold carol's removal")
	nt.Partition([]int{alice}, []int{bob, carol})
	if err := nt.Node(carol).Connect(ctx, peer.AddrInfo{ID: nt.ID(bob), Addrs: nt.Node(bob).Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { _, left := mgr(nt, carol).LeftRoom(id); return left },
		"carol to learn of her removal from bob")
}
