package inbox_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
)

// TestRemoveAgent: the room's creator takes one agent of a member node out
// through the local API; the agent is told once, the asks it owed there are
// dropped, its posts are refused with an error that says why, the node's
// other agent stays in; a member cannot remove, and an invite takes the
// agent back.
func TestRemoveAgent(t *testing.T) {
	nt := start(t, 2)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	beta := register(t, nt, 1, "beta")
	gamma := register(t, nt, 1, "gamma")
	res, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "design", Members: []string{beta, gamma}})
	if err != nil || len(res.Failed) != 0 {
		t.Fatalf("open: %+v %v", res, err)
	}
	room := res.RoomID
	ask, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{Room: room, To: beta, Text: "can you review?"})
	if err != nil {
		t.Fatal(err)
	}
	waitItems(t, nt, 1, "beta", "the ask", func(p localapi.Pending) bool { return slices.Contains(kinds(p), "ask") })

	if _, err := ib(nt, 1).Remove(ctx, room, localapi.RemoveRequest{PeerID: "alpha@" + nt.ID(0).String()}); !localapi.IsCode(err, localapi.CodeNotCreator) {
		t.Fatalf("a member removed the creator's agent: %v", err)
	}
	if _, err := ib(nt, 0).Remove(ctx, room, localapi.RemoveRequest{PeerID: "nobody@" + nt.ID(1).String()}); !localapi.IsCode(err, localapi.CodeNotMember) {
		t.Fatalf("removed an agent that was never in: %v", err)
	}
	if _, err := ib(nt, 0).Remove(ctx, room, localapi.RemoveRequest{PeerID: beta}); err != nil {
		t.Fatal(err)
	}
	p := waitItems(t, nt, 1, "beta", "beta told of its removal", func(p localapi.Pending) bool { return slices.Contains(kinds(p), "removed") })
	if len(p.Items) != 1 || p.Items[0].Room != room || p.Items[0].RoomName != "design" || p.Items[0].From != "human@"+nt.ID(0).String() {
		t.Fatalf("items with the removal: %+v", p.Items)
	}
	if again, err := ib(nt, 1).Take(ctx, "beta"); err != nil || len(again.Items) != 0 {
		t.Fatalf("after the removal was shown (the ask owed there is gone): %+v %v", again.Items, err)
	}
	if owed, err := ib(nt, 1).Owed(ctx, "beta"); err != nil || len(owed) != 0 {
		t.Fatalf("owed after the removal: %+v %v", owed, err)
	}
	if _, err := ib(nt, 1).Reply(ctx, "beta", localapi.ReplyRequest{MessageID: ask.AskID, Text: "LGTM"}); !localapi.IsCode(err, localapi.CodeLeft) {
		t.Fatalf("reply after the removal: %v", err)
	}
	if _, err := ib(nt, 1).Say(ctx, "beta", localapi.SayRequest{Room: room, Text: "still here"}); !localapi.IsCode(err, localapi.CodeLeft) {
		t.Fatalf("say after the removal: %v", err)
	}
	if _, err := ib(nt, 1).Say(ctx, "gamma", localapi.SayRequest{Room: room, Text: "I stay"}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		nt.WaitFor(20*time.Second, func() bool {
			in, err := ib(nt, i).Get(ctx, room)
			return err == nil && !slices.Contains(in.Agents, beta) && slices.Contains(in.Agents, gamma)
		}, "node %d to list gamma and not beta", i)
	}
	log, err := ib(nt, 0).Log(ctx, room, 100, "")
	if err != nil || !slices.ContainsFunc(log, func(e localapi.Event) bool { return e.Kind == "leave" && e.To == beta }) {
		t.Fatalf("the removal in the room's log: %v", err)
	}
	if _, err := ib(nt, 0).Invite(ctx, "alpha", localapi.InviteRequest{Room: room, Member: beta}); err != nil {
		t.Fatal(err)
	}
	waitItems(t, nt, 1, "beta", "beta invited back", func(p localapi.Pending) bool { return slices.Contains(kinds(p), "invitation") })
	if _, err := ib(nt, 1).Say(ctx, "beta", localapi.SayRequest{Room: room, Text: "back"}); err != nil {
		t.Fatalf("say after a new invite: %v", err)
	}
	if _, err := ib(nt, 0).Remove(ctx, room, localapi.RemoveRequest{PeerID: "beta@nohandle"}); err == nil || !strings.Contains(err.Error(), "nohandle") {
		t.Fatalf("a removal of an unknown handle: %v", err)
	}
}

// TestInvitationGoesWhenTheAgentIsOut: an invitation not yet taken is
// dropped once the agent is out of the room, whether removed by the
// creator or gone of itself: what waits for it says it was removed, not
// that it is invited.
func TestInvitationGoesWhenTheAgentIsOut(t *testing.T) {
	nt := start(t, 2)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	beta := register(t, nt, 1, "beta")
	gamma := register(t, nt, 1, "gamma")
	delta := register(t, nt, 1, "delta")
	res, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "design", Members: []string{beta, gamma, delta}})
	if err != nil || len(res.Failed) != 0 {
		t.Fatalf("open: %+v %v", res, err)
	}
	peek := func(agent, what string, cond func(localapi.Pending) bool) localapi.Pending {
		t.Helper()
		var p localapi.Pending
		nt.WaitFor(30*time.Second, func() bool {
			var err error
			if p, err = ib(nt, 1).Peek(ctx, agent); err != nil {
				t.Fatal(err)
			}
			return cond(p)
		}, "%s", what)
		return p
	}
	for _, a := range []string{"beta", "gamma"} {
		peek(a, a+"'s invitation", func(p localapi.Pending) bool { return slices.Contains(kinds(p), "invitation") })
	}
	if _, err := ib(nt, 0).Remove(ctx, res.RoomID, localapi.RemoveRequest{PeerID: beta}); err != nil {
		t.Fatal(err)
	}
	p := peek("beta", "beta told of its removal", func(p localapi.Pending) bool { return slices.Contains(kinds(p), "removed") })
	if k := kinds(p); !slices.Equal(k, []string{"removed"}) {
		t.Fatalf("beta's items once removed: %v", k)
	}
	if _, err := ib(nt, 1).Leave(ctx, "gamma", localapi.LeaveRequest{Room: res.RoomID}); err != nil {
		t.Fatal(err)
	}
	peek("gamma", "gamma's invitation gone once it left", func(p localapi.Pending) bool { return !slices.Contains(kinds(p), "invitation") })
}
