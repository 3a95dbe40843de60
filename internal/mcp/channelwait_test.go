package mcp

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// heldNotifier is the client's notification sink, held by the test: each
// Notify shows its parameters on got and returns once the test lets it
// (release), so the channel route is held between two of its waits.
type heldNotifier struct {
	got     chan ChannelParams
	release chan struct{}
	stop    <-chan struct{}
}

func newHeldNotifier(ctx context.Context) *heldNotifier {
	return &heldNotifier{got: make(chan ChannelParams, 16), release: make(chan struct{}, 16), stop: ctx.Done()}
}

func (h *heldNotifier) Notify(method string, params any) error {
	if method != ChannelMethod {
		return errors.New("not a channel notification: " + method)
	}
	h.got <- params.(ChannelParams)
	select {
	case <-h.release:
		return nil
	case <-h.stop:
		return errors.New("the test ended")
	}
}

// next is the next pushed notification, within 30 s.
func (h *heldNotifier) next(t *testing.T, what string) ChannelParams {
	t.Helper()
	select {
	case p := <-h.got:
		return p
	case <-time.After(30 * time.Second):
		t.Fatalf("no push of %s within 30 s", what)
		return ChannelParams{}
	}
}

// channelNode starts a node, binds session s1 through a Server on it, and
// opens a room with the session's agent in it: the agent owes the
// invitation.
func channelNode(t *testing.T) (ctx context.Context, n *node.Node, srv *Server, agent, room string) {
	t.Helper()
	nt := nodetest.Start(t, 1)
	n = nt.Node(0)
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	srv = New(Config{Client: c, Session: "s1", ClientName: "claude-code", Project: "/p", Channel: true})
	info, err := srv.bind(ctx, "", localapi.SessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := n.Inbox().OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "ops", Members: []string{info.Name}})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, n, srv, info.Name, r.RoomID
}

// channelRoutes is how many channel routes agent has on n.
func channelRoutes(ctx context.Context, n *node.Node, agent string) int {
	for _, s := range n.Wake().WakeStatus(ctx) {
		if s.Agent == agent {
			k := 0
			for _, r := range s.Routes {
				if r == localapi.WakeChannel {
					k++
				}
			}
			return k
		}
	}
	return 0
}

// runChannel runs srv's channel route on a held notifier until the test
// ends; done is closed when the route ends.
func runChannel(t *testing.T, ctx context.Context, srv *Server) (h *heldNotifier, done chan struct{}) {
	ctx, cancel := context.WithCancel(ctx)
	h = newHeldNotifier(ctx)
	done = make(chan struct{})
	go func() {
		defer close(done)
		srv.channel(ctx, h)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return h, done
}

type wakeResult struct {
	w   localapi.Wake
	err error
}

// A channel route waits in a loop: a newer waiter of its session that
// registers while the route pushes (between two of its waits) takes the
// route over. The older's next wait names its previous answer (After), so
// the node ends it at once and the older ends; the newer keeps the route
// and is handed the next owed item. (Before, the older's next wait took
// the route back and ended the newer.)
func TestChannelRouteEndsWhenSupersededBetweenWaits(t *testing.T) {
	t.Parallel()
	ctx, n, srv, agent, room := channelNode(t)
	h, done := runChannel(t, ctx, srv)
	// The older route pushes the invitation, and is held there.
	if p := h.next(t, "the invitation"); p.Meta["kind"] != "invitation" || p.Meta["room_id"] != room {
		t.Fatalf("the first push: %+v", p)
	}
	newer := make(chan wakeResult, 1)
	go func() {
		w, err := n.Wake().WakeWait(ctx, agent, localapi.WakeWaitRequest{Kind: localapi.WakeChannel, Session: "s1", Seconds: localapi.MaxWait.Seconds()})
		newer <- wakeResult{w, err}
	}()
	nodetest.WaitFor(t, 20*time.Second, func() bool { return channelRoutes(ctx, n, agent) == 1 }, "the newer waiter's route")
	h.release <- struct{}{}
	select {
	case <-done: // superseded: the older ended
	case r := <-newer:
		t.Fatalf("the newer waiter was ended by the older route's next wait: %+v %v", r.w, r.err)
	case <-time.After(20 * time.Second):
		t.Fatal("the older channel route waits on after a newer waiter of its session came between two of its waits")
	}
	if got := channelRoutes(ctx, n, agent); got != 1 {
		t.Fatalf("%d channel routes after the older ended; want the newer's", got)
	}
	if _, err := n.Inbox().Ask(ctx, "human", localapi.AskRequest{Room: room, Text: "which port?", To: agent}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-newer:
		if r.err != nil || r.w.Superseded || !slices.ContainsFunc(r.w.Items, func(it localapi.Item) bool { return it.Kind == "ask" && it.Text == "which port?" }) {
			t.Fatalf("the newer waiter for the ask: %+v %v", r.w, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the newer waiter was not handed the ask within 30 s")
	}
}

// The node keeps what ends waiter routes per agent name: after a rename
// (parley_register), the channel route's first wait under the new name
// names no previous answer, so a waiter of the session under the new name
// that came (and went) while the route pushed under the old one does not
// end it: it goes on, and pushes the next item under the new name.
func TestChannelRouteGoesOnUnderANewName(t *testing.T) {
	t.Parallel()
	ctx, n, srv, _, room := channelNode(t)
	h, done := runChannel(t, ctx, srv)
	if p := h.next(t, "the invitation"); p.Meta["kind"] != "invitation" {
		t.Fatalf("the first push: %+v", p)
	}
	// Held while it pushes under its old name: the agent takes a new one,
	// and a waiter of the session comes and goes under it.
	if _, err := srv.bind(ctx, "", localapi.SessionRequest{Name: "shipper"}); err != nil {
		t.Fatal(err)
	}
	if r, err := n.Wake().WakeWait(ctx, "shipper", localapi.WakeWaitRequest{Kind: localapi.WakeChannel, Session: "s1"}); err != nil || r.Superseded {
		t.Fatalf("a wait under the new name: %+v %v", r, err)
	}
	h.release <- struct{}{}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		select {
		case <-done:
			t.Fatal("the channel route ended at its first wait under the new name")
		default:
		}
		return channelRoutes(ctx, n, "shipper") == 1
	}, "the channel route under the new name")
	if _, err := n.Inbox().Ask(ctx, "human", localapi.AskRequest{Room: room, Text: "and the host?", To: "shipper"}); err != nil {
		t.Fatal(err)
	}
	for {
		p := h.next(t, "the ask under the new name")
		h.release <- struct{}{}
		if p.Meta["kind"] == "ask" && strings.Contains(p.Content, "and the host?") {
			break
		}
	}
}

// A channel route whose wait fails on its side (its connection to the node
// cut while the node held the wait) waits again, naming the same previous
// answer, and goes on: the node does not take the failed wait, its own,
// for a newer waiter of the session. It then pushes the next owed item.
// (Before, its next wait was ended as superseded by its own failed one,
// and the route ended for good.)
func TestChannelRouteGoesOnAfterAFailedWait(t *testing.T) {
	t.Parallel()
	ctx, n, srv, agent, room := channelNode(t)
	p := nodetest.Proxy(t, node.SocketPath(n.Home()))
	srv.api = localapi.NewClient(p.Path)
	h, done := runChannel(t, ctx, srv)
	if pu := h.next(t, "the invitation"); pu.Meta["kind"] != "invitation" {
		t.Fatalf("the first push: %+v", pu)
	}
	h.release <- struct{}{}
	nodetest.WaitFor(t, 20*time.Second, func() bool { return channelRoutes(ctx, n, agent) == 1 }, "the route's second wait")
	// Its second wait fails on its side; the next is held until the node
	// has let the failed one go.
	p.Cut()
	nodetest.WaitFor(t, 20*time.Second, func() bool { return channelRoutes(ctx, n, agent) == 0 }, "the failed wait's route to go")
	p.Mend()
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		select {
		case <-done:
			t.Fatal("the channel route ended after its wait failed")
		default:
		}
		return channelRoutes(ctx, n, agent) == 1
	}, "the route's wait after the failed one")
	if _, err := n.Inbox().Ask(ctx, "human", localapi.AskRequest{Room: room, Text: "still there?", To: agent}); err != nil {
		t.Fatal(err)
	}
	select {
	case pu := <-h.got:
		if pu.Meta["kind"] != "ask" || !strings.Contains(pu.Content, "still there?") {
			t.Fatalf("the push after the failed wait: %+v", pu)
		}
		h.release <- struct{}{}
	case <-done:
		t.Fatal("the channel route ended after its wait failed")
	case <-time.After(30 * time.Second):
		t.Fatal("no push of the ask within 30 s of the failed wait")
	}
}
