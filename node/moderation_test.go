package node_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// befriendAPI makes node i ask node j for contact, which j approves.
func befriendAPI(t *testing.T, nt *nodetest.Net, cs []*localapi.Client, i, j int) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs[i].ContactRequest(ctx, nt.ID(j).String(), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[j].ContactApprove(ctx, pendingID(t, nt, cs[j], nt.ID(i).String()), ""); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		es, err := cs[i].Contacts(ctx)
		return err == nil && len(es) > 0 && es[0].State == "active"
	}, "node %d to see the contact active", i)
}

// texts reads what agent has not read and returns the texts.
func texts(t *testing.T, c *localapi.Client, agent string) []string {
	t.Helper()
	r, err := c.Read(context.Background(), agent, localapi.ReadRequest{Take: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range r.Messages {
		out = append(out, m.Text)
	}
	for _, p := range r.Pending.Items {
		out = append(out, p.Text)
	}
	return out
}

func logHas(c *localapi.Client, room, text string) bool {
	es, err := c.Log(context.Background(), room, 100, "")
	if err != nil {
		return false
	}
	for _, e := range es {
		if e.Text == text {
			return true
		}
	}
	return false
}

// A user mutes another node's agent: its events are stored but not shown
// to the user's agents; mutes and kills of the user's own agents refuse
// their posts with an error that says why; a kill ends the agent's
// registration and session, and the name stays refused until revived; the
// per-agent post limit refuses the post over it and counts it.
func TestModeration(t *testing.T) {
	// Anti-entropy every 2 s: this test is about moderation, and an event
	// that gossip missed (rooms' tests cover that) must not time it out.
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.AgentPostLimit = 6
		c.SyncInterval = 2 * time.Second
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := make([]*localapi.Client, 2)
	for i := range cs {
		cs[i] = localapi.NewClient(node.SocketPath(nt.Home(i)))
		defer cs[i].Close()
	}
	nt.ConnectAll()
	befriendAPI(t, nt, cs, 1, 0)
	b := nt.ID(1).String()
	if _, err := cs[0].Session(ctx, localapi.SessionRequest{Session: "s-alice", Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[1].Session(ctx, localapi.SessionRequest{Session: "s-bob", Name: "bob"}); err != nil {
		t.Fatal(err)
	}
	res, err := cs[0].OpenRoom(ctx, "alice", localapi.OpenRoomRequest{Name: "r", Members: []string{"bob@" + b}})
	if err != nil || len(res.Failed) > 0 {
		t.Fatalf("open: %+v %v", res, err)
	}
	room := res.RoomID
	nt.WaitFor(30*time.Second, func() bool {
		_, err := cs[1].Say(ctx, "bob", localapi.SayRequest{Room: room, Text: "hello 1"})
		return err == nil
	}, "bob to be able to post in the room")
	nt.WaitFor(30*time.Second, func() bool { return logHas(cs[0], room, "hello 1") }, "hello 1 on node 0")
	if got := texts(t, cs[0], "alice"); !strings.Contains(strings.Join(got, "|"), "hello 1") {
		t.Fatalf("alice does not see hello 1: %q", got)
	}

	// Muting bob hides what he says from alice; the log keeps it.
	if _, err := cs[0].Mute(ctx, localapi.ModerateRequest{Agent: "bob@" + b}); err != nil {
		t.Fatal(err)
	}
	hello2, err := cs[1].Say(ctx, "bob", localapi.SayRequest{Room: room, Text: "hello 2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs[1].Ask(ctx, "bob", localapi.AskRequest{Room: room, Text: "answer me"}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return logHas(cs[0], room, "answer me") }, "bob's ask on node 0")
	if got := texts(t, cs[0], "alice"); len(got) != 0 {
		t.Fatalf("alice is shown a muted agent's events: %q", got)
	}
	// Read by its ID, the muted agent's message is refused to alice as
	// one not found is, and shown to the user (human), as the log is.
	var le *localapi.Error
	if got, err := cs[0].Read(ctx, "alice", localapi.ReadRequest{ID: hello2.ID}); !errors.As(err, &le) || le.Code != localapi.CodeUnknownEvent || len(got.Messages) != 0 {
		t.Fatalf("alice reads a muted agent's message by its ID: %+v %v", got.Messages, err)
	}
	if got, err := cs[0].Read(ctx, "human", localapi.ReadRequest{ID: hello2.ID}); err != nil || len(got.Messages) != 1 || got.Messages[0].Text != "hello 2" {
		t.Fatalf("the user reads a muted agent's message by its ID: %+v %v", got.Messages, err)
	}
	if _, err := cs[0].Unmute(ctx, localapi.ModerateRequest{Agent: "bob@" + b}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[1].Say(ctx, "bob", localapi.SayRequest{Room: room, Text: "hello 3"}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return logHas(cs[0], room, "hello 3") }, "hello 3 on node 0")
	if got := texts(t, cs[0], "alice"); strings.Join(got, "|") != "hello 3" {
		t.Fatalf("alice after the unmute: %q", got)
	}

	// NAME@HANDLE, as names show an agent, works as NAME@PEER_ID does.
	nt.WaitFor(30*time.Second, func() bool {
		_, err := cs[0].Mute(ctx, localapi.ModerateRequest{Agent: "bob@node1"})
		return err == nil
	}, "bob@node1 to be muted by his node's handle")
	if rs := modRules(t, cs[0]); !strings.Contains(rs, "bob@"+b+" muted") {
		t.Fatalf("muting bob@node1 made the rules %q", rs)
	}
	if _, err := cs[0].Unmute(ctx, localapi.ModerateRequest{Agent: "bob@node1"}); err != nil {
		t.Fatal(err)
	}
	if rs := modRules(t, cs[0]); strings.Contains(rs, "muted") {
		t.Fatalf("bob@node1 unmuted, and the rules say %q", rs)
	}

	// A muted agent of this node cannot post, and is told why.
	if _, err := cs[0].Mute(ctx, localapi.ModerateRequest{Agent: "alice", Seconds: 600}); err != nil {
		t.Fatal(err)
	}
	_, err = cs[0].Say(ctx, "alice", localapi.SayRequest{Room: room, Text: "muted?"})
	if !localapi.IsCode(err, localapi.CodeMuted) || !strings.Contains(err.Error(), "muted") {
		t.Fatalf("a muted agent's say: %v", err)
	}
	if _, err := cs[0].Unmute(ctx, localapi.ModerateRequest{Agent: "alice"}); err != nil {
		t.Fatal(err)
	}

	// The post limit (6 a minute here; the room's opening was alice's
	// first post, a while ago: the bucket may have a post back since,
	// one every 10 s): posts pass until the bucket is empty, and the one
	// over it is refused and counted.
	passed := 0
	for {
		_, err = cs[0].Say(ctx, "alice", localapi.SayRequest{Room: room, Text: "post"})
		if err != nil {
			break
		}
		if passed++; passed > 6 {
			t.Fatalf("%d posts in a row passed a limit of 6 a minute", passed)
		}
	}
	if passed < 5 || !localapi.IsCode(err, localapi.CodeTooMany) || !strings.Contains(err.Error(), "agent_post_limit") {
		t.Fatalf("the post over the limit, after %d that passed (want 5 or 6): %v", passed, err)
	}
	if r, m := refused(t, nt, 0, "rate"), refused(t, nt, 0, "muted"); r != 1 || m != 1 {
		t.Fatalf("refusals counted: rate %v, muted %v (want 1 and 1)", r, m)
	}

	// Kill: posts refused, registration and session gone, the name refused
	// until revived.
	if _, err := cs[0].Kill(ctx, localapi.ModerateRequest{Agent: "alice"}); err != nil {
		t.Fatal(err)
	}
	_, err = cs[0].Ask(ctx, "alice", localapi.AskRequest{Room: room, Text: "killed?"})
	if !localapi.IsCode(err, localapi.CodeKilled) || !strings.Contains(err.Error(), "parley agent revive alice") {
		t.Fatalf("a killed agent's ask: %v", err)
	}
	ags, err := cs[0].Agents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range ags {
		if g.Name == "alice" {
			t.Fatal("a killed agent is still registered")
		}
	}
	if _, err := cs[0].Session(ctx, localapi.SessionRequest{Session: "s-alice", Fallback: "alice"}); !localapi.IsCode(err, localapi.CodeKilled) {
		t.Fatalf("a killed agent's session binds again: %v", err)
	}
	if _, err := cs[0].Revive(ctx, localapi.ModerateRequest{Agent: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[0].Session(ctx, localapi.SessionRequest{Session: "s-alice", Fallback: "alice"}); err != nil {
		t.Fatalf("a revived agent's session: %v", err)
	}

	// Bad input: a clear error each, nothing in the room's log changes.
	before, err := cs[0].Log(ctx, room, 1000, "")
	if err != nil {
		t.Fatal(err)
	}
	stranger := nt.ID(0).String()[:10] // not a peer ID
	for _, c := range []struct {
		f    func(context.Context, localapi.ModerateRequest) (localapi.ModerationRule, error)
		req  localapi.ModerateRequest
		code string
		says string
	}{
		{cs[0].Kill, localapi.ModerateRequest{Agent: "nobody"}, localapi.CodeUnknownAgent, "parley agent list"},
		{cs[0].Kill, localapi.ModerateRequest{Agent: "bob@" + b}, localapi.CodeBadRequest, "mute"},
		{cs[0].Mute, localapi.ModerateRequest{Agent: "carol@" + b}, localapi.CodeUnknownAgent, "parley room list"},
		{cs[0].Mute, localapi.ModerateRequest{Agent: "x@" + stranger}, localapi.CodeUnknownAgent, "NAME@PEER_ID or NAME@HANDLE"},
		{cs[0].Mute, localapi.ModerateRequest{Agent: "b a d@" + b}, localapi.CodeBadRequest, "NAME@PEER_ID"},
		{cs[0].Mute, localapi.ModerateRequest{Agent: "alice", Seconds: -1}, localapi.CodeBadRequest, "until unmuted"},
		{cs[0].Unmute, localapi.ModerateRequest{Agent: "bob@" + b}, localapi.CodeUnknownAgent, "not muted"},
		{cs[0].Revive, localapi.ModerateRequest{Agent: "alice"}, localapi.CodeUnknownAgent, "not killed"},
	} {
		if _, err := c.f(ctx, c.req); !localapi.IsCode(err, c.code) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v (want %s saying %q)", c.req, err, c.code, c.says)
		}
	}
	after, err := cs[0].Log(ctx, room, 1000, "")
	if err != nil || len(after) != len(before) {
		t.Fatalf("bad input changed the log: %d → %d events (%v)", len(before), len(after), err)
	}
	if rs, err := cs[0].ModerationRules(ctx); err != nil || len(rs) != 0 {
		t.Fatalf("rules left: %+v %v", rs, err)
	}
}

// refused is node i's count of refused posts for a reason.
func refused(t *testing.T, nt *nodetest.Net, i int, reason string) float64 {
	t.Helper()
	mfs, err := nt.Node(i).Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "parley_agent_posts_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// modRules lists a node's moderation rules as "ADDR muted|killed" lines.
func modRules(t *testing.T, c *localapi.Client) string {
	t.Helper()
	rs, err := c.ModerationRules(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		if r.Muted {
			out = append(out, r.Agent+" muted")
		}
		if r.Killed {
			out = append(out, r.Agent+" killed")
		}
	}
	return strings.Join(out, "\n")
}
