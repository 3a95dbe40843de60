package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/wake/appserver"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// `parley codex` with a stand-in app-server: an ask to its agent starts a
// turn on the idle thread; a second ask while that turn runs steers it.
func TestCodexAppServerStartsThenSteers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fake := filepath.Join(dir, "fakeappserver")
	if out, err := exec.Command("go", "build", "-o", fake, "./testdata/fakeappserver").CombinedOutput(); err != nil {
		t.Fatalf("build the fake app-server: %v\n%s", err, out)
	}
	home := filepath.Join(dir, "h")
	up(t, home, "--listen", loopback)
	log := filepath.Join(dir, "turns.log")
	cmd := exec.Command(parleyBin, "--home", home, "codex", "--name", "cx", "--", fake)
	cmd.Env = append(os.Environ(), "FAKE_LOG="+log)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck // it may have exited
		cmd.Wait()         //nolint:errcheck // killed
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, "agent cx") || !strings.Contains(line, "th-fake") {
		t.Fatalf("parley codex: %q %v\n%s", line, err, stderr)
	}
	// The app-server is the agent's client program: what its thread runs
	// is the agent's (parley guard, room log ask the node by process).
	type agentRow struct {
		Name      string `json:"name"`
		ClientPID int    `json:"client_pid"`
	}
	var agents []agentRow
	runJSON(t, &agents, "--home", home, "agent", "list")
	if i := slices.IndexFunc(agents, func(a agentRow) bool { return a.Name == "cx" }); i < 0 || agents[i].ClientPID == 0 {
		t.Fatalf("agent cx does not name its client program's process (the app-server): %+v", agents)
	} else if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", agents[i].ClientPID)); err != nil || exe != fake {
		t.Fatalf("agent cx's client process %d is %q, not the app-server %s (%v)", agents[i].ClientPID, exe, fake, err)
	}
	turns := func() []string {
		b, _ := os.ReadFile(log)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	var room struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &room, "--home", home, "room", "create", "build", "--member", "cx")
	runJSON(t, &struct{}{}, "--home", home, "room", "ask", room.RoomID, "is the build green?", "--to", "cx", "--wait", "0s")
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		ts := turns()
		return len(ts) >= 1 && strings.HasPrefix(ts[0], "start ") && strings.Contains(strings.Join(ts, "\n"), "is the build green?")
	}, "the ask to start a turn (turns: %q; stderr: %s)", turns(), stderr)
	runJSON(t, &struct{}{}, "--home", home, "room", "ask", room.RoomID, "and the deploy?", "--to", "cx", "--wait", "0s")
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		ts := turns()
		return strings.HasPrefix(ts[len(ts)-1], "steer turn-1 ") && strings.Contains(ts[len(ts)-1], "and the deploy?")
	}, "the second ask to steer the running turn")
}

// heldAppServer is a stand-in app-server in the test's process, on pipes:
// it answers each turn/start and turn/steer only once the test lets it
// (release), after showing its input on got, so the route is held while
// it hands a batch to the thread (between two of its waits).
type heldAppServer struct {
	as      *appserver.Client
	got     chan string
	release chan struct{}
}

func newHeldAppServer(t *testing.T) *heldAppServer {
	inR, inW := io.Pipe()   // the client's requests
	outR, outW := io.Pipe() // the server's answers
	h := &heldAppServer{as: appserver.New(outR, inW), got: make(chan string, 16), release: make(chan struct{}, 16)}
	stop := make(chan struct{})
	served := make(chan struct{})
	go func() {
		defer close(served)
		defer outW.Close()
		sc := bufio.NewScanner(inR)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for n := 1; sc.Scan(); n++ {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Input []struct{ Text string } `json:"input"`
				} `json:"params"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil || len(m.Params.Input) == 0 {
				continue
			}
			h.got <- m.Method + " " + m.Params.Input[0].Text
			select {
			case <-h.release:
			case <-stop:
				return
			}
			raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"turn": map[string]any{"id": fmt.Sprintf("turn-%d", n)}}})
			if _, err := outW.Write(append(raw, '\n')); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		inW.Close()
		inR.Close()
		<-served
	})
	return h
}

// codexRoute is an agent cx of Codex thread th-1 on the node of a home,
// whose app-server route (serveAppServer) hands to a held app-server, and
// a room "build" it was invited into (its first hand-out, held).
type codexRoute struct {
	c      *localapi.Client // straight to the node
	h      *heldAppServer
	served chan error // the route's end
	room   string
	ctx    context.Context
}

// startCodexRoute starts the route, through the local API socket via (the
// node's own when empty); the test's end stops it.
func startCodexRoute(t *testing.T, home, via string) *codexRoute {
	t.Helper()
	c := localapi.NewClient(node.SocketPath(home))
	t.Cleanup(func() { c.Close() })
	api := c
	if via != "" {
		api = localapi.NewClient(via)
		t.Cleanup(func() { api.Close() })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	info, err := c.Session(ctx, localapi.SessionRequest{Session: "th-1", Name: "cx", Client: "codex"})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r := &codexRoute{c: c, h: newHeldAppServer(t), served: make(chan error, 1), ctx: ctx}
	sctx, scancel := context.WithCancel(ctx)
	go func() { r.served <- serveAppServer(sctx, api, r.h.as, info, "th-1", 0, io.Discard) }()
	t.Cleanup(func() {
		scancel()
		<-r.served
		cancel()
	})
	var room struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &room, "--home", home, "room", "create", "build", "--member", "cx")
	r.room = room.RoomID
	return r
}

// routes counts cx's app-server routes on the node.
func (r *codexRoute) routes() int {
	st, err := r.c.WakeStatus(r.ctx)
	if err != nil {
		return -1
	}
	k := 0
	for _, s := range st {
		if s.Agent == "cx" {
			for _, rt := range s.Routes {
				if rt == localapi.WakeAppServer {
					k++
				}
			}
		}
	}
	return k
}

// `parley codex`'s route waits in a loop: another parley codex of the
// thread whose waiter registers while the route hands a batch to the
// thread (between two of its waits) takes the route over. The older's next
// wait names its previous answer (After), so the node ends it at once and
// the older ends; the newer keeps the route and is handed the next owed
// item. (Before, the older's next wait took the route back and ended the
// newer.)
func TestCodexRouteEndsWhenSupersededBetweenWaits(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback)
	r := startCodexRoute(t, home, "")
	c, h, served, ctx := r.c, r.h, r.served, r.ctx
	// The older route hands the invitation to the thread, and is held there.
	select {
	case in := <-h.got:
		if !strings.HasPrefix(in, "turn/start ") {
			t.Fatalf("the first hand-out: %q", in)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the invitation was not handed to the thread within 30 s")
	}
	type result struct {
		w   localapi.Wake
		err error
	}
	newer := make(chan result, 1)
	go func() {
		w, err := c.WakeWait(ctx, "cx", localapi.WakeWaitRequest{Kind: localapi.WakeAppServer, Session: "th-1", Seconds: localapi.MaxWait.Seconds()})
		newer <- result{w, err}
	}()
	nodetest.WaitFor(t, 20*time.Second, func() bool { return r.routes() == 1 }, "the newer waiter's route")
	h.release <- struct{}{}
	select {
	case err := <-served:
		if err == nil || !strings.Contains(err.Error(), "took over") {
			t.Fatalf("the older route ended with %v", err)
		}
		served <- err // for the deferred wait
	case nw := <-newer:
		t.Fatalf("the newer waiter was ended by the older route's next wait: %+v %v", nw.w, nw.err)
	case <-time.After(20 * time.Second):
		t.Fatal("the older app-server route waits on after a newer waiter of its thread came between two of its waits")
	}
	if got := r.routes(); got != 1 {
		t.Fatalf("%d app-server routes after the older ended; want the newer's", got)
	}
	runJSON(t, &struct{}{}, "--home", home, "room", "ask", r.room, "is the build green?", "--to", "cx", "--wait", "0s")
	select {
	case nw := <-newer:
		if nw.err != nil || nw.w.Superseded || !slices.ContainsFunc(nw.w.Items, func(it localapi.Item) bool { return it.Kind == "ask" && it.Text == "is the build green?" }) {
			t.Fatalf("the newer waiter for the ask: %+v %v", nw.w, nw.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the newer waiter was not handed the ask within 30 s")
	}
}

// `parley codex`'s route whose wait fails on its side (its connection to
// the node cut while the node held the wait) waits again, naming the same
// previous answer, and goes on: the node does not take the failed wait,
// its own, for another parley codex of the thread. It then hands the next
// owed item to the thread. (Before, its next wait was ended as superseded
// and it exited saying "another parley codex took over this thread".)
func TestCodexRouteGoesOnAfterAFailedWait(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback)
	p := nodetest.Proxy(t, node.SocketPath(home))
	r := startCodexRoute(t, home, p.Path)
	h, served, routes := r.h, r.served, r.routes
	select {
	case in := <-h.got:
		if !strings.HasPrefix(in, "turn/start ") {
			t.Fatalf("the first hand-out: %q", in)
		}
		h.release <- struct{}{}
	case <-time.After(30 * time.Second):
		t.Fatal("the invitation was not handed to the thread within 30 s")
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool { return routes() == 1 }, "the route's second wait")
	// Its second wait fails on its side; the next is held until the node
	// has let the failed one go.
	p.Cut()
	nodetest.WaitFor(t, 20*time.Second, func() bool { return routes() == 0 }, "the failed wait's route to go")
	p.Mend()
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		select {
		case err := <-served:
			served <- err // for the deferred wait
			t.Fatalf("the route ended after its wait failed: %v", err)
		default:
		}
		return routes() == 1
	}, "the route's wait after the failed one")
	runJSON(t, &struct{}{}, "--home", home, "room", "ask", r.room, "still green?", "--to", "cx", "--wait", "0s")
	select {
	case in := <-h.got:
		if !strings.Contains(in, "still green?") {
			t.Fatalf("the hand-out after the failed wait: %q", in)
		}
		h.release <- struct{}{}
	case err := <-served:
		served <- err // for the deferred wait
		t.Fatalf("the route ended after its wait failed: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the ask was not handed to the thread within 30 s of the failed wait")
	}
}
