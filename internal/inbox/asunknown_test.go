package inbox_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/localapi"
)

// A post as a name this node does not know (not human, not registered, no
// record in the room) is refused and posts nothing: before, a mistyped
// --as posted as a new agent and made it a member of the room for good.
// Registered agents (in the room or not), human, and members whose
// registration lapsed still post; a member that left is told it left.
func TestPostAsUnknownAgentRefused(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	b := ib(nt, 0)
	register(t, nt, 0, "alpha")
	beta := register(t, nt, 0, "beta")
	res, err := b.OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "r"})
	if err != nil {
		t.Fatal(err)
	}
	room := res.RoomID
	if _, err := b.Invite(ctx, "human", localapi.InviteRequest{Room: room, Member: beta}); err != nil {
		t.Fatal(err)
	}
	before, err := b.Get(ctx, room)
	if err != nil {
		t.Fatal(err)
	}
	nrooms := len(b.List(ctx))

	unknown := func(what string, err error) {
		t.Helper()
		if !localapi.IsCode(err, localapi.CodeUnknownAgent) || !strings.Contains(err.Error(), `no agent "ghost" is registered on this node`) ||
			!strings.Contains(err.Error(), "parley agent list") {
			t.Errorf("%s as ghost: %v, want unknown_agent naming `parley agent list`", what, err)
		}
	}
	_, err = b.Say(ctx, "ghost", localapi.SayRequest{Room: room, Text: "hello"})
	unknown("say", err)
	_, err = b.Ask(ctx, "ghost", localapi.AskRequest{Room: room, Text: "anyone?"})
	unknown("ask of the room", err)
	_, err = b.Ask(ctx, "ghost", localapi.AskRequest{To: "alpha", Text: "you?"})
	unknown("ask of an agent", err)
	_, err = b.Invite(ctx, "ghost", localapi.InviteRequest{Room: room, Member: "alpha"})
	unknown("invite", err)
	_, err = b.OpenRoom(ctx, "ghost", localapi.OpenRoomRequest{Name: "mine"})
	unknown("open", err)
	_, err = b.Leave(ctx, "ghost", localapi.LeaveRequest{Room: room, Node: true})
	unknown("leave --node", err)
	after, err := b.Get(ctx, room)
	if err != nil {
		t.Fatal(err)
	}
	if after.Events != before.Events || slices.ContainsFunc(after.Agents, func(a string) bool { return strings.HasPrefix(a, "ghost@") }) ||
		len(b.List(ctx)) != nrooms {
		t.Fatalf("refused calls changed the rooms: %d → %d events, agents %v, %d → %d rooms",
			before.Events, after.Events, after.Agents, nrooms, len(b.List(ctx)))
	}

	// human, and a registered agent with no record in the room (as before:
	// it becomes a member by posting), post; a name with capitals is the
	// agent register made of it.
	for _, as := range []string{"human", "ALPHA"} {
		if _, err := b.Say(ctx, as, localapi.SayRequest{Room: room, Text: "from " + as}); err != nil {
			t.Fatalf("say as %s: %v", as, err)
		}
	}
	log, err := nt.Node(0).Rooms().Log(identity.RoomID(room), 1, nil)
	if err != nil || len(log) != 1 || log[0].Agent != "alpha" {
		t.Fatalf("the post as ALPHA: %+v %v, want it from alpha", log, err)
	}

	// A member whose registration lapsed (unregistered here) posts in its
	// room, but not in another it has no record in.
	if err := nt.Node(0).Agents().Unregister(ctx, "beta"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Say(ctx, "beta", localapi.SayRequest{Room: room, Text: "still here"}); err != nil {
		t.Fatalf("say of a member no longer registered: %v", err)
	}
	other, err := b.OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Say(ctx, "beta", localapi.SayRequest{Room: other.RoomID, Text: "hi"}); !localapi.IsCode(err, localapi.CodeUnknownAgent) ||
		!strings.Contains(err.Error(), `nor a member of room "other"`) {
		t.Fatalf("say of an unregistered agent in a room it has no record in: %v", err)
	}
	// A member of a room may open one (the node knows it).
	if _, err := b.OpenRoom(ctx, "beta", localapi.OpenRoomRequest{Name: "beta's"}); err != nil {
		t.Fatalf("open by an unregistered member of a room: %v", err)
	}
	// One that left is told so, as before.
	if _, err := b.Leave(ctx, "beta", localapi.LeaveRequest{Room: room}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Say(ctx, "beta", localapi.SayRequest{Room: room, Text: "back?"}); !localapi.IsCode(err, localapi.CodeLeft) {
		t.Fatalf("say of a member that left: %v, want left", err)
	}
}

// An inbox of a name this node knows nothing of (not registered, in no
// room, nothing pending) is refused, where it said nothing waits. An
// agent that unregistered, out of every room, with a reply still to be
// shown, is shown it; human's inbox is always there.
func TestInboxOfUnknownAgentRefused(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	b := ib(nt, 0)
	if _, err := b.Peek(ctx, "nosuchagent"); !localapi.IsCode(err, localapi.CodeUnknownAgent) ||
		!strings.Contains(err.Error(), `no agent "nosuchagent" is registered`) {
		t.Fatalf("peek: %v", err)
	}
	if _, err := b.Take(ctx, "nosuchagent"); !localapi.IsCode(err, localapi.CodeUnknownAgent) {
		t.Fatalf("take: %v", err)
	}
	if _, err := b.Wait(ctx, "nosuchagent", localapi.WaitRequest{Seconds: 5}); !localapi.IsCode(err, localapi.CodeUnknownAgent) {
		t.Fatalf("wait: %v", err)
	}
	if _, err := b.Peek(ctx, "human"); err != nil {
		t.Fatalf("human's inbox: %v", err)
	}
	register(t, nt, 0, "idle")
	if p, err := b.Peek(ctx, "IDLE"); err != nil || len(p.Items) != 0 {
		t.Fatalf("a registered agent's empty inbox, named in capitals: %+v %v", p, err)
	}

	// beta asks human in a room of the two; human answers; beta's state
	// notes the reply (a peek hands nothing out). Then the node leaves the
	// room and beta is unregistered: the reply still waits for it.
	register(t, nt, 0, "beta")
	ask, err := b.Ask(ctx, "beta", localapi.AskRequest{To: "human", Text: "ready?"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Say(ctx, "human", localapi.SayRequest{Room: ask.Room.RoomID, Text: "yes", ReplyTo: ask.AskID}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(10*time.Second, func() bool {
		p, err := b.Peek(ctx, "beta")
		return err == nil && slices.ContainsFunc(p.Items, func(it localapi.Item) bool { return it.Kind == "reply" })
	}, "beta's reply")
	if _, err := b.Leave(ctx, "human", localapi.LeaveRequest{Room: ask.Room.RoomID, Node: true}); err != nil {
		t.Fatal(err)
	}
	if err := nt.Node(0).Agents().Unregister(ctx, "beta"); err != nil {
		t.Fatal(err)
	}
	if len(b.List(ctx)) != 0 {
		t.Fatalf("rooms left: %+v", b.List(ctx))
	}
	p, err := b.Peek(ctx, "beta")
	if err != nil || !slices.ContainsFunc(p.Items, func(it localapi.Item) bool { return it.Kind == "reply" && it.Text == "yes" }) {
		t.Fatalf("the inbox of an unregistered agent with a reply pending: %+v %v", p, err)
	}
}
