package node_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/usage"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// auditActions lists the actions of a home's audit log after checking that
// the log verifies.
func auditActions(t *testing.T, nt *nodetest.Net, i int) []string {
	t.Helper()
	rep, err := audit.Verify(nt.Home(i), nt.ID(i))
	if err != nil || !rep.OK {
		t.Fatalf("node %d: audit log does not verify: %+v %v", i, rep, err)
	}
	es, err := audit.List(nt.Home(i), time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Actor+" "+e.Action+" "+e.Subject)
	}
	return out
}

// pendingID waits for a pending-in request from p on c and returns its ID.
func pendingID(t *testing.T, nt *nodetest.Net, c *localapi.Client, from string) string {
	t.Helper()
	var id string
	nt.WaitFor(20*time.Second, func() bool {
		es, err := c.Contacts(context.Background())
		if err != nil {
			return false
		}
		for _, e := range es {
			if e.PeerID == from && e.State == "pending-in" {
				id = e.ID
				return true
			}
		}
		return false
	}, "the contact request from %s", from)
	return id
}

// Every decision on who can reach whom is recorded where it is made, on the
// node that makes it (actor human or the agent), and on the node it concerns
// (actor peer:ID); every log verifies.
func TestDecisionsAreAudited(t *testing.T) {
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) { c.SyncInterval = time.Second }))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := make([]*localapi.Client, 3)
	for i := range cs {
		cs[i] = localapi.NewClient(node.SocketPath(nt.Home(i)))
		defer cs[i].Close()
	}
	a, b, c := nt.ID(0).String(), nt.ID(1).String(), nt.ID(2).String()
	nt.ConnectAll()

	// b asks a, a approves; c asks a, a denies.
	if _, err := cs[1].ContactRequest(ctx, a, "hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[0].ContactApprove(ctx, pendingID(t, nt, cs[0], b), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[2].ContactRequest(ctx, a, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[0].ContactDeny(ctx, pendingID(t, nt, cs[0], c)); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		es, err := cs[1].Contacts(ctx)
		return err == nil && len(es) == 1 && es[0].State == "active"
	}, "the contact to be active on b")

	// alice on a opens a room with b's node, removes it, then leaves.
	registered(t, ctx, cs[0], "alice")
	res, err := cs[0].OpenRoom(ctx, "alice", localapi.OpenRoomRequest{Name: "plans", Members: []string{b}})
	if err != nil || len(res.Invited) != 1 {
		t.Fatalf("open room: %+v %v", res, err)
	}
	if _, err := cs[0].Remove(ctx, res.RoomID, localapi.RemoveRequest{PeerID: b, Agent: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[0].Say(ctx, "alice", localapi.SayRequest{Room: res.RoomID, Text: "after b is out"}); err != nil {
		t.Fatal(err)
	}
	// b records a's decisions about it as their events arrive: invited,
	// then removed (its next sync with a brings the events up to its
	// removal, and no later one).
	nt.WaitFor(60*time.Second, func() bool {
		got := auditActions(t, nt, 1)
		return slices.Contains(got, "peer:"+a+" room.invite "+res.RoomID) && slices.Contains(got, "peer:"+a+" room.remove "+res.RoomID)
	}, "b to record that a invited and removed it:\n%s", strings.Join(auditActions(t, nt, 1), "\n"))
	vs, err := nt.Node(1).Rooms().SinceKept(identity.RoomID(res.RoomID), 0, 0)
	if err != nil || slices.ContainsFunc(vs, func(v rooms.View) bool { return v.Text == "after b is out" }) {
		t.Fatalf("b holds a's message after its removal (%v)", err)
	}
	// The room closes on b right after the batch that removed it is told
	// to readers such as the auditor.
	nt.WaitFor(30*time.Second, func() bool {
		_, err := cs[1].Room(ctx, res.RoomID)
		return err != nil
	}, "b to stop following the room it was removed from")
	if _, err := cs[0].Leave(ctx, "alice", localapi.LeaveRequest{Room: res.RoomID}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[0].ContactRevoke(ctx, b); err != nil {
		t.Fatal(err)
	}

	want := map[int][]string{
		0: {
			"peer:" + b + " contact.request " + b,
			"human contact.approve " + b,
			"peer:" + c + " contact.request " + c,
			"human contact.deny " + c,
			"alice room.create " + res.RoomID,
			"alice room.invite " + res.RoomID,
			"alice room.remove " + res.RoomID,
			"alice room.leave " + res.RoomID,
			"human contact.revoke " + b,
		},
		1: {"human contact.request " + a, "peer:" + a + " contact.approve " + a},
		2: {"human contact.request " + a},
	}
	for i, w := range want {
		var got []string
		nt.WaitFor(20*time.Second, func() bool {
			got = auditActions(t, nt, i)
			return len(got) >= len(w)
		}, "node %d's audit log to hold %d entries", i, len(w))
		for _, x := range w {
			if !slices.Contains(got, x) {
				t.Fatalf("node %d: audit log lacks %q:\n%s", i, x, strings.Join(got, "\n"))
			}
		}
	}
	// The peers learn of the denial and the revocation as they are told.
	nt.WaitFor(20*time.Second, func() bool {
		return slices.Contains(auditActions(t, nt, 2), "peer:"+a+" contact.deny "+a) &&
			slices.Contains(auditActions(t, nt, 1), "peer:"+a+" contact.revoke "+a)
	}, "the denial and the revocation to be recorded by the peers:\n%s\n%s", strings.Join(auditActions(t, nt, 1), "\n"), strings.Join(auditActions(t, nt, 2), "\n"))
}

// The node counts its agents' messages, asks and answers, per agent and per
// room, in its metrics.
func TestUsagePerAgent(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	for _, name := range []string{"alice", "bob"} {
		if _, err := c.RegisterAgent(ctx, localapi.RegisterAgentRequest{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	ask, err := c.Ask(ctx, "alice", localapi.AskRequest{To: "bob", Text: "which port?"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Take(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reply(ctx, "bob", localapi.ReplyRequest{MessageID: ask.AskID, Text: "4190"}); err != nil {
		t.Fatal(err)
	}
	s := nt.Node(0).Usage().Snapshot()
	got := map[string]string{}
	for _, a := range s.Agents {
		got[a.Name] = fmt.Sprintf("m%d b%d q%d a%d", a.Messages, a.Bytes, a.AsksMade, a.AsksAnswered)
	}
	if got["alice"] != "m1 b11 q1 a0" || got["bob"] != "m1 b4 q0 a1" {
		t.Fatalf("usage %v", got)
	}
	if len(s.Rooms) != 1 || s.Rooms[0].Name != ask.Room.RoomID || s.Rooms[0].Messages != 2 {
		t.Fatalf("rooms %+v", s.Rooms)
	}
	text, err := c.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`parley_agent_messages_total{agent="alice"} 1`, `parley_agent_answers_total{agent="bob"} 1`,
		`parley_agent_answer_seconds_count{agent="bob"} 1`, `parley_room_asks_total{room="` + ask.Room.RoomID + `"} 1`} {
		if !strings.Contains(text, w) {
			t.Fatalf("metrics lack %s", w)
		}
	}

	// An answer given with no call before it that reads what is owed (the
	// human, from the CLI) counts too, and only once.
	ask, err = c.Ask(ctx, "alice", localapi.AskRequest{To: "human", Text: "ok?"})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"yes", "still yes"} {
		if _, err := c.Reply(ctx, "human", localapi.ReplyRequest{MessageID: ask.AskID, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	human := slices.IndexFunc(nt.Node(0).Usage().Snapshot().Agents, func(a usage.Counts) bool {
		return a.Name == "human" && a.Messages == 2 && a.AsksAnswered == 1
	})
	if human < 0 {
		t.Fatalf("the human's usage after two answers to one ask is not 2 messages and 1 answer: %+v", nt.Node(0).Usage().Snapshot().Agents)
	}
}

// openPolicy lets a node invite anyone (as a hostile node would).
type openPolicy struct{}

func (openPolicy) CanInvite(peer.ID) error { return nil }
func (openPolicy) Allowed(peer.ID) error   { return nil }

// The user's answers to invites that waited for them are audited.
func TestInviteAnswersAreAudited(t *testing.T) {
	t.Parallel() // waits on invites and audit records; sets no package knob
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.SyncInterval = time.Second
		if i == 1 {
			c.RoomPolicy = openPolicy{}
		}
	}))
	nt.ConnectAll()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := make([]*localapi.Client, 3)
	for i := range cs {
		cs[i] = localapi.NewClient(node.SocketPath(nt.Home(i)))
		defer cs[i].Close()
	}
	// Node 2 is a contact of 0 and 1 and brings both into a room: node 1
	// is a co-member of node 0, not its contact, so its invites wait.
	needContact(t, nt, 0, 2)
	needContact(t, nt, 1, 2)
	registered(t, ctx, cs[2], "carol")
	registered(t, ctx, cs[1], "mallory")
	res, err := cs[2].OpenRoom(ctx, "carol", localapi.OpenRoomRequest{Name: "shared", Members: []string{nt.ID(0).String(), nt.ID(1).String()}})
	if err != nil || len(res.Invited) != 2 {
		t.Fatalf("open: %+v %v", res, err)
	}
	nt.WaitFor(30*time.Second, func() bool { return nt.Node(0).Contacts() != nil && sharesRoom(nt, 0, 1) }, "node 0 to see node 1 in the room")
	var ids []string
	for _, name := range []string{"first", "second"} {
		r, err := cs[1].OpenRoom(ctx, "mallory", localapi.OpenRoomRequest{Name: name, Members: []string{nt.ID(0).String()}})
		if err != nil || len(r.Invited) != 1 {
			t.Fatalf("open %s: %+v %v", name, r, err)
		}
		ids = append(ids, r.RoomID)
	}
	nt.WaitFor(30*time.Second, func() bool {
		w, err := cs[0].Invites(ctx)
		return err == nil && len(w) == 2
	}, "two invites to wait on node 0")
	var got []string
	held := "peer:" + nt.ID(1).String() + " room.held "
	nt.WaitFor(30*time.Second, func() bool {
		got = auditActions(t, nt, 0)
		return slices.Contains(got, held+ids[0]) && slices.Contains(got, held+ids[1])
	}, "node 0 to record the two invites held for the user")
	if _, err := cs[0].InviteAccept(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[0].InviteDecline(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	got = auditActions(t, nt, 0)
	for _, w := range []string{"human room.accept " + ids[0], "human room.decline " + ids[1]} {
		if !slices.Contains(got, w) {
			t.Fatalf("audit log lacks %q:\n%s", w, strings.Join(got, "\n"))
		}
	}
	// Node 2 takes node 1 out of the shared room: node 0, a member, records
	// it with the invite that brought it in, and nothing of node 0's own
	// twice.
	if _, err := cs[2].Remove(ctx, res.RoomID, localapi.RemoveRequest{PeerID: nt.ID(1).String(), Agent: "carol"}); err != nil {
		t.Fatal(err)
	}
	by := "peer:" + nt.ID(2).String()
	nt.WaitFor(30*time.Second, func() bool {
		got = auditActions(t, nt, 0)
		return slices.Contains(got, by+" room.remove "+res.RoomID)
	}, "node 0 to record node 2's removal of node 1:\n%s", strings.Join(got, "\n"))
	if !slices.Contains(got, by+" room.invite "+res.RoomID) {
		t.Fatalf("node 0 did not record its invite:\n%s", strings.Join(got, "\n"))
	}
	es, err := audit.List(nt.Home(0), time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Actor == by && e.Action == audit.RoomRemove && e.Detail["peer"] != nt.ID(1).String() {
			t.Fatalf("the removal names %v", e.Detail)
		}
	}
}

// sharesRoom reports whether node i holds a room with node j in it.
func sharesRoom(nt *nodetest.Net, i, j int) bool {
	for _, in := range nt.Node(i).Rooms().List() {
		if slices.Contains(in.Members, nt.ID(j)) {
			return true
		}
	}
	return false
}
