package wake_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/wake"
	"github.com/parley-mesh/parley/internal/wake/tmux"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// The service runs over a real node's inbox and rooms (node/nodetest); the
// node's own wake-up service runs beside it and is not used.

// logBuf is a log the test reads while the service writes it.
type logBuf struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// lines returns the log lines that hold every one of subs.
func (l *logBuf) lines(subs ...string) []string {
	var out []string
	for _, line := range strings.Split(l.String(), "\n") {
		all := line != ""
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			out = append(out, line)
		}
	}
	return out
}

// fixture is one node with the agent "bot" in room "ops", and a wake-up
// service of the test's own over the node's inbox.
type fixture struct {
	t    *testing.T
	ctx  context.Context
	n    *node.Node
	s    *wake.Service
	log  *logBuf
	reg  *prometheus.Registry
	room string
	// quiet stands for the agent's person muting it.
	quiet atomic.Bool
	terms *memTerminals
}

// memTerminals keeps terminal routes in memory.
type memTerminals struct {
	mu sync.Mutex // guards m
	m  map[string]wake.Saved
}

func (m *memTerminals) SaveTerminal(t wake.Saved) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[t.Agent] = t
	return nil
}

func (m *memTerminals) DropTerminal(agent, socket, pane string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.m[agent]; ok && (pane == "" || t.Pane == pane) && (socket == "" || t.Socket == socket) {
		delete(m.m, agent)
	}
	return nil
}

func (m *memTerminals) Terminals() ([]wake.Saved, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []wake.Saved
	for _, t := range m.m {
		out = append(out, t)
	}
	return out, nil
}

// newFixture starts the fixture; opts may change the service's Config
// (f.n is set when they run).
func newFixture(t *testing.T, limit time.Duration, opts ...func(f *fixture, c *wake.Config)) *fixture {
	t.Helper()
	net := nodetest.Start(t, 1)
	n := net.Node(0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	// Bound by its session key, as `parley run` binds it (so the session can
	// bind it again).
	if _, err := n.Agents().Session(ctx, agents.SessionRequest{Session: "s1", Name: "bot", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	room, err := n.Inbox().OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "ops", Members: []string{"bot"}})
	if err != nil {
		t.Fatal(err)
	}
	// The invitation is read before the service starts: each test owes
	// only what it asks.
	if _, err := n.Inbox().Take(ctx, "bot"); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: ctx, n: n, log: &logBuf{}, reg: prometheus.NewRegistry(), room: room.RoomID,
		terms: &memTerminals{m: map[string]wake.Saved{}}}
	cfg := wake.Config{
		Inbox:     n.Inbox(),
		Changes:   n.Rooms().Changes,
		Agents:    func() []string { return []string{"bot"} },
		Quiet:     func(string) bool { return f.quiet.Load() },
		Terminals: f.terms,
		Self:      n.ID().String(),
		Limit:     limit,
		Recheck:   20 * time.Millisecond,
		Terminal:  tmux.Options{Poll: 20 * time.Millisecond},
		Logger:    slog.New(slog.NewTextHandler(f.log, nil)),
		Registry:  f.reg,
	}
	for _, o := range opts {
		o(f, &cfg)
	}
	f.s, err = wake.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.s.Run(sctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return f
}

func (f *fixture) ask(text string) string {
	f.t.Helper()
	r, err := f.n.Inbox().Ask(f.ctx, "human", localapi.AskRequest{Room: f.room, Text: text, To: "bot"})
	if err != nil {
		f.t.Fatal(err)
	}
	return r.AskID
}

func (f *fixture) take() {
	f.t.Helper()
	if _, err := f.n.Inbox().Take(f.ctx, "bot"); err != nil {
		f.t.Fatal(err)
	}
}

// status is what the service says of bot.
func (f *fixture) status() localapi.WakeStatus {
	for _, w := range f.s.WakeStatus(f.ctx) {
		if w.Agent == "bot" {
			return w
		}
	}
	return localapi.WakeStatus{Agent: "bot"}
}

func (f *fixture) routes(kinds ...string) func() bool {
	return func() bool { return strings.Join(f.status().Routes, ",") == strings.Join(kinds, ",") }
}

func (f *fixture) unreached(n int) func() bool {
	return func() bool { return f.status().Unreached == n }
}

// waiter is a route waiting in the background.
type waiter chan result

type result struct {
	w   localapi.Wake
	err error
}

func (f *fixture) wait(kind, session string, seconds float64) waiter {
	ch := make(waiter, 1)
	go func() {
		w, err := f.s.WakeWait(f.ctx, "bot", localapi.WakeWaitRequest{Kind: kind, Session: session, Seconds: seconds})
		ch <- result{w, err}
	}()
	return ch
}

func (w waiter) get(t *testing.T) result {
	t.Helper()
	select {
	case r := <-w:
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("the waiter did not return")
	}
	return result{}
}

// Each kind of route in its order (stop, appserver, channel) is handed an
// item not read within the limit, once; with none left the human is told:
// a warning naming the routes tried, the count WakeStatus gives `parley
// who` and `parley status`, the metric. Read at last, the count goes and
// the log says so.
func TestRoutesInOrderThenTheHuman(t *testing.T) {
	f := newFixture(t, 500*time.Millisecond)
	// Registered in the reverse of their order: the order is the kind's.
	channel := f.wait(localapi.WakeChannel, "s1", 50)
	nodetest.WaitFor(t, 20*time.Second, f.routes("channel"), "the channel route")
	app := f.wait(localapi.WakeAppServer, "thread-1", 50)
	nodetest.WaitFor(t, 20*time.Second, f.routes("channel", "appserver"), "the appserver route")
	stop := f.wait(localapi.WakeStop, "s1", 50)
	nodetest.WaitFor(t, 20*time.Second, f.routes("channel", "appserver", "stop"), "the stop route")

	id := f.ask("which port?")
	for _, w := range []struct {
		kind string
		w    waiter
	}{{"stop", stop}, {"appserver", app}, {"channel", channel}} {
		r := w.w.get(t)
		if r.err != nil || len(r.w.Items) != 1 || r.w.Items[0].ID != id || r.w.Items[0].Text != "which port?" {
			t.Fatalf("%s route: %+v %v", w.kind, r.w, r.err)
		}
		// A waiter is handed its items once, and is done.
		if slices.Contains(f.status().Routes, w.kind) {
			t.Fatalf("the %s route is still there after it had the item: %v", w.kind, f.status().Routes)
		}
	}
	// Told once, after all three had their turn (the log line names them).
	nodetest.WaitFor(t, 20*time.Second, f.unreached(1), "the human to be told")
	if l := f.log.lines("level=WARN", "tell its human", "item="+id, "routes_tried=stop,appserver,channel", "idle=false"); len(l) != 1 {
		t.Fatalf("log lines %q in\n%s", l, f.log)
	}
	if u, a := counter(t, f.reg, "parley_wake_unreached_total"), counter(t, f.reg, "parley_wake_attempts_total"); u != 1 || a != 3 {
		t.Fatalf("metrics: unreached %v, attempts %v", u, a)
	}
	// A route that comes now has a kind the item was handed to: nothing.
	r := f.wait(localapi.WakeStop, "s1", 1).get(t)
	if r.err != nil || len(r.w.Items) != 0 || r.w.Superseded {
		t.Fatalf("a stop waiter for nothing new: %+v %v", r.w, r.err)
	}
	f.take()
	nodetest.WaitFor(t, 20*time.Second, f.unreached(0), "the read item to leave the count")
	nodetest.WaitFor(t, 20*time.Second, func() bool { return len(f.log.lines("read after all", id)) == 1 }, "the log to say it was read")
}

// counter sums a counter of the registry.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// One stop waiter per session: a newer one supersedes the older, another
// session's waiter stays; a busy session ends its waiter; an item wakes one
// waiter once, and a Stop after it is not woken again for it.
func TestOneStopWaiterPerSession(t *testing.T) {
	f := newFixture(t, time.Hour)
	older := f.wait(localapi.WakeStop, "s1", 50)
	nodetest.WaitFor(t, 20*time.Second, f.routes("stop"), "the first waiter")
	newer := f.wait(localapi.WakeStop, "s1", 50)
	if r := older.get(t); r.err != nil || !r.w.Superseded || len(r.w.Items) != 0 {
		t.Fatalf("older waiter: %+v %v", r.w, r.err)
	}
	other := f.wait(localapi.WakeStop, "s2", 50)
	nodetest.WaitFor(t, 20*time.Second, f.routes("stop", "stop"), "the other session's waiter")
	if err := f.s.WakeBusy(f.ctx, "bot", localapi.SessionRef{Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	if r := newer.get(t); r.err != nil || !r.w.Superseded {
		t.Fatalf("waiter of a busy session: %+v %v", r.w, r.err)
	}
	nodetest.WaitFor(t, 20*time.Second, f.routes("stop"), "one waiter left")
	id := f.ask("status?")
	if r := other.get(t); r.err != nil || len(r.w.Items) != 1 || r.w.Items[0].ID != id {
		t.Fatalf("waiter for the ask: %+v %v", r.w, r.err)
	}
	// The session stops again with the item still unread: its new waiter
	// waits (it is not woken twice), and ends empty when its time is up.
	r := f.wait(localapi.WakeStop, "s2", 1).get(t)
	if r.err != nil || len(r.w.Items) != 0 || r.w.Superseded {
		t.Fatalf("the next Stop: %+v %v", r.w, r.err)
	}
	// Something new wakes it.
	again := f.wait(localapi.WakeStop, "s2", 50)
	id2 := f.ask("and now?")
	if r := again.get(t); r.err != nil || len(r.w.Items) != 1 || r.w.Items[0].ID != id2 {
		t.Fatalf("waiter for the second ask: %+v %v", r.w, r.err)
	}

	// A session that vanishes (the hook process killed: its request
	// ends) takes its route with it.
	gone, cancel := context.WithCancel(f.ctx)
	vanished := make(chan error, 1)
	go func() {
		_, err := f.s.WakeWait(gone, "bot", localapi.WakeWaitRequest{Kind: localapi.WakeStop, Session: "s3", Seconds: 50})
		vanished <- err
	}()
	nodetest.WaitFor(t, 20*time.Second, f.routes("stop"), "the waiter of the session that will vanish")
	cancel()
	if err := <-vanished; !errors.Is(err, context.Canceled) {
		t.Fatalf("vanished waiter: %v", err)
	}
	nodetest.WaitFor(t, 20*time.Second, f.routes(), "the vanished session's route to go")

	// Bad requests are refused and register nothing.
	for _, req := range []localapi.WakeWaitRequest{{Kind: "smoke", Session: "s"}, {Kind: localapi.WakeStop},
		{Kind: localapi.WakeStop, Session: strings.Repeat("s", 257)}, {Kind: localapi.WakeStop, Session: "s", Seconds: -1},
		{Kind: localapi.WakeTerminal, Session: "s"}} {
		if _, err := f.s.WakeWait(f.ctx, "bot", req); !localapi.IsCode(err, localapi.CodeBadRequest) {
			t.Fatalf("%+v: %v", req, err)
		}
	}
	for _, ref := range []localapi.SessionRef{{}, {Session: strings.Repeat("s", 257)}} {
		if err := f.s.WakeIdle(f.ctx, "bot", ref); !localapi.IsCode(err, localapi.CodeBadRequest) {
			t.Fatalf("idle %+v: %v", ref, err)
		}
	}
	if err := f.s.WakeBusy(f.ctx, "bot", localapi.SessionRef{}); !localapi.IsCode(err, localapi.CodeBadRequest) {
		t.Fatalf("busy without a session: %v", err)
	}
	if got := f.status().Routes; len(got) != 0 {
		t.Fatalf("routes after bad requests: %v", got)
	}
}

// waitAgain is a waiter's next wait, naming its previous answer's Seq.
func (f *fixture) waitAgain(session string, seconds float64, after uint64) waiter {
	ch := make(waiter, 1)
	go func() {
		w, err := f.s.WakeWait(f.ctx, "bot", localapi.WakeWaitRequest{Kind: localapi.WakeStop, Session: session, Seconds: seconds, After: after})
		ch <- result{w, err}
	}()
	return ch
}

// A stop waiter waits in a loop (its wait passes, or the items it was
// handed were read meanwhile): what lands between two of its waits ends it
// as it would have ended the route it had. The session working again
// (WakeBusy), or a newer waiter of the session, ends the next wait at once
// (before, the busy call was lost and the waiter waited on while its
// session worked, and the older waiter ended the newer). The first wait is
// never ended by what came before it; another session's busy call, or a
// wait with nothing between, ends nothing.
func TestStopWaiterBetweenWaits(t *testing.T) {
	f := newFixture(t, time.Hour)
	// Nothing ended before the first wait counts: a busy call before it.
	if err := f.s.WakeBusy(f.ctx, "bot", localapi.SessionRef{Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	r := f.wait(localapi.WakeStop, "s1", 0.2).get(t)
	if r.err != nil || r.w.Superseded || len(r.w.Items) != 0 || r.w.Seq == 0 {
		t.Fatalf("a first wait after a busy call: %+v %v", r.w, r.err)
	}
	// Nothing between: the next wait waits (out its time).
	r = f.waitAgain("s1", 0.2, r.w.Seq).get(t)
	if r.err != nil || r.w.Superseded || r.w.Seq == 0 {
		t.Fatalf("a wait again with nothing between: %+v %v", r.w, r.err)
	}
	// Another session's busy call: it still waits.
	if err := f.s.WakeBusy(f.ctx, "bot", localapi.SessionRef{Session: "s2"}); err != nil {
		t.Fatal(err)
	}
	r = f.waitAgain("s1", 0.2, r.w.Seq).get(t)
	if r.err != nil || r.w.Superseded {
		t.Fatalf("a wait again after another session's busy call: %+v %v", r.w, r.err)
	}

	// Its session's busy call between two waits: the next one ends at once
	// and registers nothing. (Its time, 30 s, is far over what the check
	// waits for the answer.)
	if err := f.s.WakeBusy(f.ctx, "bot", localapi.SessionRef{Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	again := f.waitAgain("s1", 30, r.w.Seq)
	select {
	case r := <-again:
		if r.err != nil || !r.w.Superseded {
			t.Fatalf("a wait again after its session's busy call: %+v %v", r.w, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a wait again after its session's busy call waits on")
	}
	if got := f.status().Routes; len(got) != 0 {
		t.Fatalf("routes after a wait ended at once: %v", got)
	}

	// Handed an item it found read meanwhile, a waiter waits again; a newer
	// waiter registered between: the older ends at once, the newer stays.
	older := f.wait(localapi.WakeStop, "s1", 50)
	nodetest.WaitFor(t, 20*time.Second, f.routes("stop"), "the older waiter")
	f.ask("which port?")
	r = older.get(t)
	if r.err != nil || len(r.w.Items) != 1 || r.w.Seq == 0 {
		t.Fatalf("the older waiter for the ask: %+v %v", r.w, r.err)
	}
	f.take()
	newer := f.wait(localapi.WakeStop, "s1", 50)
	nodetest.WaitFor(t, 20*time.Second, f.routes("stop"), "the newer waiter")
	f.supersededBy(t, f.waitAgain("s1", 30, r.w.Seq), newer)
	if err := f.s.WakeBusy(f.ctx, "bot", localapi.SessionRef{Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	if r := newer.get(t); r.err != nil || !r.w.Superseded {
		t.Fatalf("the newer waiter of a busy session: %+v %v", r.w, r.err)
	}
}

// A waiter that waits in a loop and gives its key (Waiter) is not ended by
// a wait of its own whose answer it never got: one its client gave up
// (cancelled once the route was registered), one the node has not seen
// end yet when the next comes (the client's cancel still on its way), one
// whose answer was lost. Its next wait names its last answer (After) and
// waits. A newer waiter of the session that came since still ends it.
// Before, each of its own waits counted as a newer waiter's, and a channel
// route or parley codex whose wait failed ended itself ("another parley
// codex took over this thread").
func TestOwnFailedWaitDoesNotEndTheWaiter(t *testing.T) {
	f := newFixture(t, time.Hour)
	wait := func(ctx context.Context, key string, seconds float64, after uint64) waiter {
		ch := make(waiter, 1)
		go func() {
			w, err := f.s.WakeWait(ctx, "bot", localapi.WakeWaitRequest{Kind: localapi.WakeChannel, Session: "s1", Seconds: seconds, After: after, Waiter: key})
			ch <- result{w, err}
		}()
		return ch
	}
	waits := func(what string, r result) uint64 {
		t.Helper()
		if r.err != nil || r.w.Superseded || r.w.Seq == 0 {
			t.Fatalf("%s: %+v %v; want a wait that passed", what, r.w, r.err)
		}
		return r.w.Seq
	}
	last := waits("the first wait", wait(f.ctx, "a", 0.2, 0).get(t))

	// Its client gives up once the route is registered.
	gctx, giveUp := context.WithCancel(f.ctx)
	gave := wait(gctx, "a", 50, last)
	nodetest.WaitFor(t, 20*time.Second, f.routes("channel"), "the wait the client gives up")
	giveUp()
	if r := gave.get(t); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the wait given up: %+v %v", r.w, r.err)
	}
	last = waits("the wait after one given up", wait(f.ctx, "a", 0.2, last).get(t))

	// Its client gave up, but the node has not seen it yet: the next wait
	// comes while the route is still registered, and takes its place.
	unseen := wait(f.ctx, "a", 50, last)
	nodetest.WaitFor(t, 20*time.Second, f.routes("channel"), "the wait whose end the node has not seen")
	last = waits("the wait after one whose end the node had not seen", wait(f.ctx, "a", 0.2, last).get(t))
	if r := unseen.get(t); !r.w.Superseded {
		t.Fatalf("the wait it replaced: %+v %v; want superseded", r.w, r.err)
	}

	// Its answer was lost on the way.
	waits("the wait whose answer is lost", wait(f.ctx, "a", 0.2, last).get(t))
	last = waits("the wait after a lost answer", wait(f.ctx, "a", 0.2, last).get(t))

	// A newer waiter of the session comes after a wait the client gave up:
	// the next wait ends at once, and the newer stays.
	gctx, giveUp = context.WithCancel(f.ctx)
	gave = wait(gctx, "a", 50, last)
	nodetest.WaitFor(t, 20*time.Second, f.routes("channel"), "the second wait the client gives up")
	giveUp()
	gave.get(t)
	newer := wait(f.ctx, "b", 50, 0)
	nodetest.WaitFor(t, 20*time.Second, f.routes("channel"), "the newer waiter")
	f.supersededBy(t, wait(f.ctx, "a", 30, last), newer)
}

// supersededBy checks that the older waiter's wait, after the newer
// waiter registered, is answered Superseded at once, and that the newer
// waits on, the one route left.
func (f *fixture) supersededBy(t *testing.T, older, newer waiter) {
	t.Helper()
	select {
	case r := <-older:
		if r.err != nil || !r.w.Superseded {
			t.Fatalf("the older waiter's wait after a newer one: %+v %v", r.w, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the older waiter's wait after a newer one waits on")
	}
	select {
	case r := <-newer:
		t.Fatalf("the newer waiter ended: %+v %v", r.w, r.err)
	default:
	}
	if got := f.status().Routes; len(got) != 1 {
		t.Fatalf("routes after the older waiter's wait: %v; want the newer's", got)
	}
}

// A session that says it is idle (Codex's notify) gets nothing by itself:
// what no route can bring it is told to the human at once, not after the
// limit (an hour here). A route that has an item keeps its turn; the mark
// ends when the agent reads or works again.
func TestIdleSessionTellsTheHumanAtOnce(t *testing.T) {
	f := newFixture(t, time.Hour)
	id := f.ask("is the build green?")
	if err := f.s.WakeIdle(f.ctx, "bot", localapi.SessionRef{Session: "thread-1"}); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 20*time.Second, f.unreached(1), "the human to be told of the idle agent's ask")
	if !f.status().Idle {
		t.Fatal("the agent is not marked idle")
	}
	if l := f.log.lines("level=WARN", "tell its human", "item="+id, "idle=true"); len(l) != 1 {
		t.Fatalf("log lines %q in\n%s", l, f.log)
	}
	// Reading ends the mark: a new ask waits for the limit again.
	f.take()
	nodetest.WaitFor(t, 20*time.Second, f.unreached(0), "the read ask to leave the count")
	if f.status().Idle {
		t.Fatal("still marked idle after it read")
	}
	ch := f.wait(localapi.WakeChannel, "s1", 50)
	nodetest.WaitFor(t, 20*time.Second, f.routes("channel"), "the channel route")
	id2 := f.ask("and the tests?")
	if r := ch.get(t); len(r.w.Items) != 1 || r.w.Items[0].ID != id2 {
		t.Fatalf("channel: %+v %v", r.w, r.err)
	}
	// Idle again, with the item in the channel route's hands: it keeps
	// its turn (an hour), so nobody is told yet.
	if err := f.s.WakeIdle(f.ctx, "bot", localapi.SessionRef{Session: "thread-1"}); err != nil {
		t.Fatal(err)
	}
	if n := f.status().Unreached; n != 0 {
		t.Fatalf("told while a route had the item: %d", n)
	}
	// A third ask, with no route left that it was not handed to: told.
	id3 := f.ask("and the docs?")
	nodetest.WaitFor(t, 20*time.Second, func() bool { return len(f.log.lines("tell its human", "item="+id3, "idle=true")) == 1 },
		"the third ask to be told at once")
	// A busy session ends the mark: a fourth ask is not told at once. The
	// waiter registered after it proves the service has seen it.
	if err := f.s.WakeBusy(f.ctx, "bot", localapi.SessionRef{Session: "thread-1"}); err != nil {
		t.Fatal(err)
	}
	if f.status().Idle {
		t.Fatal("still marked idle after it worked")
	}
	f.take()
	nodetest.WaitFor(t, 20*time.Second, f.unreached(0), "the read asks to leave the count")
	id4 := f.ask("last one?")
	if r := f.wait(localapi.WakeStop, "s1", 50).get(t); len(r.w.Items) != 1 || r.w.Items[0].ID != id4 {
		t.Fatalf("stop waiter: %+v %v", r.w, r.err)
	}
	if n := f.status().Unreached; n != 0 || len(f.log.lines("item="+id4, "tell its human")) != 0 {
		t.Fatalf("a busy agent's ask was told at once: %d\n%s", n, f.log)
	}
	// It reads in its turn and goes idle before the service has looked:
	// the read belongs to the turn and does not end the idle mark.
	f.take()
	if err := f.s.WakeIdle(f.ctx, "bot", localapi.SessionRef{Session: "thread-1"}); err != nil {
		t.Fatal(err)
	}
	id5 := f.ask("one more?")
	nodetest.WaitFor(t, 20*time.Second, func() bool { return len(f.log.lines("tell its human", "item="+id5, "idle=true")) == 1 },
		"the ask after a turn that read to be told at once")
}

// The terminal route pastes into the agent's pane (within the limit, 2 s
// here, generous for a loaded machine); a pane that closes is
// dropped at the next delivery, and the item goes on (here, to the human
// after the limit); a pane whose program has exited, or no tmux server, is
// refused as a route.
func TestTerminalRouteAndDeadPanes(t *testing.T) {
	needTmux(t)
	f := newFixture(t, 2*time.Second)
	srv := tmux.Server{Name: fmt.Sprintf("parley-wake-test-%d-%d", os.Getpid(), time.Now().UnixNano()), Config: "/dev/null"}
	t.Cleanup(func() { srv.KillServer(context.Background()) }) //nolint:errcheck // gone already is fine
	script, err := filepath.Abs(filepath.Join("tmux", "testdata", "fakeagent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	taken := filepath.Join(t.TempDir(), "taken")
	pane, err := srv.Start(f.ctx, tmux.StartOptions{Command: []string{script}, Env: []string{"FAKE_LOG=" + taken, "FAKE_WORK=0.05", "INPUTRC=/dev/null"}})
	if err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		sc, err := srv.Capture(f.ctx, pane.ID)
		return err == nil && sc.CursorLine() == ">"
	}, "the agent's prompt")
	if err := f.s.WakeTerminal(f.ctx, "bot", localapi.TerminalRequest{Socket: pane.Socket, Pane: pane.ID, Prompt: "> "}); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 20*time.Second, f.routes("terminal"), "the terminal route")
	id := f.ask("which port does the shop use?")
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		b, _ := os.ReadFile(taken)
		return strings.Contains(string(b), "which port does the shop use?") && strings.Contains(string(b), id)
	}, "the wake text in the agent's input")
	// The paste reached it: a terminal agent reads it in its pane (it may
	// have no Parley tool that would mark it read), so its human is not
	// told, though it has not answered yet, nor is it pasted again.
	pasted := time.Now()
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		if f.unreached(1)() {
			t.Fatal("the human was told of an ask pasted whole into the agent's pane")
		}
		return time.Since(pasted) > 3*2*time.Second
	}, "three times the route's limit to pass")
	if b, _ := os.ReadFile(taken); strings.Count(string(b), "which port does the shop use?") != 1 {
		t.Fatalf("the ask was pasted %d times:\n%s", strings.Count(string(b), "which port does the shop use?"), b)
	}

	// The pane closes: the next item drops the route, and goes on.
	if err := srv.KillPane(f.ctx, pane.ID); err != nil {
		t.Fatal(err)
	}
	id2 := f.ask("still there?")
	nodetest.WaitFor(t, 30*time.Second, f.routes(), "the closed pane's route to go")
	// The first ask, pasted into the pane that is gone, and the second,
	// which no route could take: the human is told of both.
	nodetest.WaitFor(t, 20*time.Second, f.unreached(2), "the human to be told of both asks")
	if l := f.log.lines("terminal wake-up route gone", pane.ID); len(l) != 1 {
		t.Fatalf("log: %q\n%s", l, f.log)
	}
	if l := f.log.lines("tell its human", "item="+id2, "routes_tried=terminal"); len(l) != 1 {
		t.Fatalf("log: %q\n%s", l, f.log)
	}

	// A pane whose program has exited, a pane that is not there, no server.
	dead, err := srv.Start(f.ctx, tmux.StartOptions{Command: []string{"sh", "-c", "exit 3"}, KeepDead: true})
	if err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool { st, err := srv.Inspect(f.ctx, dead.ID); return err == nil && st.Dead }, "the pane to die")
	var le *localapi.Error
	err = f.s.WakeTerminal(f.ctx, "bot", localapi.TerminalRequest{Socket: dead.Socket, Pane: dead.ID})
	if !errors.As(err, &le) || le.Status != http.StatusGone {
		t.Fatalf("a dead pane: %v", err)
	}
	err = f.s.WakeTerminal(f.ctx, "bot", localapi.TerminalRequest{Socket: dead.Socket, Pane: "%999"})
	if !errors.As(err, &le) || le.Status != http.StatusNotFound {
		t.Fatalf("a pane that is not there: %v", err)
	}
	for _, req := range []localapi.TerminalRequest{{Socket: "/nonexistent/tmux.sock", Pane: "%1"}, {Socket: "relative", Pane: "%1"}, {Socket: dead.Socket, Pane: "1"}} {
		if err := f.s.WakeTerminal(f.ctx, "bot", req); err == nil {
			t.Fatalf("%+v was taken", req)
		}
	}
	if got := f.status().Routes; len(got) != 0 {
		t.Fatalf("routes: %v", got)
	}
}

// An ask made while the agent was muted is brought to it once it is
// unmuted, by the route it has, without a new ask (it waited for the next
// change in the rooms, and no NOT REACHED mark came either).
func TestUnmuteWakesForWhatWaits(t *testing.T) {
	f := newFixture(t, 5*time.Second)
	f.quiet.Store(true)
	w := f.wait(localapi.WakeStop, "s1", 15)
	nodetest.WaitFor(t, 10*time.Second, f.routes(localapi.WakeStop), "the stop waiter")
	id := f.ask("are you there?")
	// Muted: nothing is handed to the waiter (a few rechecks go by).
	select {
	case r := <-w:
		t.Fatalf("a muted agent was woken: %+v", r)
	case <-time.After(300 * time.Millisecond):
	}
	f.quiet.Store(false)
	got := w.get(t)
	if got.err != nil || len(got.w.Items) != 1 || got.w.Items[0].ID != id {
		t.Fatalf("after unmute: %+v", got)
	}
}

// Restore takes up a kept terminal route only when its pane still runs the
// program it ran (the same first process): a pane respawned with another
// program is dropped, and its agent is not bound again.
func TestRestoreChecksThePanesProgram(t *testing.T) {
	needTmux(t)
	f := newFixture(t, 5*time.Second)
	srv := tmux.Server{Name: fmt.Sprintf("parley-wake-test-%d-%d", os.Getpid(), time.Now().UnixNano()), Config: "/dev/null"}
	t.Cleanup(func() { srv.KillServer(context.Background()) }) //nolint:errcheck // gone already is fine
	pane, err := srv.Start(f.ctx, tmux.StartOptions{Command: []string{"sh", "-c", "printf '> '; sleep 600"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.WakeTerminal(f.ctx, "bot", localapi.TerminalRequest{Socket: pane.Socket, Pane: pane.ID, Prompt: "> ", Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	kept, _ := f.terms.Terminals()
	if len(kept) != 1 || kept[0].PID != pane.PID || kept[0].Session != "s1" || kept[0].Pane != pane.ID {
		t.Fatalf("kept %+v, pane %+v", kept, pane)
	}
	rebound := 0
	rebind := func(_ context.Context, session string) (string, error) {
		rebound++
		if session != "s1" {
			t.Errorf("rebind of session %q", session)
		}
		return "bot", nil
	}
	// The same program: taken up.
	if n, err := f.s.Restore(f.ctx, rebind); err != nil || n != 1 || rebound != 1 {
		t.Fatalf("restore of a live pane: %d, %v (rebound %d)", n, err, rebound)
	}
	// Another program in the same pane: dropped.
	if out, err := exec.Command("tmux", "-L", srv.Name, "-f", "/dev/null", "respawn-pane", "-k", "-t", pane.ID, "sleep 600").CombinedOutput(); err != nil {
		t.Fatalf("respawn-pane: %v %s", err, out)
	}
	if n, err := f.s.Restore(f.ctx, rebind); err != nil || n != 0 || rebound != 1 {
		t.Fatalf("restore of a respawned pane: %d, %v (rebound %d)", n, err, rebound)
	}
	if kept, _ := f.terms.Terminals(); len(kept) != 0 {
		t.Fatalf("a respawned pane's route is kept: %+v", kept)
	}
	if l := f.log.lines("not taken up again", "another program"); len(l) != 1 {
		t.Fatalf("log: %q\n%s", l, f.log)
	}
}

// Restore does not take up a kept route whose tmux socket lies in a
// directory others can write to (another user could have put a server of
// theirs there while the node was down): the route is dropped and its
// agent is not bound again.
func TestRestoreRefusesASocketOthersCanWrite(t *testing.T) {
	needTmux(t)
	f := newFixture(t, 5*time.Second)
	dir, err := os.MkdirTemp("", "pw-") // short: unix socket paths are short
	if err != nil {
		t.Fatal(err)
	}
	srv := tmux.Server{Socket: filepath.Join(dir, "s"), Config: "/dev/null"}
	t.Cleanup(func() {
		srv.KillServer(context.Background()) //nolint:errcheck // gone already is fine
		os.RemoveAll(dir)
	})
	pane, err := srv.Start(f.ctx, tmux.StartOptions{Command: []string{"sh", "-c", "printf '> '; sleep 600"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.WakeTerminal(f.ctx, "bot", localapi.TerminalRequest{Socket: srv.Socket, Pane: pane.ID, Prompt: "> ", Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil { //nolint:gosec // the point of the test
		t.Fatal(err)
	}
	rebind := func(context.Context, string) (string, error) {
		t.Error("rebound a route on a socket others can replace")
		return "bot", nil
	}
	if n, err := f.s.Restore(f.ctx, rebind); err != nil || n != 0 {
		t.Fatalf("restore: %d, %v", n, err)
	}
	if kept, _ := f.terms.Terminals(); len(kept) != 0 {
		t.Fatalf("the route is kept: %+v", kept)
	}
	if l := f.log.lines("not taken up again", "written by others"); len(l) != 1 {
		t.Fatalf("log: %q\n%s", l, f.log)
	}
}

// ForgetTerminal (unregister, kill) drops the agent's running terminal
// route and the one kept for restarts.
func TestForgetTerminalDropsTheRoute(t *testing.T) {
	needTmux(t)
	f := newFixture(t, 5*time.Second)
	srv := tmux.Server{Name: fmt.Sprintf("parley-wake-test-%d-%d", os.Getpid(), time.Now().UnixNano()), Config: "/dev/null"}
	t.Cleanup(func() { srv.KillServer(context.Background()) }) //nolint:errcheck // gone already is fine
	pane, err := srv.Start(f.ctx, tmux.StartOptions{Command: []string{"sh", "-c", "printf '> '; sleep 600"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.WakeTerminal(f.ctx, "bot", localapi.TerminalRequest{Socket: pane.Socket, Pane: pane.ID, Prompt: "> ", Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 20*time.Second, f.routes("terminal"), "the terminal route")
	if err := f.s.ForgetTerminal(f.ctx, "bot"); err != nil {
		t.Fatal(err)
	}
	if kept, _ := f.terms.Terminals(); len(kept) != 1 || !kept[0].Ended {
		t.Fatalf("the kept route is not marked ended: %+v", kept)
	}
	for _, w := range f.s.WakeStatus(f.ctx) {
		if w.Agent == "bot" && slices.Contains(w.Routes, localapi.WakeTerminal) {
			t.Fatalf("the terminal route still runs: %+v", w)
		}
	}
	// The pane still runs its program, but a restart does not take it up.
	rebind := func(context.Context, string) (string, error) {
		t.Error("rebound the route of an agent the user ended")
		return "bot", nil
	}
	if n, err := f.s.Restore(f.ctx, rebind); err != nil || n != 0 {
		t.Fatalf("restore: %d, %v", n, err)
	}
	if kept, _ := f.terms.Terminals(); len(kept) != 0 {
		t.Fatalf("the ended route is kept after Restore: %+v", kept)
	}
	if l := f.log.lines("not taken up again", "unregistered or killed"); len(l) != 1 {
		t.Fatalf("log: %q\n%s", l, f.log)
	}
}

// agent is bot's registration on the fixture's node; ok is false once it
// is gone (swept, unregistered).
func (f *fixture) agent() (agents.Info, bool) {
	for _, a := range f.n.Agents().List() {
		if a.Name == "bot" {
			return a, true
		}
	}
	return agents.Info{}, false
}

// A terminal agent stays registered while its pane lives, also while a
// paste waits for it (a person's draft at its prompt, or its program busy)
// longer than its TTL: the heartbeat does not wait for the paste. So what it
// was not brought in time is told to its human on a live agent (`parley
// who` marks it NOT REACHED), and later asks to it are taken.
func TestTerminalAgentStaysWhileAPasteWaits(t *testing.T) {
	needTmux(t)
	f := newFixture(t, 3*time.Second, heartbeaten)
	// A TTL well under the limit: a heartbeat that waited for the paste
	// would let the agent be swept.
	if _, err := f.n.Agents().Register(f.ctx, agents.RegisterRequest{Name: "bot", Session: "s1", TTLSeconds: 1}); err != nil {
		t.Fatal(err)
	}
	ta := f.fakeAgent("60") // a minute's work on each line
	// Polls until the human is told of n items, failing if the agent is
	// dropped meanwhile.
	told := func(n int) {
		t.Helper()
		nodetest.WaitFor(t, 20*time.Second, func() bool {
			if _, ok := f.agent(); !ok {
				t.Fatalf("the agent was dropped while a paste waited for it\n%s", f.log)
			}
			return f.unreached(n)()
		}, "the human to be told of %d items", n)
	}

	// Someone types at the prompt: the paste waits past the TTL.
	ta.keys("-l", "half a thought")
	f.ask("are you there?")
	told(1)
	// The paste gives up at the same limit the human is told at: either
	// may come first.
	pasteLogged := func(why string) {
		t.Helper()
		nodetest.WaitFor(t, 10*time.Second, func() bool { return len(f.log.lines("wake text not pasted", why)) > 0 }, "the paste to be logged as not made (%s)\n%s", why, f.log)
	}
	pasteLogged("someone is typing")
	if l := f.log.lines("wake text not pasted", "someone is typing"); len(l) != 1 {
		t.Fatalf("log: %q\n%s", l, f.log)
	}
	// The draft goes, the program works: a new ask is taken, waits past
	// the TTL, and is told too.
	// One send-keys: two would leave the prompt empty between them, long
	// enough under load for the first ask to be pasted again.
	ta.keys("C-u", "be busy", "Enter")
	nodetest.WaitFor(t, 10*time.Second, func() bool { b, _ := os.ReadFile(ta.taken); return string(b) == "be busy\n" }, "the agent to take its line")
	if _, err := f.n.Inbox().Ask(f.ctx, "human", localapi.AskRequest{Room: f.room, Text: "still there?", To: "bot"}); err != nil {
		t.Fatalf("an ask to the busy agent: %v", err)
	}
	told(2)
	pasteLogged("busy")
	if l := f.log.lines("wake text not pasted", "busy"); len(l) != 1 {
		t.Fatalf("log: %q\n%s", l, f.log)
	}
	if b, _ := os.ReadFile(ta.taken); string(b) != "be busy\n" {
		t.Fatalf("pasted over a draft or into a busy program: %q", b)
	}
}

// A terminal agent's registration shows what its screen shows, as `parley
// who` and `agent list` give it: busy while its program works or a person
// types at its prompt, idle back at its empty prompt.
func TestTerminalAgentStateFromItsScreen(t *testing.T) {
	needTmux(t)
	f := newFixture(t, time.Hour, heartbeaten)
	ta := f.fakeAgent("2")
	state := func(want string) func() bool {
		return func() bool { a, ok := f.agent(); return ok && a.State == want }
	}
	ta.keys("-l", "half a thought")
	nodetest.WaitFor(t, 10*time.Second, state("busy"), "the agent to show busy with a draft at its prompt")
	ta.keys("C-u")
	nodetest.WaitFor(t, 10*time.Second, state("idle"), "the agent to show idle at its empty prompt")
	ta.keys("be busy", "Enter")
	nodetest.WaitFor(t, 10*time.Second, state("busy"), "the agent to show busy while it works")
	// Its two seconds of work done, it is back at its prompt.
	nodetest.WaitFor(t, 10*time.Second, state("idle"), "the agent to show idle once its work is done")
}

// A terminal agent whose registration goes while its pane lives (swept
// after a stall of the node, or unregistered under it) is registered again
// by its route, as the MCP server and `parley codex` bind again: asks to it
// are taken, not refused until the node restarts.
func TestTerminalAgentRegisteredAgainWhileItsPaneLives(t *testing.T) {
	needTmux(t)
	f := newFixture(t, time.Hour, heartbeaten)
	f.fakeAgent("2")
	nodetest.WaitFor(t, 10*time.Second, func() bool { a, ok := f.agent(); return ok && a.State == "idle" }, "the agent to show idle")
	if err := f.n.Agents().Unregister(f.ctx, "bot"); err != nil { // as a sweep does
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 10*time.Second, func() bool { _, ok := f.agent(); return ok }, "the agent to be registered again (route %v)\n%s", f.status().Routes, f.log)
	// The registration shows before the route logs it: wait for the line.
	nodetest.WaitFor(t, 10*time.Second, func() bool {
		return len(f.log.lines("terminal agent registered again", "agent=bot")) > 0
	}, "the route to log the agent registered again\n%s", f.log)
	if l := f.log.lines("terminal agent registered again", "agent=bot"); len(l) != 1 {
		t.Fatalf("log: %q\n%s", l, f.log)
	}
	// Its state is sent again to the new registration.
	nodetest.WaitFor(t, 10*time.Second, func() bool { a, ok := f.agent(); return ok && a.State == "idle" }, "the agent to show idle again")
	if _, err := f.n.Inbox().Ask(f.ctx, "human", localapi.AskRequest{Room: f.room, Text: "back?", To: "bot"}); err != nil {
		t.Fatalf("an ask to the agent registered again: %v", err)
	}
}

// When the session of a terminal agent takes another name (a parley mcp in
// its pane renames it), the old name goes with it: the pane's route moves
// to the new name, kept for restarts under it.
func TestTerminalRouteMovesToItsSessionsNewName(t *testing.T) {
	needTmux(t)
	f := newFixture(t, time.Hour, heartbeaten)
	ta := f.fakeAgent("2")
	if _, err := f.n.Agents().Session(f.ctx, agents.SessionRequest{Session: "s1", Name: "bot2", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	moved := func() bool {
		var routes []string
		for _, w := range f.s.WakeStatus(f.ctx) {
			routes = append(routes, w.Agent+":"+strings.Join(w.Routes, ","))
		}
		kept, _ := f.terms.Terminals()
		return slices.Equal(routes, []string{"bot2:terminal"}) && len(kept) == 1 && kept[0].Agent == "bot2" && kept[0].Pane == ta.pane.ID
	}
	nodetest.WaitFor(t, 10*time.Second, moved, "the route to move to bot2\n%s", f.log)
	if _, ok := f.agent(); ok {
		t.Fatal("the old name was registered again")
	}
}

// heartbeaten has the service heartbeat bot on the fixture's node (as the
// node does), looking at its pane every 50 ms and beating every 200 ms.
func heartbeaten(f *fixture, c *wake.Config) {
	c.PaneCheck = 50 * time.Millisecond
	c.HeartbeatEvery = 200 * time.Millisecond
	c.Heartbeat = wake.AgentHeartbeat(f.n.Agents())
	c.Rebind = func(ctx context.Context, session string) (string, error) {
		info, err := f.n.Agents().Session(ctx, agents.SessionRequest{Session: session, Client: "terminal", TTLSeconds: 60})
		return info.Name, err
	}
	c.SessionAgent = func(_ context.Context, session string) (string, error) { return f.n.Agents().SessionName(session) }
}

// fakeTerm is tmux/testdata/fakeagent.sh in a pane of a tmux server of the
// test's own, bound as bot's terminal route.
type fakeTerm struct {
	t     *testing.T
	srv   tmux.Server
	pane  tmux.Pane
	taken string // the lines it took
}

// fakeAgent starts the fake agent, working work seconds on each line, and
// binds it as bot's terminal route once its prompt shows.
func (f *fixture) fakeAgent(work string) fakeTerm {
	f.t.Helper()
	ta := f.fakePane(work)
	f.bind(ta)
	return ta
}

// bind makes the fake agent's pane bot's terminal route.
func (f *fixture) bind(ta fakeTerm) {
	f.t.Helper()
	if err := f.s.WakeTerminal(f.ctx, "bot", localapi.TerminalRequest{Socket: ta.pane.Socket, Pane: ta.pane.ID, Prompt: "> ", Session: "s1"}); err != nil {
		f.t.Fatal(err)
	}
}

// fakePane starts the fake agent, working work seconds on each line, and
// waits for its prompt.
func (f *fixture) fakePane(work string) fakeTerm {
	t := f.t
	t.Helper()
	ta := fakeTerm{t: t, srv: tmux.Server{Name: fmt.Sprintf("parley-wake-test-%d-%d", os.Getpid(), time.Now().UnixNano()), Config: "/dev/null"},
		taken: filepath.Join(t.TempDir(), "taken")}
	t.Cleanup(func() { ta.srv.KillServer(context.Background()) }) //nolint:errcheck // gone already is fine
	script, err := filepath.Abs(filepath.Join("tmux", "testdata", "fakeagent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	ta.pane, err = ta.srv.Start(f.ctx, tmux.StartOptions{Command: []string{script}, Env: []string{"FAKE_LOG=" + ta.taken, "FAKE_WORK=" + work, "INPUTRC=/dev/null"}})
	if err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		sc, err := ta.srv.Capture(f.ctx, ta.pane.ID)
		return err == nil && sc.CursorLine() == ">"
	}, "the agent's prompt")
	return ta
}

// keys types into the pane (tmux send-keys).
func (ta fakeTerm) keys(keys ...string) {
	ta.t.Helper()
	ta.tmux(append([]string{"send-keys", "-t", ta.pane.ID}, keys...)...)
}

// tmux runs a tmux command on the fake agent's server.
func (ta fakeTerm) tmux(args ...string) {
	ta.t.Helper()
	args = append([]string{"-L", ta.srv.Name, "-f", "/dev/null"}, args...)
	if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		ta.t.Fatalf("tmux %s: %v %s", args[3], err, out)
	}
}

// beats counts the calls to Config.Heartbeat, after the option that set
// it, and gives each to seen when not nil.
type beats struct {
	n    atomic.Int64
	seen func(state string) error
}

func (b *beats) count(f *fixture, c *wake.Config) {
	hb := c.Heartbeat
	c.Heartbeat = func(ctx context.Context, agent, session, state string) error {
		b.n.Add(1)
		if b.seen != nil {
			return b.seen(state)
		}
		return hb(ctx, agent, session, state)
	}
}

// A terminal route beats at its first look, not a heartbeat period after
// the route is made: `parley run` registers the agent before it learns the
// prompt, which may take longer than the agent's TTL.
func TestTerminalRouteBeatsAtItsFirstLook(t *testing.T) {
	needTmux(t)
	b := &beats{}
	f := newFixture(t, time.Hour, heartbeaten, func(f *fixture, c *wake.Config) { c.HeartbeatEvery = time.Hour }, b.count)
	ta := f.fakePane("2")
	ta.tmux("copy-mode", "-t", ta.pane.ID) // its screen tells nothing: no beat for a state
	f.bind(ta)
	nodetest.WaitFor(t, 10*time.Second, func() bool { return b.n.Load() >= 1 }, "a heartbeat")
}

// A beat that fails (with a state to send) is tried again at the next
// heartbeat period, not at every look at the pane.
func TestTerminalBeatThatFailsWaitsForTheNextPeriod(t *testing.T) {
	needTmux(t)
	var states sync.Map
	b := &beats{seen: func(state string) error { states.Store(state, true); return errors.New("the node is busy") }}
	f := newFixture(t, time.Hour, heartbeaten, func(f *fixture, c *wake.Config) { c.HeartbeatEvery = time.Hour }, b.count)
	f.fakeAgent("2")
	nodetest.WaitFor(t, 10*time.Second, func() bool { return b.n.Load() >= 1 }, "a heartbeat")
	// Looks every 50 ms: a beat tried again at each would be many.
	if nodetest.Poll(2*time.Second, func() bool { return b.n.Load() > 1 }) {
		t.Fatalf("a failed heartbeat was tried again before its period: %d beats", b.n.Load())
	}
}

// A tmux that does not answer does not hold the heartbeat back (the
// agent's TTL would run out): a look at the pane runs out, and tells
// nothing; the route stays.
func TestTerminalRouteBeatsWhileTmuxHangs(t *testing.T) {
	needTmux(t)
	hang := filepath.Join(t.TempDir(), "hang")
	bin, _ := tmuxWrapper(t, "[ -e '"+hang+"' ] && hang")
	b := &beats{}
	f := newFixture(t, time.Hour, heartbeaten, func(f *fixture, c *wake.Config) { c.TmuxBin = bin }, b.count)
	f.fakeAgent("2")
	nodetest.WaitFor(t, 10*time.Second, func() bool { a, ok := f.agent(); return ok && a.State == "idle" }, "the agent to show idle")
	if err := os.WriteFile(hang, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	from := b.n.Load()
	nodetest.WaitFor(t, 20*time.Second, func() bool { return b.n.Load() >= from+4 }, "heartbeats while tmux hangs\n%s", f.log)
	if len(f.log.lines("tmux did not answer")) == 0 {
		t.Fatalf("no look ran out:\n%s", f.log)
	}
	if _, ok := f.agent(); !ok || !f.routes(localapi.WakeTerminal)() {
		t.Fatalf("registered %v, routes %v, while tmux hung\n%s", ok, f.status().Routes, f.log)
	}
	if err := os.Remove(hang); err != nil {
		t.Fatal(err)
	}
}

// The user ends a terminal agent (`parley agent unregister`: the node
// forgets its route, then unregisters it): a beat of the route at that
// moment must not find the agent unregistered and bind its session again.
// ForgetTerminal returns once the route's watcher has stopped.
func TestForgottenTerminalRouteDoesNotRegisterItsAgentAgain(t *testing.T) {
	needTmux(t)
	f := newFixture(t, time.Hour, heartbeaten, func(f *fixture, c *wake.Config) {
		c.PaneCheck = 5 * time.Millisecond
		c.HeartbeatEvery = time.Millisecond
	})
	ta := f.fakePane("2")
	hits, tries := 0, 150
	for range tries {
		if _, err := f.n.Agents().Session(f.ctx, agents.SessionRequest{Session: "s1", Client: "terminal", TTLSeconds: 60}); err != nil {
			t.Fatal(err)
		}
		f.bind(ta)
		nodetest.Poll(30*time.Millisecond, func() bool { return false })
		if err := f.s.ForgetTerminal(f.ctx, "bot"); err != nil {
			t.Fatal(err)
		}
		if err := f.n.Agents().Unregister(f.ctx, "bot"); err != nil {
			t.Fatal(err)
		}
		nodetest.Poll(30*time.Millisecond, func() bool { return false })
		if _, ok := f.agent(); ok {
			hits++
		}
	}
	if hits > 0 {
		t.Fatalf("%d of %d ended agents were registered again\n%s", hits, tries, f.log)
	}
}

func needTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is not installed (.ci/run installs it)")
		}
		t.Skip("tmux is not installed")
	}
}

// A tmux that hangs while a child of its own holds its output (a wrapper
// script that does not exec tmux): the look still runs out, and the agent
// is still heartbeaten. Before, only the wrapper was killed, and the look
// waited for the child's end of the pipe for good.
func TestTerminalRouteBeatsWhileATmuxWrapperHangs(t *testing.T) {
	needTmux(t)
	dir := t.TempDir()
	hang := filepath.Join(dir, "hang")
	bin := filepath.Join(dir, "tmux")
	// No exec: sh waits for sleep, and sleep holds sh's output.
	script := "#!/bin/sh\nif [ -e '" + hang + "' ]; then sleep 600 & echo $! >> '" + hang + ".pids'; wait; exit 0; fi\nexec tmux \"$@\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b := &beats{}
	f := newFixture(t, time.Hour, heartbeaten, func(f *fixture, c *wake.Config) { c.TmuxBin = bin }, b.count)
	f.fakeAgent("2")
	nodetest.WaitFor(t, 10*time.Second, func() bool { a, ok := f.agent(); return ok && a.State == "idle" }, "the agent to show idle")
	if err := os.WriteFile(hang, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.Remove(hang)
		raw, _ := os.ReadFile(hang + ".pids")
		for _, l := range strings.Fields(string(raw)) {
			if pid, err := strconv.Atoi(l); err == nil {
				syscall.Kill(pid, syscall.SIGKILL) //nolint:errcheck // already gone is fine
			}
		}
	})
	from := b.n.Load()
	if !nodetest.Poll(20*time.Second, func() bool { return b.n.Load() >= from+4 }) {
		t.Fatalf("%d beats in 20 s while a tmux wrapper hung; looks that ran out: %d\n%s", b.n.Load()-from, len(f.log.lines("tmux did not answer")), f.log)
	}
}

// The pane's registration went (swept), and another session took the name
// before the pane's next beat: the route does not beat that session's
// agent (keeping it past its TTL, its asks pasted into this pane); once
// that session's TTL has run out, the pane's session gets its name back.
func TestTerminalRouteDoesNotBeatAnotherSessionsAgent(t *testing.T) {
	needTmux(t)
	f := newFixture(t, time.Hour, heartbeaten)
	f.fakeAgent("2")
	nodetest.WaitFor(t, 10*time.Second, func() bool { a, ok := f.agent(); return ok && a.State == "idle" }, "the agent to show idle")
	if err := f.n.Agents().Unregister(f.ctx, "bot"); err != nil { // swept
		t.Fatal(err)
	}
	// An MCP session takes the free name with a short TTL and goes away
	// without unregistering.
	if _, err := f.n.Agents().Session(f.ctx, agents.SessionRequest{Session: "mcp-other", Name: "bot", Client: "mcp", TTLSeconds: 2}); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 10*time.Second, func() bool { a, ok := f.agent(); return ok && a.Session == "s1" },
		"the pane's session to get its name back after the other session's TTL (2 s)\n%s", f.log)
}

// tmuxWrapper writes a tmux wrapper script, body followed by `exec tmux
// "$@"`, into a folder of its own, and returns its path and the folder's.
// body may call hang, which does not return: it stands for a tmux that does
// not answer. Each tmux call runs as the leader of a process group of its
// own (tmux.Server); a call that still hangs when the test ends (it failed,
// or ended, before the service's time limit killed the call) is killed
// then, its whole group, so that nothing of it outlives the test. A
// process is taken for one of these only while its command line still
// names the wrapper's folder.
func tmuxWrapper(t *testing.T, body string) (bin, dir string) {
	t.Helper()
	dir = t.TempDir()
	bin, pids := filepath.Join(dir, "tmux"), filepath.Join(dir, "pids")
	script := "#!/bin/sh\nhang() { echo $$ >> '" + pids + "'; exec sh -c 'sleep 600; :' '" + dir + "'; }\n" + body + "\nexec tmux \"$@\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		raw, _ := os.ReadFile(pids)
		for _, f := range strings.Fields(string(raw)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if err != nil || !bytes.Contains(cmdline, []byte(dir)) {
				continue // ended (or no /proc to tell)
			}
			syscall.Kill(-pid, syscall.SIGKILL) //nolint:errcheck // ended meanwhile is fine
		}
	})
	return bin, dir
}

// inspectHook is a tmux that runs hook (a shell snippet) before a pane's
// bare check (list-panes without capture-pane: Inspect, as WakeTerminal
// and a move make; a route's look captures the screen too) while the file
// armed exists. The snippet has $1 $2 (-S SOCKET), the file's path in $f
// and its content in $arg.
func inspectHook(t *testing.T, hook string) (bin, armed string) {
	t.Helper()
	armed = filepath.Join(t.TempDir(), "armed")
	bin, _ = tmuxWrapper(t, "f='"+armed+"'\nif [ -e \"$f\" ]; then\n  case \" $* \" in\n  *\" capture-pane \"*) ;;\n"+
		"  *\" list-panes \"*) arg=$(cat \"$f\"); "+hook+" ;;\n  esac\nfi")
	return bin, armed
}

// letGo has TerminalGone unregister the agent when the route's session
// still holds it, as the node's does.
func letGo(f *fixture, c *wake.Config) {
	c.TerminalGone = func(ctx context.Context, agent, session string) {
		for _, a := range f.n.Agents().List() {
			if a.Name == agent && session != "" && a.Session == session {
				f.n.Agents().Unregister(ctx, agent) //nolint:errcheck // swept meanwhile is fine
			}
		}
	}
}

// registered reports whether name is registered on the fixture's node.
func (f *fixture) registered(name string) bool {
	for _, a := range f.n.Agents().List() {
		if a.Name == name {
			return true
		}
	}
	return false
}

// routesByAgent lists the service's routes as agent:kind,kind….
func (f *fixture) routesByAgent() []string {
	var out []string
	for _, w := range f.s.WakeStatus(f.ctx) {
		if len(w.Routes) > 0 {
			out = append(out, w.Agent+":"+strings.Join(w.Routes, ","))
		}
	}
	return out
}

// kept is the kept terminal routes, by agent.
func (f *fixture) kept() map[string]wake.Saved {
	saved, _ := f.terms.Terminals()
	out := map[string]wake.Saved{}
	for _, s := range saved {
		out[s.Agent] = s
	}
	return out
}

// The session of a terminal agent takes another name, and the pane closes
// just as its route moves there: nothing is left behind, neither the old
// name's route and kept record (before, they stayed, and nothing beat the
// new name, which was swept a minute later) nor the new name, which the
// pane's session held for it.
func TestTerminalRouteMoveToAClosedPaneLeavesNothing(t *testing.T) {
	needTmux(t)
	// The pane closes at the move's check of it (once).
	bin, armed := inspectHook(t, `rm -f "$f"; tmux "$1" "$2" kill-pane -t "$arg"`)
	f := newFixture(t, time.Hour, heartbeaten, letGo, func(f *fixture, c *wake.Config) { c.TmuxBin = bin })
	ta := f.fakeAgent("2")
	nodetest.WaitFor(t, 10*time.Second, func() bool { a, ok := f.agent(); return ok && a.State == "idle" }, "the agent to show idle")
	if err := os.WriteFile(armed, []byte(ta.pane.ID), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.n.Agents().Session(f.ctx, agents.SessionRequest{Session: "s1", Name: "bot2", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 10*time.Second, func() bool { _, err := os.Stat(armed); return err != nil }, "the move to look at the pane")
	nodetest.WaitFor(t, 10*time.Second, func() bool {
		return len(f.routesByAgent()) == 0 && len(f.kept()) == 0 && !f.registered("bot") && !f.registered("bot2")
	}, "no route, no kept record, no agent left (routes %v, kept %v)\n%s", f.routesByAgent(), f.kept(), f.log)
	if l := f.log.lines("terminal wake-up route gone", "agent=bot ", ta.pane.ID); len(l) != 1 {
		t.Fatalf("log: %q\n%s", l, f.log)
	}
}

// The pane's session takes a name whose terminal route is another
// session's pane, still running (its registration had lapsed): that pane
// keeps the route and its kept record (before, the move replaced them
// without a word), and the moving pane's route ends with a warning.
func TestTerminalRouteMoveKeepsAnotherLivePanesRoute(t *testing.T) {
	needTmux(t)
	f := newFixture(t, time.Hour, heartbeaten)
	f.fakeAgent("2")
	tb := f.fakePane("2")
	if _, err := f.n.Agents().Session(f.ctx, agents.SessionRequest{Session: "s2", Name: "bot2", Client: "terminal", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.WakeTerminal(f.ctx, "bot2", localapi.TerminalRequest{Socket: tb.pane.Socket, Pane: tb.pane.ID, Prompt: "> ", Session: "s2"}); err != nil {
		t.Fatal(err)
	}
	// bot2's registration lapses, and s1 takes the name.
	f.takeName("s1", "bot2")
	nodetest.WaitFor(t, 10*time.Second, func() bool { _, ok := f.kept()["bot"]; return !ok && !f.routes(localapi.WakeTerminal)() },
		"bot's route to end (routes %v, kept %v)\n%s", f.routesByAgent(), f.kept(), f.log)
	if got, kept := f.routesByAgent(), f.kept(); !slices.Equal(got, []string{"bot2:terminal"}) || len(kept) != 1 || kept["bot2"].Socket != tb.pane.Socket {
		t.Fatalf("routes %v, kept %+v: bot2's route is not its own pane on %s any more\n%s", got, kept, tb.pane.Socket, f.log)
	}
	if l := f.log.lines("level=WARN", "not moved", "no longer woken", "agent=bot ", tb.pane.Socket, "still runs"); len(l) != 1 {
		t.Fatalf("log: %q\n%s", l, f.log)
	}

}

// takeName has session take name, which a terminal route of another
// session renews: its registration is dropped (as a sweep does), and the
// session takes the name before that route binds it again (a beat of it
// may win: it tries again).
func (f *fixture) takeName(session, name string) {
	f.t.Helper()
	nodetest.WaitFor(f.t, 10*time.Second, func() bool {
		if err := f.n.Agents().Unregister(f.ctx, name); err != nil && !errors.Is(err, agents.ErrUnknownAgent) {
			f.t.Fatal(err)
		}
		_, err := f.n.Agents().Session(f.ctx, agents.SessionRequest{Session: session, Name: name, TTLSeconds: 600})
		if err != nil && !errors.Is(err, agents.ErrNameTaken) {
			f.t.Fatal(err)
		}
		return err == nil
	}, "%s to take the name %s", session, name)
}

// A move to a name whose route is another session's pane that is gone
// replaces that route at once, though the route's own looks have not
// seen it go (here they hang).
func TestTerminalRouteMoveReplacesAClosedPanesRoute(t *testing.T) {
	needTmux(t)
	armed := filepath.Join(t.TempDir(), "armed")
	// Screen captures on the socket named in armed hang.
	bin, _ := tmuxWrapper(t, "f='"+armed+"'\nif [ -e \"$f\" ] && [ \"$2\" = \"$(cat \"$f\")\" ]; then\n  case \" $* \" in *\" capture-pane \"*) hang ;; esac\nfi")
	f := newFixture(t, time.Hour, heartbeaten, func(f *fixture, c *wake.Config) { c.TmuxBin = bin })
	ta := f.fakeAgent("2")
	tb := f.fakePane("2")
	if _, err := f.n.Agents().Session(f.ctx, agents.SessionRequest{Session: "s2", Name: "bot2", Client: "terminal", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.WakeTerminal(f.ctx, "bot2", localapi.TerminalRequest{Socket: tb.pane.Socket, Pane: tb.pane.ID, Prompt: "> ", Session: "s2"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(armed, []byte(tb.pane.Socket), 0o600); err != nil {
		t.Fatal(err)
	}
	tb.tmux("kill-pane", "-t", tb.pane.ID)
	f.takeName("s1", "bot2")
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		return slices.Equal(f.routesByAgent(), []string{"bot2:terminal"}) && len(f.kept()) == 1 && f.kept()["bot2"].Socket == ta.pane.Socket
	}, "the route to move to bot2 (routes %v, kept %v)\n%s", f.routesByAgent(), f.kept(), f.log)
	// Replaced by the move, not dropped by its own look first.
	if len(f.log.lines("not moved")) != 0 || len(f.log.lines("route gone", "agent=bot2")) != 0 {
		t.Fatalf("log:\n%s", f.log)
	}
}

// A tmux that does not answer when a route moves to its session's new
// name (its check of the pane) does not hold the route: the check runs out
// as a look does, the route stays and beats on, and the move is made at a
// later beat once tmux answers (before, the check waited for tmux for
// good, and with it the heartbeat).
func TestTerminalRouteMoveWhileTmuxHangs(t *testing.T) {
	needTmux(t)
	bin, armed := inspectHook(t, `hang`)
	b := &beats{}
	f := newFixture(t, time.Hour, heartbeaten, func(f *fixture, c *wake.Config) { c.TmuxBin = bin }, b.count)
	ta := f.fakeAgent("2")
	nodetest.WaitFor(t, 10*time.Second, func() bool { a, ok := f.agent(); return ok && a.State == "idle" }, "the agent to show idle")
	if err := os.WriteFile(armed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.n.Agents().Session(f.ctx, agents.SessionRequest{Session: "s1", Name: "bot2", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool { return len(f.log.lines("not moved", "tries again", "did not answer")) > 0 },
		"the move's check of the pane to run out\n%s", f.log)
	from := b.n.Load()
	nodetest.WaitFor(t, 20*time.Second, func() bool { return b.n.Load() >= from+2 }, "beats after the move ran out\n%s", f.log)
	if got := f.routesByAgent(); !slices.Equal(got, []string{"bot:terminal"}) {
		t.Fatalf("routes while tmux hangs: %v\n%s", got, f.log)
	}
	if err := os.Remove(armed); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		return slices.Equal(f.routesByAgent(), []string{"bot2:terminal"}) && len(f.kept()) == 1 && f.kept()["bot2"].Socket == ta.pane.Socket
	}, "the route to move to bot2 once tmux answers (routes %v, kept %v)\n%s", f.routesByAgent(), f.kept(), f.log)
}

// Restore does not wait for good for a tmux that does not answer: its
// check of a kept pane runs out as a route's look does, it tries again a
// few times, and then the route is kept for the next start, its agent not
// let go (before, Restore waited for tmux for good, and the routes after
// it with it).
func TestRestoreWhileTmuxHangs(t *testing.T) {
	needTmux(t)
	bin, armed := inspectHook(t, `hang`)
	f := newFixture(t, time.Hour, letGo, func(f *fixture, c *wake.Config) {
		c.TmuxBin, c.PaneCheck, c.RestoreRetry = bin, 50*time.Millisecond, 50*time.Millisecond
	})
	ta := f.fakeAgent("2")
	if err := os.WriteFile(armed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	type restored struct {
		n   int
		err error
	}
	done := make(chan restored, 1)
	go func() {
		n, err := f.s.Restore(f.ctx, func(context.Context, string) (string, error) { return "bot", nil })
		done <- restored{n, err}
	}()
	select {
	case r := <-done:
		if r.n != 0 || r.err != nil {
			t.Fatalf("restore: %d, %v", r.n, r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("Restore waited 20 s for a tmux that does not answer\n%s", f.log)
	}
	if kept := f.kept(); kept["bot"].Pane != ta.pane.ID || kept["bot"].Socket != ta.pane.Socket {
		t.Fatalf("kept: %+v", kept)
	}
	if !f.registered("bot") {
		t.Fatal("the agent was let go")
	}
	if l := f.log.lines("not taken up again now", "did not answer", "kept for the next start"); len(l) != 1 {
		t.Fatalf("log: %q\n%s", l, f.log)
	}
	if l := f.log.lines("not taken up again yet", "did not answer", "tries again"); len(l) != 4 {
		t.Fatalf("log: %q\n%s", l, f.log)
	}
}

// A tmux that does not answer at start, and answers later: Restore tries
// the route again while the node runs, and takes it up once tmux answers
// (before, it was kept for the next start only, and its agent, beaten by
// nothing, was swept a minute later, its asks refused until the node
// restarted).
func TestRestoreTriesAgainOnceTmuxAnswers(t *testing.T) {
	needTmux(t)
	bin, armed := inspectHook(t, `hang`)
	f := newFixture(t, time.Hour, letGo, func(f *fixture, c *wake.Config) {
		c.TmuxBin, c.PaneCheck, c.RestoreRetry = bin, 50*time.Millisecond, 300*time.Millisecond
	})
	ta := f.fakePane("2")
	if err := f.terms.SaveTerminal(wake.Saved{Agent: "bot", Session: "s1", Socket: ta.pane.Socket, Pane: ta.pane.ID, PID: ta.pane.PID, Prompt: "> "}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(armed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	type restored struct {
		n   int
		err error
	}
	done := make(chan restored, 1)
	go func() {
		n, err := f.s.Restore(f.ctx, func(ctx context.Context, session string) (string, error) {
			info, err := f.n.Agents().Session(ctx, agents.SessionRequest{Session: session, Client: "terminal", TTLSeconds: 60})
			return info.Name, err
		})
		done <- restored{n, err}
	}()
	nodetest.WaitFor(t, 20*time.Second, func() bool { return len(f.log.lines("not taken up again", "did not answer")) > 0 }, "a check to run out\n%s", f.log)
	if err := os.Remove(armed); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.n != 1 || r.err != nil {
			t.Fatalf("restore: %d, %v\n%s", r.n, r.err, f.log)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Restore did not return\n%s", f.log)
	}
	if got := f.routesByAgent(); !slices.Equal(got, []string{"bot:terminal"}) || f.keptAt("bot") != "s1 "+ta.pane.Socket || !f.registered("bot") {
		t.Fatalf("routes %v, kept %+v, registered %v\n%s", got, f.kept(), f.registered("bot"), f.log)
	}
}

// A kept route whose session took another name while the node was down,
// and a tmux that answers Restore's check of the pane but not the bind's:
// the route is kept, under its old name, for a later try (before, the old
// record was dropped before the bind, and nothing was kept, though the log
// said the route was).
func TestRestoreKeepsARenamedSessionsRouteWhileTmuxHangs(t *testing.T) {
	needTmux(t)
	dir := t.TempDir()
	armed, n := filepath.Join(dir, "armed"), filepath.Join(dir, "n")
	// The second check of a pane, and every one after it, hangs.
	bin, _ := tmuxWrapper(t, "if [ -e '"+armed+"' ]; then\n  case \" $* \" in *\" capture-pane \"*) ;; *\" list-panes \"*)\n"+
		"    echo x >> '"+n+"'; [ $(wc -l < '"+n+"') -ge 2 ] && hang ;;\n  esac\nfi")
	f := newFixture(t, time.Hour, letGo, func(f *fixture, c *wake.Config) {
		c.TmuxBin, c.PaneCheck, c.RestoreRetry = bin, 50*time.Millisecond, 50*time.Millisecond
	})
	ta := f.fakePane("2")
	if err := f.terms.SaveTerminal(wake.Saved{Agent: "bot", Session: "s1", Socket: ta.pane.Socket, Pane: ta.pane.ID, PID: ta.pane.PID, Prompt: "> "}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(armed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := f.s.Restore(f.ctx, func(context.Context, string) (string, error) { return "bot2", nil })
	if k != 0 || err != nil {
		t.Fatalf("restore: %d, %v", k, err)
	}
	if got := f.kept(); len(got) != 1 || f.keptAt("bot") != "s1 "+ta.pane.Socket {
		t.Fatalf("kept %+v\n%s", got, f.log)
	}
	if l := f.log.lines("not taken up again now", "kept for the next start"); len(l) != 1 {
		t.Fatalf("log: %q\n%s", l, f.log)
	}
}

// A kept route whose session took another name while the node was down,
// and whose pane closes as Restore binds it: the name rebind registered
// goes too (before, only the old name was let go, which the session no
// longer held, and the new one stayed registered until its TTL ran out).
func TestRestoreLetsGoTheNewNameOfARenamedSessionWhosePaneWent(t *testing.T) {
	needTmux(t)
	dir := t.TempDir()
	armed, n, pane := filepath.Join(dir, "armed"), filepath.Join(dir, "n"), filepath.Join(dir, "pane")
	// The second check of the pane closes it first.
	bin, _ := tmuxWrapper(t, "if [ -e '"+armed+"' ]; then\n  case \" $* \" in *\" capture-pane \"*) ;; *\" list-panes \"*)\n"+
		"    echo x >> '"+n+"'; if [ $(wc -l < '"+n+"') -ge 2 ]; then rm -f '"+armed+"'; tmux \"$1\" \"$2\" kill-pane -t \"$(cat '"+pane+"')\"; fi ;;\n  esac\nfi")
	f := newFixture(t, time.Hour, letGo, func(f *fixture, c *wake.Config) { c.TmuxBin = bin })
	ta := f.fakePane("2")
	// A second pane on the same tmux server keeps it running once the
	// first closes.
	ta.tmux("split-window", "-d", "-t", ta.pane.ID, "sleep 600")
	if err := f.terms.SaveTerminal(wake.Saved{Agent: "bot", Session: "s1", Socket: ta.pane.Socket, Pane: ta.pane.ID, PID: ta.pane.PID, Prompt: "> "}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pane, []byte(ta.pane.ID), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(armed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := f.s.Restore(f.ctx, func(ctx context.Context, session string) (string, error) {
		info, err := f.n.Agents().Session(ctx, agents.SessionRequest{Session: session, Name: "bot2", Client: "terminal", TTLSeconds: 600})
		return info.Name, err
	})
	if k != 0 || err != nil {
		t.Fatalf("restore: %d, %v\n%s", k, err, f.log)
	}
	if len(f.kept()) != 0 || f.registered("bot") || f.registered("bot2") {
		t.Fatalf("kept %+v, bot registered %v, bot2 registered %v\n%s", f.kept(), f.registered("bot"), f.registered("bot2"), f.log)
	}
}

// A text pasted whole just as its route is replaced (the pane bound again)
// is recorded as pasted: it is not handed on, nor is its human told (before,
// the route's end dropped the record, and once the limit had passed the
// human was told of an ask the agent had in its pane).
func TestTerminalPasteAsItsRouteIsReplacedIsRecorded(t *testing.T) {
	needTmux(t)
	dir := t.TempDir()
	armed, reached, release := filepath.Join(dir, "armed"), filepath.Join(dir, "reached"), filepath.Join(dir, "release")
	// The Enter after a paste waits for release (Deliver sends it whatever
	// becomes of the route, within a time limit). The wrapper's folder is
	// in its command line: a wait the test leaves behind is killed.
	bin, _ := tmuxWrapper(t, "if [ -e '"+armed+"' ]; then\n  case \" $* \" in *\" set-buffer \"*)\n"+
		"    rm -f '"+armed+"'; : > '"+reached+"'; echo $$ >> \"$(dirname \"$0\")/pids\"; while [ ! -e '"+release+"' ]; do sleep 0.02; done ;;\n  esac\nfi")
	const limit = 2 * time.Second
	f := newFixture(t, limit, func(f *fixture, c *wake.Config) { c.TmuxBin = bin })
	ta := f.fakeAgent("0.05")
	if err := os.WriteFile(armed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	id := f.ask("which port does the shop use?")
	nodetest.WaitFor(t, 20*time.Second, func() bool { _, err := os.Stat(reached); return err == nil }, "the paste\n%s", f.log)
	f.bind(ta) // the route is replaced while its paste's Enter is under way
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool { b, _ := os.ReadFile(ta.taken); return strings.Contains(string(b), id) },
		"the agent to take the pasted ask")
	if nodetest.Poll(3*limit, f.unreached(1)) {
		t.Fatalf("the human was told of an ask pasted whole into the agent's pane\n%s", f.log)
	}
	if b, _ := os.ReadFile(ta.taken); strings.Count(string(b), "which port") != 1 {
		t.Fatalf("the ask was pasted %d times:\n%s", strings.Count(string(b), "which port"), b)
	}
}

// The user ends a terminal agent while tmux hangs on the Enter after a
// paste: ForgetTerminal, which waits for the route to stop, returns once the
// Enter's time limit (a look's) has run out (before, the Enter had none, and
// `agent unregister` failed with a timeout, the agent left registered).
func TestForgetTerminalWhileTmuxHangsOnAnEnter(t *testing.T) {
	needTmux(t)
	dir := t.TempDir()
	armed, reached := filepath.Join(dir, "armed"), filepath.Join(dir, "reached")
	bin, _ := tmuxWrapper(t, "if [ -e '"+armed+"' ]; then\n  case \" $* \" in *\" set-buffer \"*)\n"+
		"    rm -f '"+armed+"'; : > '"+reached+"'; hang ;;\n  esac\nfi")
	f := newFixture(t, time.Hour, func(f *fixture, c *wake.Config) { c.TmuxBin, c.PaneCheck = bin, 50*time.Millisecond })
	f.fakeAgent("0.05")
	if err := os.WriteFile(armed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.ask("which port?")
	nodetest.WaitFor(t, 20*time.Second, func() bool { _, err := os.Stat(reached); return err == nil }, "the paste\n%s", f.log)
	ctx, cancel := context.WithTimeout(f.ctx, 8*time.Second)
	defer cancel()
	start := time.Now()
	if err := f.s.ForgetTerminal(ctx, "bot"); err != nil {
		t.Fatalf("ForgetTerminal while tmux hung on an Enter: %v after %s\n%s", err, time.Since(start).Round(time.Millisecond), f.log)
	}
	if len(f.routesByAgent()) != 0 {
		t.Fatalf("routes: %v", f.routesByAgent())
	}
}

// keptAt is the kept route of name as "SESSION SOCKET" ("" for none).
func (f *fixture) keptAt(name string) string {
	k, ok := f.kept()[name]
	if !ok {
		return ""
	}
	return k.Session + " " + k.Socket
}

// Two terminal agents swap names: B (s2, bot2) takes bot3, then A (s1, bot)
// takes bot2, and A's beat comes first, while B's route still lists under
// bot2. A's move wins, as the registry gave bot2 to A's session: B's
// session left it. B's route moves to bot3 at its own beat (before, A's
// move was refused as if B's pane kept bot2, A's route ended for good,
// and once B moved on, bot2 had no route at all).
func TestTerminalRouteMovesOntoANameAnotherPaneLeft(t *testing.T) {
	needTmux(t)
	var holdB atomic.Bool
	f := newFixture(t, time.Hour, heartbeaten, func(f *fixture, c *wake.Config) {
		hb := c.Heartbeat
		c.Heartbeat = func(ctx context.Context, agent, session, state string) error {
			if session == "s2" && holdB.Load() {
				return nil // B's beat has not come yet
			}
			return hb(ctx, agent, session, state)
		}
	})
	ta := f.fakeAgent("2")
	tb := f.fakePane("2")
	if _, err := f.n.Agents().Session(f.ctx, agents.SessionRequest{Session: "s2", Name: "bot2", Client: "terminal", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.WakeTerminal(f.ctx, "bot2", localapi.TerminalRequest{Socket: tb.pane.Socket, Pane: tb.pane.ID, Prompt: "> ", Session: "s2"}); err != nil {
		t.Fatal(err)
	}
	holdB.Store(true)
	if _, err := f.n.Agents().Session(f.ctx, agents.SessionRequest{Session: "s2", Name: "bot3", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.n.Agents().Session(f.ctx, agents.SessionRequest{Session: "s1", Name: "bot2", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 10*time.Second, func() bool { return !slices.Contains(f.routesByAgent(), "bot:terminal") },
		"A's route to leave bot (routes %v)\n%s", f.routesByAgent(), f.log)
	if got := f.routesByAgent(); !slices.Equal(got, []string{"bot2:terminal"}) || f.keptAt("bot2") != "s1 "+ta.pane.Socket {
		t.Fatalf("before B's beat: routes %v, kept %+v: A's pane is not bot2's route\n%s", got, f.kept(), f.log)
	}
	holdB.Store(false)
	nodetest.WaitFor(t, 10*time.Second, func() bool {
		return slices.Equal(f.routesByAgent(), []string{"bot2:terminal", "bot3:terminal"}) &&
			f.keptAt("bot2") == "s1 "+ta.pane.Socket && f.keptAt("bot3") == "s2 "+tb.pane.Socket
	}, "bot2's route to be A's pane and bot3's B's (routes %v, kept %+v)\n%s", f.routesByAgent(), f.kept(), f.log)
	if l := f.log.lines("level=WARN"); len(l) != 0 {
		t.Fatalf("warnings: %q", l)
	}
}

// The case ErrRouteTaken is for, where what renamed the moving pane's
// session goes on renewing the name, as the `parley mcp` in that pane does
// (its heartbeat checks no session): the name stays that session's, its
// asks are pasted into the other pane, whose route keeps the name's route
// and kept record and cannot bind it back; once the renewal stops, the
// name lapses and the other pane's route binds it back.
func TestTerminalRouteTakenStaysWithItsPaneWhileTheNameIsRenewed(t *testing.T) {
	needTmux(t)
	f := newFixture(t, time.Hour, heartbeaten)
	f.fakeAgent("2")
	tb := f.fakePane("2")
	if _, err := f.n.Agents().Session(f.ctx, agents.SessionRequest{Session: "s2", Name: "bot2", Client: "terminal", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	if err := f.s.WakeTerminal(f.ctx, "bot2", localapi.TerminalRequest{Socket: tb.pane.Socket, Pane: tb.pane.ID, Prompt: "> ", Session: "s2"}); err != nil {
		t.Fatal(err)
	}
	f.takeName("s1", "bot2")
	nodetest.WaitFor(t, 10*time.Second, func() bool { return len(f.log.lines("level=WARN", "not moved", "agent=bot ")) > 0 }, "the refusal\n%s", f.log)
	// The refusal is logged before the moving pane's route ends: wait for
	// it to go.
	nodetest.WaitFor(t, 10*time.Second, func() bool { return !slices.Contains(f.routesByAgent(), "bot:terminal") },
		"the moving pane's route to end (routes %v)\n%s", f.routesByAgent(), f.log)
	// s1's hold on the name gets a TTL of 1 s, renewed every 200 ms as an
	// MCP server's heartbeat would.
	if _, err := f.n.Agents().Session(f.ctx, agents.SessionRequest{Session: "s1", TTLSeconds: 1}); err != nil {
		t.Fatal(err)
	}
	holder := func() string {
		for _, a := range f.n.Agents().List() {
			if a.Name == "bot2" {
				return a.Session
			}
		}
		return ""
	}
	stop := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				f.n.Agents().Heartbeat(f.ctx, "bot2", agents.HeartbeatRequest{}) //nolint:errcheck // a lapse shows below
			}
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-renewed
	}()
	from := len(f.log.lines("not registered again", "agent=bot2"))
	nodetest.WaitFor(t, 10*time.Second, func() bool { return len(f.log.lines("not registered again", "agent=bot2")) >= from+3 },
		"B's route to fail to bind bot2 back, beat after beat\n%s", f.log)
	if h, got := holder(), f.routesByAgent(); h != "s1" || !slices.Equal(got, []string{"bot2:terminal"}) || f.keptAt("bot2") != "s2 "+tb.pane.Socket {
		t.Fatalf("while renewed: bot2 held by %q, routes %v, kept %+v\n%s", h, got, f.kept(), f.log)
	}
	close(stop)
	<-renewed
	nodetest.WaitFor(t, 10*time.Second, func() bool { return holder() == "s2" },
		"B's session to get bot2 back once it lapsed (held by %q)\n%s", holder(), f.log)
}

// The session of a terminal agent takes another name, the route's move
// there runs out (tmux did not answer) and waits to be tried again, and
// the user unregisters the new name: the route goes, and its kept record
// is marked ended; the name is not registered again (before, the route,
// still under the old name, was not dropped, and its next beat bound the
// session, registering the name the user had just unregistered).
func TestForgetTerminalOfTheNameAMoveWaitsFor(t *testing.T) {
	needTmux(t)
	bin, armed := inspectHook(t, `hang`)
	f := newFixture(t, time.Hour, heartbeaten, func(f *fixture, c *wake.Config) { c.TmuxBin = bin })
	ta := f.fakeAgent("2")
	nodetest.WaitFor(t, 10*time.Second, func() bool { a, ok := f.agent(); return ok && a.State == "idle" }, "the agent to show idle")
	if err := os.WriteFile(armed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.n.Agents().Session(f.ctx, agents.SessionRequest{Session: "s1", Name: "bot2", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool { return len(f.log.lines("not moved", "tries again")) > 0 }, "the move to run out\n%s", f.log)
	f.forget("bot2")
	if err := os.Remove(armed); err != nil {
		t.Fatal(err)
	}
	f.staysForgotten("bot2", ta)
}

// As TestForgetTerminalOfTheNameAMoveWaitsFor, with the user's unregister
// coming while the move checks the pane: the move is dropped with its
// route, and saves no kept record of the name.
func TestForgetTerminalOfTheNameAMoveIsUnderWayTo(t *testing.T) {
	needTmux(t)
	dir := t.TempDir()
	reached, release := filepath.Join(dir, "reached"), filepath.Join(dir, "release")
	// The move's check of the pane waits for release (within the check's
	// time limit: 2.5 s).
	bin, armed := inspectHook(t, `rm -f "$f"; : > '`+reached+`'; echo $$ >> "$(dirname "$0")/pids"; while [ ! -e '`+release+`' ]; do sleep 0.05; done`)
	f := newFixture(t, time.Hour, heartbeaten, func(f *fixture, c *wake.Config) { c.TmuxBin, c.PaneCheck = bin, 500*time.Millisecond })
	ta := f.fakeAgent("2")
	nodetest.WaitFor(t, 10*time.Second, func() bool { a, ok := f.agent(); return ok && a.State == "idle" }, "the agent to show idle")
	if err := os.WriteFile(armed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.n.Agents().Session(f.ctx, agents.SessionRequest{Session: "s1", Name: "bot2", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 10*time.Second, func() bool { _, err := os.Stat(reached); return err == nil }, "the move to check the pane\n%s", f.log)
	f.forget("bot2")
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.staysForgotten("bot2", ta)
}

// forget ends name as `parley agent unregister` does: its terminal route
// first, then its registration.
func (f *fixture) forget(name string) {
	f.t.Helper()
	if err := f.s.ForgetTerminal(f.ctx, name); err != nil {
		f.t.Fatal(err)
	}
	if err := f.n.Agents().Unregister(f.ctx, name); err != nil && !errors.Is(err, agents.ErrUnknownAgent) {
		f.t.Fatal(err)
	}
}

// staysForgotten checks that name, just ended by forget, stays so for ten
// heartbeat periods: not registered again, no route, and the pane's kept
// record, if any, marked ended.
func (f *fixture) staysForgotten(name string, ta fakeTerm) {
	f.t.Helper()
	if nodetest.Poll(2*time.Second, func() bool { return f.registered(name) || len(f.routesByAgent()) != 0 }) {
		f.t.Fatalf("after the user ended %s: registered %v, routes %v\n%s", name, f.registered(name), f.routesByAgent(), f.log)
	}
	for a, k := range f.kept() {
		if k.Socket == ta.pane.Socket && !k.Ended {
			f.t.Fatalf("the pane's kept record under %s is not marked ended: %+v\n%s", a, k, f.log)
		}
	}
}

// As TestForgetTerminalOfTheNameAMoveWaitsFor, with the user's unregister
// coming before the route's beat has seen its session take the name (here
// it beats once an hour, after its first look): the route goes all the
// same, as its session is bound to the name.
func TestForgetTerminalOfTheNameARouteHasNotSeenItsSessionTake(t *testing.T) {
	needTmux(t)
	b := &beats{}
	f := newFixture(t, time.Hour, heartbeaten, func(f *fixture, c *wake.Config) { c.HeartbeatEvery = time.Hour }, b.count)
	ta := f.fakeAgent("2")
	nodetest.WaitFor(t, 10*time.Second, func() bool { return b.n.Load() >= 1 }, "the first beat")
	if _, err := f.n.Agents().Session(f.ctx, agents.SessionRequest{Session: "s1", Name: "bot2", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	f.forget("bot2")
	if got := f.routesByAgent(); len(got) != 0 {
		t.Fatalf("routes after the user ended bot2: %v\n%s", got, f.log)
	}
	f.staysForgotten("bot2", ta)
}

// POST …/wake/terminal while tmux does not answer the check of the pane:
// the check runs out as a look does, and the local API's error is a 504
// that says so.
func TestWakeTerminalWhileTmuxHangsIs504(t *testing.T) {
	needTmux(t)
	bin, armed := inspectHook(t, `hang`)
	f := newFixture(t, time.Hour, func(f *fixture, c *wake.Config) { c.TmuxBin, c.PaneCheck = bin, 50*time.Millisecond })
	ta := f.fakePane("2")
	if err := os.WriteFile(armed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := f.s.WakeTerminal(f.ctx, "bot", localapi.TerminalRequest{Socket: ta.pane.Socket, Pane: ta.pane.ID, Prompt: "> ", Session: "s1"})
	var le *localapi.Error
	if !errors.As(err, &le) || le.Status != http.StatusGatewayTimeout || le.Code != localapi.CodeTimeout || !strings.Contains(le.Message, "did not answer") {
		t.Fatalf("WakeTerminal while tmux hangs: %#v", err)
	}
	if got := f.routesByAgent(); len(got) != 0 || len(f.kept()) != 0 {
		t.Fatalf("routes %v, kept %+v", got, f.kept())
	}
}
