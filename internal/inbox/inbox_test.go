package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/inbox"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// start runs n nodes that invite any connected node, with anti-entropy
// every second, and registers agent name on node i (checkKnown wants it).
func start(t testing.TB, n int, opts ...func(*node.Config)) *nodetest.Net {
	t.Helper()
	nt := nodetest.Start(t, n, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Second
		for _, o := range opts {
			o(c)
		}
	}))
	for i := 1; i < n; i++ {
		nt.WaitFor(20*time.Second, func() bool {
			return nt.Node(0).Host().Network().Connectedness(nt.ID(i)) == network.Connected
		}, "node 0 to be connected to node %d", i)
	}
	return nt
}

func register(t testing.TB, nt *nodetest.Net, i int, name string) string {
	t.Helper()
	if _, err := nt.Node(i).Agents().Session(context.Background(), sessionReq(name)); err != nil {
		t.Fatal(err)
	}
	return name + "@" + nt.ID(i).String()
}

func sessionReq(name string) agents.SessionRequest {
	return agents.SessionRequest{Session: "test-" + name, Name: name, TTLSeconds: 3600}
}

func ib(nt *nodetest.Net, i int) *inbox.Inbox { return nt.Node(i).Inbox() }

func kinds(p localapi.Pending) []string {
	var out []string
	for _, it := range p.Items {
		out = append(out, it.Kind)
	}
	return out
}

// waitItems takes agent's items until cond holds on one take.
func waitItems(t *testing.T, nt *nodetest.Net, i int, agent string, what string, cond func(localapi.Pending) bool) localapi.Pending {
	t.Helper()
	var p localapi.Pending
	nt.WaitFor(30*time.Second, func() bool {
		var err error
		p, err = ib(nt, i).Take(context.Background(), agent)
		if err != nil {
			t.Fatal(err)
		}
		return cond(p)
	}, "%s", what)
	return p
}

func TestInvitationAsksAndMessagesOnce(t *testing.T) {
	nt := start(t, 2)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	beta := register(t, nt, 1, "beta")
	res, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "release", Purpose: "ship 1.0", Members: []string{beta}})
	if err != nil || len(res.Failed) != 0 || !slices.Equal(res.Invited, []string{beta}) {
		t.Fatalf("open: %+v %v", res, err)
	}
	room := res.RoomID

	// The invitation, once, with the room's purpose and members.
	p := waitItems(t, nt, 1, "beta", "the invitation", func(p localapi.Pending) bool { return len(p.Items) > 0 })
	if len(p.Items) != 1 || p.Items[0].Kind != "invitation" || p.Items[0].Purpose != "ship 1.0" || p.Items[0].RoomName != "release" ||
		!slices.Contains(p.Items[0].Members, "alpha@"+nt.ID(0).String()) || p.Items[0].From != "alpha@"+nt.ID(0).String() {
		t.Fatalf("first items = %+v", p.Items)
	}
	// The room is in beta's read of all its rooms.
	r, err := ib(nt, 1).Read(ctx, "beta", localapi.ReadRequest{})
	if err != nil || len(r.Messages) == 0 {
		t.Fatalf("read of all rooms: %+v %v", r, err)
	}

	// An ask to beta comes first, in full once, then as a reminder on every
	// later take, until beta replies; the asker's wait returns the reply.
	if _, err := ib(nt, 0).Say(ctx, "alpha", localapi.SayRequest{Room: room, Text: "general chatter"}); err != nil {
		t.Fatal(err)
	}
	ask, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{Room: room, To: beta, Text: "can you review?"})
	if err != nil || ask.Reply != nil {
		t.Fatalf("ask: %+v %v", ask, err)
	}
	p = waitItems(t, nt, 1, "beta", "the ask", func(p localapi.Pending) bool { return slices.Contains(kinds(p), "ask") })
	if p.Items[0].Kind != "ask" || p.Items[0].ID != ask.AskID || p.Items[0].Text != "can you review?" {
		t.Fatalf("items with the ask = %+v", p.Items)
	}
	for range 3 {
		again, err := ib(nt, 1).Take(ctx, "beta")
		if err != nil || len(again.Items) != 1 || again.Items[0].Kind != "reminder" || again.Items[0].ID != ask.AskID {
			t.Fatalf("a later take: %+v %v", again.Items, err)
		}
	}
	owed, err := ib(nt, 1).Owed(ctx, "beta")
	if err != nil || len(owed) != 1 || owed[0].ID != ask.AskID {
		t.Fatalf("owed: %+v %v", owed, err)
	}
	if _, err := ib(nt, 1).Reply(ctx, "beta", localapi.ReplyRequest{MessageID: ask.AskID, Text: "LGTM"}); err != nil {
		t.Fatal(err)
	}
	if again, _ := ib(nt, 1).Take(ctx, "beta"); len(again.Items) != 0 {
		t.Fatalf("reminded after the reply: %+v", again.Items)
	}
	w, err := ib(nt, 0).WaitReply(ctx, "alpha", ask.AskID, 20*time.Second, false)
	if err != nil || w.Reply == nil || w.Reply.Text != "LGTM" {
		t.Fatalf("wait reply: %+v %v", w, err)
	}

	// Messages: listed at most 10 a take, the rest counted, none twice;
	// what a take listed Read does not show again; own words never unread.
	for k := range 15 {
		if _, err := ib(nt, 0).Say(ctx, "alpha", localapi.SayRequest{Room: room, Text: fmt.Sprintf("m%d", k)}); err != nil {
			t.Fatal(err)
		}
	}
	nt.WaitFor(30*time.Second, func() bool {
		p, err := ib(nt, 1).Peek(ctx, "beta")
		return err == nil && len(p.MoreUnread) == 1 && p.MoreUnread[0].Count == 5
	}, "15 unread: 10 listed, 5 counted")
	p, err = ib(nt, 1).Take(ctx, "beta")
	if err != nil || len(p.Items) != 10 || p.Items[0].Text != "m0" || p.Items[9].Text != "m9" || p.MoreUnread[0].Count != 5 {
		t.Fatalf("take of 15 unread: %+v %v", p, err)
	}
	r, err = ib(nt, 1).Read(ctx, "beta", localapi.ReadRequest{Room: "release"})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range r.Messages {
		texts = append(texts, m.Text)
	}
	if !slices.Equal(texts, []string{"m10", "m11", "m12", "m13", "m14"}) {
		t.Fatalf("read after the take: %v", texts)
	}
	if p, _ := ib(nt, 1).Take(ctx, "beta"); !p.Empty() {
		t.Fatalf("left after reading everything: %+v", p)
	}
	if p, _ := ib(nt, 0).Take(ctx, "alpha"); slices.Contains(kinds(p), "message") {
		t.Fatalf("alpha has unread messages (its own, or the reply it got): %+v", p.Items)
	}
}

// TestRoomWideAsk: every member agent but the asker owes it; the first reply
// answers it for all.
func TestRoomWideAsk(t *testing.T) {
	nt := start(t, 3)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	beta, gamma := register(t, nt, 1, "beta"), register(t, nt, 2, "gamma")
	res, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "all", Members: []string{beta, gamma}})
	if err != nil || len(res.Failed) != 0 {
		t.Fatalf("open: %+v %v", res, err)
	}
	for _, i := range []int{1, 2} {
		nt.WaitFor(30*time.Second, func() bool {
			in, err := ib(nt, i).Get(ctx, res.RoomID)
			return err == nil && len(in.Agents) == 3
		}, "node %d to see three agents", i)
	}
	done := make(chan localapi.AskResult, 1)
	go func() {
		a, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{Room: res.RoomID, Text: "who takes the release notes?", WaitSeconds: 40})
		if err != nil {
			t.Error(err)
		}
		done <- a
	}()
	var askID string
	for _, n := range []struct {
		i    int
		name string
	}{{1, "beta"}, {2, "gamma"}} {
		p := waitItems(t, nt, n.i, n.name, n.name+" to owe the ask", func(p localapi.Pending) bool { return slices.Contains(kinds(p), "ask") })
		askID = p.Items[0].ID
	}
	if _, err := ib(nt, 2).Reply(ctx, "gamma", localapi.ReplyRequest{MessageID: askID, Text: "me"}); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.Reply == nil || a.Reply.Text != "me" || a.Reply.From != gamma {
		t.Fatalf("asker got %+v", a)
	}
	waitItems(t, nt, 1, "beta", "beta to stop owing it", func(p localapi.Pending) bool { return !slices.Contains(kinds(p), "reminder") })
	if owed, _ := ib(nt, 1).Owed(ctx, "beta"); len(owed) != 0 {
		t.Fatalf("beta still owes %+v", owed)
	}
}

func TestAsksExpireAndAreDismissed(t *testing.T) {
	nt := start(t, 1, func(c *node.Config) { c.AskTTL = 2 * time.Second })
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	beta := register(t, nt, 0, "beta")
	res, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "local", Members: []string{"beta"}})
	if err != nil || !slices.Equal(res.Invited, []string{beta}) {
		t.Fatalf("open with a local agent: %+v %v", res, err)
	}
	a1, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{To: "beta", Room: "local", Text: "one"})
	if err != nil {
		t.Fatal(err)
	}
	a2, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{To: "beta", Room: "local", Text: "two"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ib(nt, 0).Dismiss(ctx, "beta", localapi.DismissRequest{AskID: "nope"}); !localapi.IsCode(err, localapi.CodeUnknownEvent) {
		t.Fatalf("dismiss of an unknown ask: %v", err)
	}
	if _, err := ib(nt, 0).Dismiss(ctx, "beta", localapi.DismissRequest{AskID: a1.AskID}); err != nil {
		t.Fatal(err)
	}
	owed, err := ib(nt, 0).Owed(ctx, "beta")
	if err != nil || len(owed) != 1 || owed[0].ID != a2.AskID {
		t.Fatalf("owed after a dismissal of %s: %+v %v (want %s)", a1.AskID, owed, err, a2.AskID)
	}
	nt.WaitFor(10*time.Second, func() bool { o, _ := ib(nt, 0).Owed(ctx, "beta"); return len(o) == 0 }, "the ask to expire")
}

// TestLeave: an agent that left cannot speak; the node leaves with its
// last agent.
func TestLeave(t *testing.T) {
	nt := start(t, 2)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	beta := register(t, nt, 1, "beta")
	res, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "design", Members: []string{beta}})
	if err != nil {
		t.Fatal(err)
	}
	room := res.RoomID
	nt.WaitFor(30*time.Second, func() bool {
		in, err := ib(nt, 1).Get(ctx, room)
		return err == nil && slices.Contains(in.Agents, beta)
	}, "beta to be in the room on its node")
	l, err := ib(nt, 1).Leave(ctx, "beta", localapi.LeaveRequest{Room: room})
	if err != nil || !l.NodeLeft {
		t.Fatalf("leave of the last agent: %+v %v", l, err)
	}
	nt.WaitFor(20*time.Second, func() bool { _, err := ib(nt, 1).Get(ctx, room); return localapi.IsCode(err, localapi.CodeLeft) }, "node 1 to drop the room")
	if _, err := ib(nt, 1).Say(ctx, "beta", localapi.SayRequest{Room: room, Text: "still here?"}); !localapi.IsCode(err, localapi.CodeLeft) ||
		!strings.Contains(err.Error(), "invite you back") {
		t.Fatalf("say after the node left: %v", err)
	}
	// By the room's name too.
	if _, err := ib(nt, 1).Say(ctx, "beta", localapi.SayRequest{Room: "design", Text: "still here?"}); !localapi.IsCode(err, localapi.CodeLeft) ||
		!strings.Contains(err.Error(), "out of room \"design\"") {
		t.Fatalf("say by name after the node left: %v", err)
	}
	// On the creator's node: alpha stays, human leaves, then cannot speak.
	if _, err := ib(nt, 0).Say(ctx, "human", localapi.SayRequest{Room: room, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if l, err := ib(nt, 0).Leave(ctx, "human", localapi.LeaveRequest{Room: room}); err != nil || l.NodeLeft {
		t.Fatalf("leave with alpha still in: %+v %v", l, err)
	}
	if _, err := ib(nt, 0).Say(ctx, "human", localapi.SayRequest{Room: room, Text: "again"}); !localapi.IsCode(err, localapi.CodeLeft) ||
		!strings.Contains(err.Error(), "invite you back") {
		t.Fatalf("say after leave: %v", err)
	}
	if _, err := ib(nt, 0).Leave(ctx, "human", localapi.LeaveRequest{Room: room}); err == nil {
		t.Fatal("left twice")
	}
	if _, err := ib(nt, 0).Invite(ctx, "alpha", localapi.InviteRequest{Room: room, Member: "human"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ib(nt, 0).Say(ctx, "human", localapi.SayRequest{Room: room, Text: "back"}); err != nil {
		t.Fatalf("say after a new invite: %v", err)
	}
}

// TestBadInput: each refusal says what to do, and nothing is posted.
func TestBadInput(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	res, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "r"})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := ib(nt, 0).Get(ctx, "r")
	for _, tc := range []struct {
		name string
		call func() error
		code string
		want string
	}{
		{"empty text", func() error {
			_, err := ib(nt, 0).Say(ctx, "alpha", localapi.SayRequest{Room: "r", Text: " \n\t"})
			return err
		}, localapi.CodeBadRequest, "text is empty"},
		{"no room", func() error {
			_, err := ib(nt, 0).Say(ctx, "alpha", localapi.SayRequest{Room: "", Text: "x"})
			return err
		}, localapi.CodeBadRequest, "room is empty"},
		{"unknown room", func() error {
			_, err := ib(nt, 0).Say(ctx, "alpha", localapi.SayRequest{Room: "nowhere", Text: "x"})
			return err
		}, localapi.CodeUnknownRoom, `no room named "nowhere"`},
		{"too long", func() error {
			_, err := ib(nt, 0).Say(ctx, "alpha", localapi.SayRequest{Room: "r", Text: strings.Repeat("x", rooms.MaxBody+1)})
			return err
		}, localapi.CodeTooLarge, "over the limit"},
		{"unknown local agent", func() error {
			_, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{Room: "r", To: "ghost", Text: "x"})
			return err
		}, localapi.CodeUnknownAgent, "parley_who"},
		{"bad address", func() error {
			_, err := ib(nt, 0).Invite(ctx, "alpha", localapi.InviteRequest{Room: "r", Member: "Not An Agent"})
			return err
		}, localapi.CodeBadRequest, "NAME@PEER_ID"},
		{"a peer ID cut short", func() error {
			_, err := ib(nt, 0).Invite(ctx, "alpha", localapi.InviteRequest{Room: "r", Member: "12D3KooWbogus"})
			return err
		}, localapi.CodeBadRequest, "looks like a peer ID"},
		{"unknown ask", func() error {
			_, err := ib(nt, 0).Reply(ctx, "alpha", localapi.ReplyRequest{MessageID: strings.Repeat("a", 52), Text: "x"})
			return err
		}, localapi.CodeUnknownEvent, "no event"},
		{"not an event id", func() error {
			_, err := ib(nt, 0).WaitReply(ctx, "alpha", "zzz", time.Millisecond, false)
			return err
		}, localapi.CodeBadRequest, "not an event ID"},
		{"remove a non-member", func() error {
			_, err := ib(nt, 0).Remove(ctx, "r", localapi.RemoveRequest{PeerID: nodetest.Start(t, 1).ID(0).String()})
			return err
		}, localapi.CodeNotMember, "not a member"},
		{"last out of range, with a room", func() error {
			_, err := ib(nt, 0).Read(ctx, "alpha", localapi.ReadRequest{Room: "r", Last: 100000})
			return err
		}, localapi.CodeBadRequest, fmt.Sprintf("last is 100000: it must be 1 to %d", inbox.MaxRead)},
		{"last below range, with a room", func() error {
			_, err := ib(nt, 0).Read(ctx, "alpha", localapi.ReadRequest{Room: "r", Last: -1})
			return err
		}, localapi.CodeBadRequest, fmt.Sprintf("last is -1: it must be 1 to %d", inbox.MaxRead)},
		{"last without a room", func() error {
			_, err := ib(nt, 0).Read(ctx, "alpha", localapi.ReadRequest{Last: 5})
			return err
		}, localapi.CodeBadRequest, "last needs a room"},
		{"limit out of range", func() error {
			_, err := ib(nt, 0).Read(ctx, "alpha", localapi.ReadRequest{Room: "r", Limit: 100000})
			return err
		}, localapi.CodeBadRequest, fmt.Sprintf("limit is 100000: it must be 1 to %d", inbox.MaxRead)},
		{"bad agent", func() error {
			_, err := ib(nt, 0).Take(ctx, "Bad Agent")
			return err
		}, localapi.CodeBadRequest, "agent name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !localapi.IsCode(err, tc.code) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want code %s and %q", err, tc.code, tc.want)
			}
		})
	}
	after, _ := ib(nt, 0).Get(ctx, res.RoomID)
	if after.Events != before.Events {
		t.Fatalf("refused calls changed the log: %d → %d events", before.Events, after.Events)
	}
}

// TestWaitForNews: a wake-up adapter peeks, then waits for what comes after
// its cursor, handing nothing out.
func TestWaitForNews(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "beta")
	if _, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "news", Members: []string{"beta"}}); err != nil {
		t.Fatal(err)
	}
	p, err := ib(nt, 0).Peek(ctx, "beta")
	if err != nil || len(p.Items) != 1 || p.Items[0].Kind != "invitation" || p.Cursor == "" {
		t.Fatalf("peek: %+v %v", p, err)
	}
	// Nothing after the cursor: the wait runs out, and still hands nothing out.
	w, err := ib(nt, 0).Wait(ctx, "beta", localapi.WaitRequest{Seconds: 0.2, After: p.Cursor})
	if err != nil || len(w.Items) != 1 || w.Cursor != p.Cursor {
		t.Fatalf("wait with nothing new: %+v %v", w, err)
	}
	done := make(chan localapi.Pending, 1)
	go func() {
		w, err := ib(nt, 0).Wait(ctx, "beta", localapi.WaitRequest{Seconds: 30, After: p.Cursor})
		if err != nil {
			t.Error(err)
		}
		done <- w
	}()
	if _, err := ib(nt, 0).Say(ctx, "alpha", localapi.SayRequest{Room: "news", Text: "fresh"}); err != nil {
		t.Fatal(err)
	}
	w = <-done
	if w.Cursor == p.Cursor || len(w.Items) != 2 || w.Items[1].Text != "fresh" {
		t.Fatalf("wait for news: %+v", w)
	}
	// A cursor of another run of the node counts as nothing seen.
	if w, err := ib(nt, 0).Wait(ctx, "beta", localapi.WaitRequest{Seconds: 5, After: "zzzz.3"}); err != nil || len(w.Items) != 2 {
		t.Fatalf("wait with a stale cursor: %+v %v", w, err)
	}
	// Nothing was handed out: a take still shows both.
	if p, _ := ib(nt, 0).Take(ctx, "beta"); len(p.Items) != 2 {
		t.Fatalf("take after the peeks: %+v", p.Items)
	}
}

// One agent cannot open a second room of a name it is in; another agent
// of the node may, and each then means its own room by the name; an agent
// in both, or in neither, is told the IDs to choose from.
func TestRoomNamesPerAgent(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "beta")
	register(t, nt, 0, "gamma")
	a, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "pair"})
	if err != nil {
		t.Fatal(err)
	}
	var le *localapi.Error
	if _, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "pair"}); !errors.As(err, &le) || le.Code != localapi.CodeAmbiguous || !strings.Contains(le.Message, a.RoomID) {
		t.Fatalf("a second room of a name alpha is in: %v", err)
	}
	b, err := ib(nt, 0).OpenRoom(ctx, "beta", localapi.OpenRoomRequest{Name: "pair"})
	if err != nil {
		t.Fatalf("beta's own room of that name: %v", err)
	}
	for agent, want := range map[string]string{"alpha": a.RoomID, "beta": b.RoomID} {
		p, err := ib(nt, 0).Say(ctx, agent, localapi.SayRequest{Room: "pair", Text: "hello from " + agent})
		if err != nil || p.Room.RoomID != want {
			t.Fatalf("%s says in \"pair\": room %s, %v; want %s", agent, p.Room.RoomID, err, want)
		}
	}
	_, err = ib(nt, 0).Say(ctx, "gamma", localapi.SayRequest{Room: "pair", Text: "which?"})
	if !errors.As(err, &le) || le.Code != localapi.CodeAmbiguous || !strings.Contains(le.Message, a.RoomID) || !strings.Contains(le.Message, b.RoomID) {
		t.Fatalf("an agent in neither room: %v", err)
	}
}

// An ask of an agent not in the room brings it in (an invite, then the
// ask): the agent is asked, not invited, so it gets one item, the ask,
// which says it was brought in and what the room is for; before, it got an
// invitation too (a human's inbox read "INVITATION" for an ask).
func TestAskThatBringsTheAgentInIsOneAsk(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "beta")
	if _, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "api", Purpose: "design the v2 api"}); err != nil {
		t.Fatal(err)
	}
	for _, agent := range []string{"beta", "human"} {
		ask, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{Room: "api", To: agent, Text: "which version, " + agent + "?"})
		if err != nil {
			t.Fatal(err)
		}
		p, err := ib(nt, 0).Take(ctx, agent)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) != 1 || p.Items[0].Kind != "ask" || p.Items[0].ID != ask.AskID || !p.Items[0].Brought ||
			p.Items[0].Purpose != "design the v2 api" || p.Items[0].RoomName != "api" {
			t.Fatalf("%s's items after an ask that brought it in: %+v", agent, p.Items)
		}
	}
	// An invitation that no ask follows is one.
	if _, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "ops", Members: []string{"beta"}}); err != nil {
		t.Fatal(err)
	}
	if p, _ := ib(nt, 0).Take(ctx, "beta"); !slices.Contains(kinds(p), "invitation") {
		t.Fatalf("beta's items after an invite alone: %+v", p.Items)
	}
}

// The dashboard's "Invitations for you" panel (Inbox.Invitations) lists
// the human's invitations until each is taken by itself (TakeInvitation:
// the user's `parley room log ROOM`, as the row says, the panel's
// "dismiss", or opening the room), once; an invitation to another room
// stays. Before, only `parley inbox --take` or a leave took one, and the
// rows piled up on every page load. (A read of the room's log is the
// node's, whoever asks: it takes nothing, see
// TestAgentsRoomLogLeavesTheUsersInvitation.)
func TestTakeInvitationTakesOneRoomsInvitation(t *testing.T) {
	nt := start(t, 2)
	ctx := context.Background()
	var ids []string
	for _, name := range []string{"five-minute", "later"} {
		res, err := ib(nt, 0).OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ib(nt, 0).Invite(ctx, "human", localapi.InviteRequest{Room: res.RoomID, Member: nt.ID(1).String()}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.RoomID)
	}
	listed := func(room string) bool {
		its, err := ib(nt, 1).Invitations(ctx, "human")
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(its, func(it localapi.Item) bool { return it.Room == room })
	}
	nt.WaitFor(30*time.Second, func() bool { return listed(ids[0]) && listed(ids[1]) }, "both invitations in node 1's panel")
	// A read of the room's log alone takes nothing.
	if _, err := ib(nt, 1).Log(ctx, ids[0], 50, ""); err != nil {
		t.Fatal(err)
	}
	if !listed(ids[0]) {
		t.Fatalf("the invitation to %s went with a read of the room's log, which may be an agent's", ids[0])
	}
	// What the user's `parley room log ROOM` does after the read.
	if got, err := ib(nt, 1).TakeInvitation(ctx, "human", localapi.InvitationRequest{Room: ids[0]}); err != nil || got.Taken != 1 {
		t.Fatalf("take of the invitation to %s: %+v %v", ids[0], got, err)
	}
	if listed(ids[0]) {
		t.Errorf("the invitation to %s is still in the dashboard's panel once taken", ids[0])
	}
	if !listed(ids[1]) {
		t.Fatalf("the invitation to %s went with the read of another room", ids[1])
	}
	for i, want := range []int{1, 0} {
		got, err := ib(nt, 1).TakeInvitation(ctx, "human", localapi.InvitationRequest{Room: "later"})
		if err != nil || got.Taken != want {
			t.Fatalf("take %d of the invitation to %q: %+v %v, want %d taken", i+1, "later", got, err, want)
		}
	}
	if listed(ids[1]) {
		t.Errorf("the invitation to %s is still listed once taken", ids[1])
	}
	if p, err := ib(nt, 1).Take(ctx, "human"); err != nil || slices.Contains(kinds(p), "invitation") {
		t.Errorf("human's inbox after its invitations were taken: %v %v", kinds(p), err)
	}
}
