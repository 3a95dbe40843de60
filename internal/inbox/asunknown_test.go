package inbox_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/inbox"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A post as a name this node does not know (not human, not registered, no
// record in the room) is refused and posts nothing: before, a mistyped
// --as posted as a new agent and made it a member of the room for good.
// A registered agent with no record in the room is refused as not in it
// (not_member); human, invited agents and members whose registration
// lapsed post; a member that left is told it left.
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

	// A registered agent with no record in the room is refused, not_member
	// (before, its first post made it a member), and says who lets it in;
	// once invited it posts, as human does; a name with capitals is the
	// agent register made of it.
	if _, err := b.Say(ctx, "alpha", localapi.SayRequest{Room: room, Text: "let me in"}); !localapi.IsCode(err, localapi.CodeNotMember) ||
		!strings.Contains(err.Error(), "a member of the room or your user can let you in (`parley room invite "+room+" alpha`, run by them)") {
		t.Fatalf("say of a registered agent never let into the room: %v, want not_member naming who lets it in and their invite", err)
	}
	if _, err := b.Invite(ctx, "human", localapi.InviteRequest{Room: room, Member: "alpha"}); err != nil {
		t.Fatal(err)
	}
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

// A registered agent posts only in rooms it was let into: a say, an ask,
// an invite, a reply, a removal or a node's leave in an existing room it
// has no record in is refused (not_member, naming the invite that lets it
// in), posts nothing, and leaves it out of the room, which it still cannot
// read. Before, its first post made it a member, and it then read the
// room's history, which its read alone was refused. It opens rooms of its
// own (an open, an ask of an agent), and once invited it posts and reads.
func TestPostInARoomNotLetIntoRefused(t *testing.T) {
	nt, b, res := alphaOpensRoom(t, "review", "beta")
	ctx := context.Background()
	said, err := b.Say(ctx, "alpha", localapi.SayRequest{Room: res.RoomID, Text: "for beta alone"})
	if err != nil {
		t.Fatal(err)
	}
	before, err := b.Get(ctx, res.RoomID)
	if err != nil {
		t.Fatal(err)
	}
	refused := func(what string, err error) {
		t.Helper()
		if !localapi.IsCode(err, localapi.CodeNotMember) || !strings.Contains(err.Error(), `you (gamma) are not in room "review"`) ||
			!strings.Contains(err.Error(), "a member of the room or your user can let you in (`parley room invite "+res.RoomID+" gamma`, run by them)") {
			t.Errorf("%s as gamma, in a room nobody let it into: %v; want not_member naming who lets it in and their invite", what, err)
		}
	}
	for _, room := range []string{res.RoomID, "review"} {
		_, err = b.Say(ctx, "gamma", localapi.SayRequest{Room: room, Text: "let me in"})
		refused("say in "+room, err)
	}
	_, err = b.Ask(ctx, "gamma", localapi.AskRequest{Room: res.RoomID, Text: "anyone?"})
	refused("ask of the room", err)
	_, err = b.Ask(ctx, "gamma", localapi.AskRequest{Room: res.RoomID, To: "alpha", Text: "you?"})
	refused("ask of alpha in the room", err)
	_, err = b.Invite(ctx, "gamma", localapi.InviteRequest{Room: res.RoomID, Member: "gamma"})
	refused("invite of itself", err)
	_, err = b.Leave(ctx, "gamma", localapi.LeaveRequest{Room: res.RoomID, Node: true})
	refused("leave --node", err)
	_, err = b.Remove(ctx, res.RoomID, localapi.RemoveRequest{PeerID: "beta@" + nt.ID(0).String(), Agent: "gamma"})
	refused("remove", err)
	if _, err := b.Reply(ctx, "gamma", localapi.ReplyRequest{MessageID: said.ID, Text: "saw it"}); !localapi.IsCode(err, localapi.CodeUnknownEvent) {
		t.Errorf("reply as gamma to an event of a room it is not in: %v, want unknown_event", err)
	}
	after, err := b.Get(ctx, res.RoomID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Events != before.Events || slices.ContainsFunc(after.Agents, func(a string) bool { return strings.HasPrefix(a, "gamma@") }) {
		t.Fatalf("refused posts changed the room: %d → %d events, agents %v", before.Events, after.Events, after.Agents)
	}
	if got, err := b.Read(ctx, "gamma", localapi.ReadRequest{Room: res.RoomID, Last: 5}); !localapi.IsCode(err, localapi.CodeNotMember) {
		t.Fatalf("gamma reads the room: %q %v; want not_member", texts(got.Messages), err)
	}

	// Rooms of its own: one it opens, one an ask of an agent opens.
	own, err := b.OpenRoom(ctx, "gamma", localapi.OpenRoomRequest{Name: "gamma's"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Say(ctx, "gamma", localapi.SayRequest{Room: own.RoomID, Text: "mine"}); err != nil {
		t.Fatalf("say in its own room: %v", err)
	}
	pair, err := b.Ask(ctx, "gamma", localapi.AskRequest{To: "alpha", Text: "a word?"})
	if err != nil {
		t.Fatalf("ask of alpha, which opens a room of the two: %v", err)
	}
	if _, err := b.Say(ctx, "alpha", localapi.SayRequest{Room: pair.Room.RoomID, Text: "yes", ReplyTo: pair.AskID}); err != nil {
		t.Fatalf("alpha, brought in by the ask, answers: %v", err)
	}

	// Invited by a member, it posts and reads.
	if _, err := b.Invite(ctx, "beta", localapi.InviteRequest{Room: res.RoomID, Member: "gamma"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Say(ctx, "gamma", localapi.SayRequest{Room: res.RoomID, Text: "thanks"}); err != nil {
		t.Fatalf("say once invited: %v", err)
	}
	if _, err := b.Reply(ctx, "gamma", localapi.ReplyRequest{MessageID: said.ID[:8], Text: "saw it"}); err != nil {
		t.Fatalf("reply once invited: %v", err)
	}
	if _, err := b.Read(ctx, "gamma", localapi.ReadRequest{Room: res.RoomID, Last: 5}); err != nil {
		t.Fatalf("read once invited: %v", err)
	}
}

// An agent that left a room (or was removed from it) is told so (left),
// in the words its post there gets, whatever it tries: it takes no node
// out of the room (leave --node), which would put the room's other agents
// out, and removes no member. Before, both calls took a left record for
// membership and went through. The node's user (human) takes its node
// out of a room it left while its agents stay in.
func TestAgentThatLeftNeitherTakesTheNodeOutNorRemoves(t *testing.T) {
	nt, b, res := alphaOpensRoom(t, "review", "beta", "gamma", "human")
	ctx := context.Background()
	if _, err := b.Leave(ctx, "alpha", localapi.LeaveRequest{Room: res.RoomID}); err != nil {
		t.Fatal(err)
	}
	_, said := b.Say(ctx, "alpha", localapi.SayRequest{Room: res.RoomID, Text: "back?"})
	if !localapi.IsCode(said, localapi.CodeLeft) {
		t.Fatalf("say of alpha that left: %v, want left", said)
	}
	_, err := b.Remove(ctx, res.RoomID, localapi.RemoveRequest{PeerID: "gamma@" + nt.ID(0).String(), Agent: "alpha"})
	if !localapi.IsCode(err, localapi.CodeLeft) || err.Error() != said.Error() {
		t.Errorf("alpha, which left the room, removes gamma from it: err %v; want left, as its say: %v", err, said)
	}
	_, err = b.Leave(ctx, "alpha", localapi.LeaveRequest{Room: res.RoomID, Node: true})
	if !localapi.IsCode(err, localapi.CodeLeft) || err.Error() != said.Error() {
		t.Errorf("alpha, which left the room, takes the node out of it (and beta with it): err %v; want left, as its say: %v", err, said)
	}
	if _, err := b.Say(ctx, "beta", localapi.SayRequest{Room: res.RoomID, Text: "still here"}); err != nil {
		t.Errorf("beta, in the room, after alpha's calls: %v", err)
	}
	// The node's user left too, beta and gamma stay: it still takes the
	// node out.
	if _, err := b.Leave(ctx, "human", localapi.LeaveRequest{Room: res.RoomID}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Leave(ctx, "human", localapi.LeaveRequest{Room: res.RoomID, Node: true}); err != nil || !got.NodeLeft {
		t.Fatalf("the node's user, which left, takes the node out: %+v %v", got, err)
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

// alphaOpensRoom starts a node with agents alpha, beta and gamma, and has
// alpha open a room named name with the members given.
func alphaOpensRoom(t *testing.T, name string, members ...string) (*nodetest.Net, *inbox.Inbox, localapi.OpenRoomResult) {
	t.Helper()
	nt := start(t, 1)
	b := ib(nt, 0)
	for _, a := range []string{"alpha", "beta", "gamma"} {
		register(t, nt, 0, a)
	}
	res, err := b.OpenRoom(context.Background(), "alpha", localapi.OpenRoomRequest{Name: name, Members: members})
	if err != nil || len(res.Failed) != 0 {
		t.Fatalf("open: %+v %v", res, err)
	}
	return nt, b, res
}
