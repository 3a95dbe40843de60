package inbox_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A read by event ID gives that one event whole, read or not, to an agent
// in its room, by its whole ID or its first 8 characters, and marks
// nothing read; to an agent of the node not in the room it is an unknown
// event, as an unknown ID is.
func TestReadOneEventByID(t *testing.T) {
	nt, res := reviewRoom(t)
	ctx := context.Background()
	text := strings.Repeat("a long diff line\n", 600)
	said, err := ib(nt, 0).Say(ctx, "alpha", localapi.SayRequest{Room: res.RoomID, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	var got localapi.ReadResult
	nt.WaitFor(30*time.Second, func() bool {
		got, err = ib(nt, 1).Read(ctx, "beta", localapi.ReadRequest{ID: said.ID})
		return err == nil
	}, "beta to read the message by its ID")
	if len(got.Messages) != 1 || got.Messages[0].ID != said.ID || got.Messages[0].Text != text || got.Messages[0].Room != res.RoomID {
		t.Fatalf("read by ID: %+v", got.Messages)
	}
	if short, err := ib(nt, 1).Read(ctx, "beta", localapi.ReadRequest{ID: said.ID[:8]}); err != nil || len(short.Messages) != 1 || short.Messages[0].Text != text {
		t.Fatalf("read by 8 characters: %+v %v", short.Messages, err)
	}
	// Still unread.
	unread, err := ib(nt, 1).Read(ctx, "beta", localapi.ReadRequest{Room: res.RoomID})
	found := false
	for _, m := range unread.Messages {
		found = found || m.ID == said.ID
	}
	if err != nil || !found {
		t.Fatalf("the message read by ID is no longer unread: %+v %v", unread.Messages, err)
	}
	var le *localapi.Error
	if other, err := ib(nt, 1).Read(ctx, "gamma", localapi.ReadRequest{ID: said.ID}); !errors.As(err, &le) || le.Code != localapi.CodeUnknownEvent || len(other.Messages) != 0 {
		t.Fatalf("gamma, not in the room: %+v %v", other.Messages, err)
	}
	if _, err := ib(nt, 1).Read(ctx, "beta", localapi.ReadRequest{ID: strings.Repeat("a", 8)}); !errors.As(err, &le) || le.Code != localapi.CodeUnknownEvent {
		t.Fatalf("an unknown ID: %v", err)
	}
	if _, err := ib(nt, 1).Read(ctx, "beta", localapi.ReadRequest{ID: said.ID, Last: 3}); !errors.As(err, &le) || le.Code != localapi.CodeBadRequest {
		t.Fatalf("an ID with last: %v", err)
	}
}

// A read of a room, by its ID or its name, unread events or the last ones,
// is an agent's of its own rooms: another agent of the node, not in the
// room, is refused (not_member), the room's texts not given (a read by
// event ID finds nothing of it: unknown_event). A name two rooms share means the one the agent is
// in, and is read.
func TestReadRoomRefusesAnAgentNotInIt(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "beta")
	register(t, nt, 0, "gamma")
	res, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "review", Members: []string{"beta"}})
	if err != nil || len(res.Failed) != 0 {
		t.Fatalf("open: %+v %v", res, err)
	}
	if _, err := ib(nt, 0).Say(ctx, "alpha", localapi.SayRequest{Room: res.RoomID, Text: "for beta alone"}); err != nil {
		t.Fatal(err)
	}
	var le *localapi.Error
	for _, req := range []localapi.ReadRequest{{Room: res.RoomID}, {Room: "review"}, {Room: res.RoomID, Last: 5}, {Room: "review", Last: 5}} {
		got, err := ib(nt, 0).Read(ctx, "gamma", req)
		if !errors.As(err, &le) || le.Code != localapi.CodeNotMember || len(got.Messages) != 0 {
			t.Fatalf("gamma, not in the room, reads %+v: %q %v; want not_member", req, texts(got.Messages), err)
		}
	}
	// The node's user (human), in no agent's room, reads every room of the
	// node, as it reads one event by ID.
	got, err := ib(nt, 0).Read(ctx, "human", localapi.ReadRequest{Room: res.RoomID, Last: 5})
	if err != nil || !slices.ContainsFunc(got.Messages, func(it localapi.Item) bool { return it.Text == "for beta alone" }) {
		t.Fatalf("human reads the room by ID: %q %v", texts(got.Messages), err)
	}
	got, err = ib(nt, 0).Read(ctx, "beta", localapi.ReadRequest{Room: "review"})
	if err != nil || !slices.ContainsFunc(got.Messages, func(it localapi.Item) bool { return it.Text == "for beta alone" }) {
		t.Fatalf("beta, in the room, reads it by name: %q %v", texts(got.Messages), err)
	}

	// gamma's own room of that name: its read by name means it.
	own, err := ib(nt, 0).OpenRoom(ctx, "gamma", localapi.OpenRoomRequest{Name: "review", Members: []string{"alpha"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ib(nt, 0).Say(ctx, "alpha", localapi.SayRequest{Room: own.RoomID, Text: "for gamma"}); err != nil {
		t.Fatal(err)
	}
	got, err = ib(nt, 0).Read(ctx, "gamma", localapi.ReadRequest{Room: "review"})
	if err != nil || !slices.ContainsFunc(got.Messages, func(it localapi.Item) bool { return it.Text == "for gamma" }) ||
		slices.ContainsFunc(got.Messages, func(it localapi.Item) bool { return it.Text == "for beta alone" }) {
		t.Fatalf("gamma reads its own room of the shared name: %q %v", texts(got.Messages), err)
	}
	got, err = ib(nt, 0).Read(ctx, "beta", localapi.ReadRequest{Room: "review", Last: 5})
	if err != nil || !slices.ContainsFunc(got.Messages, func(it localapi.Item) bool { return it.Text == "for beta alone" }) {
		t.Fatalf("beta reads its room of the shared name: %q %v", texts(got.Messages), err)
	}
	if got, err := ib(nt, 0).Read(ctx, "gamma", localapi.ReadRequest{Room: res.RoomID}); !errors.As(err, &le) || le.Code != localapi.CodeNotMember || len(got.Messages) != 0 {
		t.Fatalf("gamma reads the other room of its name by ID: %q %v; want not_member", texts(got.Messages), err)
	}
	// An agent that left the room is told so, not read to.
	if _, err := ib(nt, 0).Leave(ctx, "beta", localapi.LeaveRequest{Room: res.RoomID}); err != nil {
		t.Fatal(err)
	}
	if got, err := ib(nt, 0).Read(ctx, "beta", localapi.ReadRequest{Room: res.RoomID, Last: 5}); !errors.As(err, &le) || le.Code != localapi.CodeLeft || len(got.Messages) != 0 {
		t.Fatalf("beta, having left, reads the room: %q %v; want left", texts(got.Messages), err)
	}
}

// The agent human is the node's user: a read by event ID gives it an event
// of any room the node holds, one its agents opened or were invited into
// by name included (as `parley room log` shows the user every room), while
// to an agent of the node not in the room it is still an unknown event.
func TestHumanReadsOneEventOfAnyRoom(t *testing.T) {
	nt, res := reviewRoom(t)
	ctx := context.Background()
	said, err := ib(nt, 0).Say(ctx, "alpha", localapi.SayRequest{Room: res.RoomID, Text: "for beta"})
	if err != nil {
		t.Fatal(err)
	}
	// Node 0's human is not in alpha's room, nor node 1's in the room its
	// node joined for beta.
	for i := range 2 {
		var got localapi.ReadResult
		nt.WaitFor(30*time.Second, func() bool {
			got, err = ib(nt, i).Read(ctx, "human", localapi.ReadRequest{ID: said.ID[:8]})
			return err == nil
		}, "human of node %d to read the message by its ID", i)
		if len(got.Messages) != 1 || got.Messages[0].ID != said.ID || got.Messages[0].Text != "for beta" || got.Messages[0].RoomName != "review" {
			t.Fatalf("human of node %d: %+v", i, got.Messages)
		}
	}
	var le *localapi.Error
	if _, err := ib(nt, 1).Read(ctx, "gamma", localapi.ReadRequest{ID: said.ID}); !errors.As(err, &le) || le.Code != localapi.CodeUnknownEvent {
		t.Fatalf("gamma, not in the room: %v", err)
	}
	if _, err := ib(nt, 1).Read(ctx, "human", localapi.ReadRequest{ID: strings.Repeat("a", 52)}); !errors.As(err, &le) || le.Code != localapi.CodeUnknownEvent {
		t.Fatalf("human, an unknown ID: %v", err)
	}
}

// An event of a room the agent is not in is to it as one that does not
// exist: its first 8 characters give neither its whole ID nor an answer
// other than an unknown ID's (before, the refusal named the whole ID, so
// an agent could probe rooms it is not in); a reply to it finds nothing
// either. human still reads it by those 8 characters.
func TestReadOneOfAnotherRoomGivesNothingAway(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	b := ib(nt, 0)
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "gamma")
	res, err := b.OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "private"})
	if err != nil {
		t.Fatal(err)
	}
	said, err := b.Say(ctx, "alpha", localapi.SayRequest{Room: res.RoomID, Text: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Read(ctx, "gamma", localapi.ReadRequest{ID: said.ID[:8]})
	if err == nil {
		t.Fatal("gamma read an event of a room it is not in")
	}
	if strings.Contains(err.Error(), said.ID) {
		t.Errorf("gamma gave 8 characters and learned the whole ID of an event of a room it is not in: %v", err)
	}
	_, errNone := b.Read(ctx, "gamma", localapi.ReadRequest{ID: strings.Repeat("a", 8)})
	if !localapi.IsCode(err, localapi.CodeUnknownEvent) || !localapi.IsCode(errNone, localapi.CodeUnknownEvent) ||
		strings.Replace(err.Error(), said.ID[:8], "aaaaaaaa", 1) != errNone.Error() {
		t.Errorf("the answers tell an event of another room (%v) from none (%v)", err, errNone)
	}
	if _, err := b.Reply(ctx, "gamma", localapi.ReplyRequest{MessageID: said.ID[:8], Text: "found you"}); !localapi.IsCode(err, localapi.CodeUnknownEvent) ||
		strings.Contains(err.Error(), said.ID) {
		t.Errorf("gamma's reply to an event of a room it is not in: %v, want unknown_event without its ID", err)
	}
	got, err := b.Read(ctx, "human", localapi.ReadRequest{ID: said.ID[:8]})
	if err != nil || len(got.Messages) != 1 || got.Messages[0].ID != said.ID {
		t.Fatalf("human reads the event by 8 characters: %+v %v", got.Messages, err)
	}
}

// parley_wait (WaitReply) looks the ask up in the agent's rooms, as a
// read does: an ask of a room it was never let into, by its first 8
// characters or whole, is answered as a read of it is (no event in the
// rooms it was let into), not "not an ask of yours", which told it the
// event exists. Before, the wait looked in every room of the node. An
// agent of the room still hears the ask is not its own; its asker waits.
func TestWaitReplyOfAnotherRoomGivesNothingAway(t *testing.T) {
	_, b, res := alphaOpensRoom(t, "secret", "beta")
	ctx := context.Background()
	ask, err := b.Ask(ctx, "alpha", localapi.AskRequest{Room: res.RoomID, Text: "the plan?"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{ask.AskID[:8], ask.AskID} {
		_, rerr := b.Read(ctx, "gamma", localapi.ReadRequest{ID: id})
		if !localapi.IsCode(rerr, localapi.CodeUnknownEvent) || !strings.Contains(rerr.Error(), "were let into") {
			t.Fatalf("gamma's read of the ask by %s: %v", id, rerr)
		}
		_, err := b.WaitReply(ctx, "gamma", id, 0, false)
		if !localapi.IsCode(err, localapi.CodeUnknownEvent) || err.Error() != rerr.Error() {
			t.Errorf("gamma's parley_wait on %s, an ask of a room it was never let into: %v; want what a read of it says: %v", id, err, rerr)
		}
	}
	if _, err := b.WaitReply(ctx, "beta", ask.AskID[:8], 0, false); !localapi.IsCode(err, localapi.CodeUnknownEvent) || !strings.Contains(err.Error(), "not an ask of yours") {
		t.Errorf("beta's parley_wait on alpha's ask of their room: %v; want not an ask of yours", err)
	}
	if got, err := b.WaitReply(ctx, "alpha", ask.AskID[:8], 0, false); err != nil || got.AskID != ask.AskID {
		t.Errorf("alpha's parley_wait on its own ask: %+v %v", got, err)
	}
}

// reviewRoom starts two nodes, alpha on the first, beta and gamma on the
// second, and the room "review" alpha opened with beta (gamma not in it).
func reviewRoom(t *testing.T) (*nodetest.Net, localapi.OpenRoomResult) {
	t.Helper()
	nt := start(t, 2)
	register(t, nt, 0, "alpha")
	beta := register(t, nt, 1, "beta")
	register(t, nt, 1, "gamma")
	res, err := ib(nt, 0).OpenRoom(context.Background(), "alpha", localapi.OpenRoomRequest{Name: "review", Members: []string{beta}})
	if err != nil || len(res.Failed) != 0 {
		t.Fatalf("open: %+v %v", res, err)
	}
	return nt, res
}
