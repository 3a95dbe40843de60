package inbox_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/inbox"
	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

func setup(t *testing.T) (*nodetest.Net, identity.RoomID, *inbox.Inbox) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Second
	}))
	ctx := context.Background()
	a, b := nt.Node(0).Rooms(), nt.Node(1).Rooms()
	nt.WaitFor(30*time.Second, func() bool { return len(nt.Node(0).Host().Network().Peers()) > 0 }, "connect")
	id, err := a.Create(ctx, "inbox", "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Invite(ctx, id, nt.ID(1), "alpha"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool { _, err := b.Get(id); return err == nil }, "B to have the room")
	// The inbox of node B, over its own store (a second Badger would lock).
	db := storeOf(t, nt)
	return nt, id, inbox.New(b, db)
}

// storeOf opens a separate store for the inbox cursors.
func storeOf(t *testing.T, nt *nodetest.Net) *store.DB {
	db, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestAskInvitationAndMessagesOnce(t *testing.T) {
	nt, id, ib := setup(t)
	ctx := context.Background()
	a := nt.Node(0).Rooms()
	beta := identity.AgentName("beta")

	// First: the invitation, once.
	var p inbox.Pending
	nt.WaitFor(30*time.Second, func() bool {
		var err error
		p, err = ib.Take(beta)
		return err == nil && len(p.Items) > 0
	}, "the invitation")
	if len(p.Items) != 1 || p.Items[0].Kind != "invitation" || p.Items[0].Urgent {
		t.Fatalf("first items = %+v", p.Items)
	}
	// Messages in a room beta has not joined are not its business; an ask
	// addressed to it is, and comes first, marked urgent.
	if _, err := a.Say(ctx, id, rooms.SayArgs{Agent: "alpha", Text: "general chatter"}); err != nil {
		t.Fatal(err)
	}
	ask, err := a.Say(ctx, id, rooms.SayArgs{Agent: "alpha", Text: "beta, can you review?", To: "beta@" + nt.ID(1).String()})
	if err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool {
		p, err = ib.Take(beta)
		return err == nil && len(p.Items) > 0
	}, "the ask")
	if len(p.Items) != 1 || p.Items[0].ID != ask.String() || !p.Items[0].Urgent || p.Items[0].Kind != "ask" {
		t.Fatalf("items after the ask = %+v", p.Items)
	}
	if again, _ := ib.Take(beta); len(again.Items) != 0 {
		t.Fatalf("delivered twice: %+v", again.Items)
	}
	// The ask made beta a participant: later messages are its unread items,
	// counted past the limit, newest listed.
	for k := range 15 {
		if _, err := a.Say(ctx, id, rooms.SayArgs{Agent: "alpha", Text: fmt.Sprintf("m%d", k)}); err != nil {
			t.Fatal(err)
		}
	}
	var listed, counted int
	nt.WaitFor(30*time.Second, func() bool {
		p, _ := ib.Take(beta)
		if len(p.Items) > 10 {
			t.Fatalf("%d messages listed in one result, limit 10", len(p.Items))
		}
		listed += len(p.Items)
		for _, n := range p.More {
			counted += n
		}
		return listed+counted == 15
	}, "15 messages listed or counted")
	// All stays readable with Read, which has its own cursor.
	vs, more, err := ib.Read(beta, id, 500)
	if err != nil || more {
		t.Fatalf("read: %v more=%v", err, more)
	}
	texts := 0
	for _, v := range vs {
		if v.Kind == rooms.KindMessage {
			texts++
		}
	}
	if texts != 17 {
		t.Fatalf("read %d messages, want 17", texts)
	}
}

func TestWaitReplyAndBind(t *testing.T) {
	nt, id, ib := setup(t)
	ctx := context.Background()
	a, b := nt.Node(0).Rooms(), nt.Node(1).Rooms()
	nt.WaitFor(20*time.Second, func() bool {
		vs, _ := b.Log(id, 10, nil)
		for _, v := range vs {
			if v.Kind == rooms.KindJoin {
				return true
			}
		}
		return false
	}, "B to join")
	ask, err := b.Say(ctx, id, rooms.SayArgs{Agent: "beta", Text: "ping?", To: "alpha@" + nt.ID(0).String()})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := ib.WaitReply(ctx, ask, 100*time.Millisecond); err != nil || v != nil {
		t.Fatalf("reply before anyone answered: %v %v", v, err)
	}
	nt.WaitFor(30*time.Second, func() bool { _, err := a.Event(id, ask); return err == nil }, "A to have the ask")
	if _, err := a.Say(ctx, id, rooms.SayArgs{Agent: "alpha", Text: "pong", ReplyTo: &ask}); err != nil {
		t.Fatal(err)
	}
	v, err := ib.WaitReply(ctx, ask, 20*time.Second)
	if err != nil || v == nil || v.Text != "pong" {
		t.Fatalf("WaitReply = %+v, %v", v, err)
	}
	// Sessions keep their agent; a rename sticks.
	n1, _ := ib.Bind("s1", "", "default-name")
	n2, _ := ib.Bind("s1", "", "other")
	n3, _ := ib.Bind("s1", "renamed", "")
	n4, _ := ib.Bind("s1", "", "x")
	if n1 != "default-name" || n2 != n1 || n3 != "renamed" || n4 != "renamed" {
		t.Fatalf("bind: %s %s %s %s", n1, n2, n3, n4)
	}
	if _, err := ib.Bind("bad/key", "", "x"); err == nil {
		t.Fatal("bad session key accepted")
	}
}
