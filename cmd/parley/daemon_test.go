package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestUpDetached runs the node in the background as a user does: `up -d`
// returns after the ready line, the handle given is saved, a second `up`
// is refused, `down` stops it, and the next `up -d` keeps the handle. On
// the way, texts that hold terminal escapes are shown escaped.
func TestUpDetached(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	out, errs, code := run(t, "--home", home, "up", "-d", "--loopback", "--handle", "alice")
	t.Cleanup(func() { run(t, "--home", home, "down") })
	if code != 0 || !strings.HasPrefix(out, "parley ready ") || !strings.Contains(out, `handle="alice"`) {
		t.Fatalf("up -d: exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "node.log") || !strings.Contains(errs, "down") {
		t.Errorf("up -d does not say where its log is and how to stop it: %q", errs)
	}
	cfg, err := os.ReadFile(filepath.Join(home, "config"))
	if err != nil || !strings.Contains(string(cfg), "\nhandle = alice\n") {
		t.Fatalf("--handle not saved in the config (%v):\n%s", err, cfg)
	}
	if _, errs, code := run(t, "--home", home, "status"); code != 0 {
		t.Fatalf("status after up -d: %s", errs)
	}
	logPath := filepath.Join(home, node.LogFileName)
	before, err := os.ReadFile(logPath)
	if err != nil || !strings.Contains(string(before), "parley ready ") {
		t.Fatalf("node.log of the running node (%v):\n%s", err, before)
	}
	if _, errs, code := run(t, "--home", home, "up", "-d", "--loopback"); code == 0 || !strings.Contains(errs, "did not start") ||
		strings.Count(errs, "parley:") != 1 || strings.Contains(errs, "node: home") {
		t.Fatalf("a second up -d on the same home: exit %d, %q", code, errs)
	}
	// The refused start appended to the running node's log; it kept it whole.
	if after, err := os.ReadFile(logPath); err != nil || !strings.HasPrefix(string(after), string(before)) || !strings.Contains(string(after[len(before):]), "home is in use") {
		t.Fatalf("node.log after a refused up -d (%v); before:\n%s\nafter:\n%s", err, before, after)
	}

	// Escapes in a text: shown escaped by room log, raw in --json.
	if _, errs, code := run(t, "--home", home, "room", "create", "r1"); code != 0 {
		t.Fatal(errs)
	}
	evil := "look \x1b]0;owned\x07 here\x1b[2J\u202egnp.exe\u009b31m"
	if _, errs, code := run(t, "--home", home, "room", "say", "r1", evil); code != 0 {
		t.Fatal(errs)
	}
	log, errs, code := run(t, "--home", home, "room", "log", "r1")
	if code != 0 {
		t.Fatal(errs)
	}
	if strings.ContainsAny(log, "\x1b\x07\u202e\u009b") {
		t.Fatalf("room log prints terminal escapes raw: %q", log)
	}
	if !strings.Contains(log, "human@alice: look") {
		t.Fatalf("room log does not name the author by handle: %q", log)
	}
	if !strings.Contains(log, `look \x1b]0;owned\x07 here\x1b[2J\u202egnp.exe\u009b31m`) {
		t.Fatalf("room log does not show the text escaped: %q", log)
	}
	var events []struct {
		Text string `json:"text"`
	}
	runJSON(t, &events, "--home", home, "room", "log", "r1")
	if len(events) == 0 || events[len(events)-1].Text != evil {
		t.Fatalf("room log --json changes the text: %+v", events)
	}

	if _, errs, code := run(t, "--home", home, "down"); code != 0 {
		t.Fatal(errs)
	}
	waitStopped(t, home)
	out, errs, code = run(t, "--home", home, "up", "-d", "--loopback")
	if code != 0 || !strings.Contains(out, `handle="alice"`) {
		t.Fatalf("up -d after down: exit %d\n%s\n%s", code, out, errs)
	}
}

// waitStopped polls until no node answers for home.
func waitStopped(t *testing.T, home string) {
	t.Helper()
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		_, _, code := run(t, "--home", home, "status")
		return code != 0
	}, "the node to stop after down")
}

// `down` returns only once the node has exited and let go of the home, so
// that `up -d` right after it finds the home free (it failed half the time
// when down returned as soon as the node was asked to stop).
func TestDownWaitsForTheHome(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	t.Cleanup(func() { run(t, "--home", home, "down") })
	for i := range 3 {
		if out, errs, code := run(t, "--home", home, "up", "-d", "--loopback"); code != 0 {
			t.Fatalf("round %d: up -d: exit %d\n%s\n%s", i, code, out, errs)
		}
		_, pid, err := node.HomeLockHolder(home)
		if err != nil || pid == 0 {
			t.Fatalf("round %d: no pid in the lock: %v", i, err)
		}
		out, errs, code := run(t, "--home", home, "down")
		if code != 0 {
			t.Fatalf("round %d: down: exit %d\n%s\n%s", i, code, out, errs)
		}
		if held, _, err := node.HomeLockHolder(home); err != nil || held {
			t.Fatalf("round %d: down returned while the node still holds the home (%v)", i, err)
		}
		if !processGone(pid) {
			t.Fatalf("round %d: down returned while the node's process %d still runs", i, pid)
		}
	}
}

// An up refused because a node runs on the home changes nothing: the
// handle it gave is not saved (it was, and the next start took it while
// the running node announced the old one). An up that starts saves it,
// in the background as in the foreground.
func TestRefusedUpKeepsTheHandle(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	if out, errs, code := run(t, "--home", home, "up", "-d", "--loopback", "--handle", "Alice Smith"); code != 0 {
		t.Fatalf("up -d: exit %d\n%s\n%s", code, out, errs)
	}
	t.Cleanup(func() { run(t, "--home", home, "down") })
	before, err := os.ReadFile(filepath.Join(home, "config"))
	if err != nil || !strings.Contains(string(before), "\nhandle = Alice Smith\n") {
		t.Fatalf("--handle not saved in the config (%v):\n%s", err, before)
	}
	for _, args := range [][]string{{"up", "-d", "--loopback", "--handle", "ALICE"}, {"up", "--loopback", "--handle", "ALICE"}} {
		if _, errs, code := run(t, append([]string{"--home", home}, args...)...); code == 0 || !strings.Contains(errs, "home is in use") {
			t.Fatalf("%v on a home in use: exit %d, %q", args, code, errs)
		}
		if after, err := os.ReadFile(filepath.Join(home, "config")); err != nil || string(after) != string(before) {
			t.Fatalf("%v, refused, changed the config (%v):\n%s", args, err, after)
		}
	}
	if _, errs, code := run(t, "--home", home, "down"); code != 0 {
		t.Fatal(errs)
	}
	if out, errs, code := run(t, "--home", home, "up", "-d", "--loopback"); code != 0 || !strings.Contains(out, `handle="Alice Smith"`) {
		t.Fatalf("up -d after the refused ones: exit %d\n%s\n%s", code, out, errs)
	}
	if _, errs, code := run(t, "--home", home, "down"); code != 0 {
		t.Fatal(errs)
	}
	// A new handle given to an up that starts is saved.
	if out, errs, code := run(t, "--home", home, "up", "-d", "--loopback", "--handle", "bob"); code != 0 || !strings.Contains(out, `handle="bob"`) {
		t.Fatalf("up -d --handle bob: exit %d\n%s\n%s", code, out, errs)
	}
	if cfg, err := os.ReadFile(filepath.Join(home, "config")); err != nil || !strings.Contains(string(cfg), "\nhandle = bob\n") {
		t.Fatalf("--handle of an up that started not saved (%v):\n%s", err, cfg)
	}
	if _, errs, code := run(t, "--home", home, "down"); code != 0 {
		t.Fatal(errs)
	}
	d := up(t, home, "--loopback", "--handle", "carol")
	if !strings.Contains(d.ready, `handle="carol"`) {
		t.Fatalf("up --handle carol: %s", d.ready)
	}
	if cfg, err := os.ReadFile(filepath.Join(home, "config")); err != nil || !strings.Contains(string(cfg), "\nhandle = carol\n") {
		t.Fatalf("--handle of a foreground up not saved (%v):\n%s", err, cfg)
	}
}

// The node log is shared by every node started for the home: a background
// start takes a ready line there for its own only when its node holds the
// home. Here another node writes ready lines while `up -d` is refused (as
// when several sessions start a node at once): up -d fails saying why,
// instead of printing the other's line as its own.
func TestUpDetachedTellsItsNodeFromAnothers(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	if out, errs, code := run(t, "--home", home, "up", "-d", "--loopback"); code != 0 {
		t.Fatalf("up -d: exit %d\n%s\n%s", code, out, errs)
	}
	t.Cleanup(func() { run(t, "--home", home, "down") })
	stop := otherReadyLines(t, home)
	out, errs, code := run(t, "--home", home, "up", "-d", "--loopback")
	stop()
	if code == 0 || out != "" || !strings.Contains(errs, "did not start") || !strings.Contains(errs, "home is in use") {
		t.Fatalf("up -d on a home in use while another node logs its ready line: exit %d\nstdout %q\nstderr %q", code, out, errs)
	}
}

// A ready line is the node's own only when it names its pid: another
// node's line, written after the start began (a node that another process
// started for the home, ready and stopped since), is not taken for it even
// once the node started holds the home and has not printed its own yet.
func TestUpDetachedTakesOnlyItsOwnReadyLine(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	stop := otherReadyLines(t, home)
	out, errs, code := run(t, "--home", home, "up", "-d", "--loopback")
	stop()
	t.Cleanup(func() { run(t, "--home", home, "down") })
	if code != 0 || strings.Contains(out, "peer_id=other") {
		t.Fatalf("up -d while another node logs ready lines: exit %d\nstdout %q\nstderr %q", code, out, errs)
	}
	id, errs, code := run(t, "--home", home, "id")
	if code != 0 {
		t.Fatal(errs)
	}
	peerID, _, _ := strings.Cut(strings.TrimPrefix(id, "peer_id: "), "\n")
	_, pid, err := node.HomeLockHolder(home)
	if err != nil || !strings.HasPrefix(out, fmt.Sprintf("parley ready peer_id=%s pid=%d ", peerID, pid)) {
		t.Fatalf("up -d printed %q; the node's peer ID is %s and its pid %d (%v)", out, peerID, pid, err)
	}
}

// otherReadyLines writes, every 5 ms until stop is called (or the test
// ends), the ready line of another node (another pid, another peer ID) in
// home's node log.
func otherReadyLines(t *testing.T, home string) (stop func()) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(home, node.LogFileName), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	quit, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		defer f.Close()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			fmt.Fprintf(f, "parley ready peer_id=other pid=%d handle=\"other\" addrs=/ip4/127.0.0.1/tcp/1 home=%s startup_ms=1\n", os.Getpid(), home)
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { close(quit); <-stopped }) }
	t.Cleanup(stop) // also when the test stops before it calls stop
	return stop
}

// A ready line is taken only once it is whole (its line end written): a
// reader can see part of a write, and a line cut short would be taken
// without its addresses, or, cut inside another node's pid (pid=42 of
// pid=4217), as the ready line of another process.
func TestLogLinesTakesOnlyWholeLines(t *testing.T) {
	log := filepath.Join(t.TempDir(), node.LogFileName)
	add := func(s string) {
		t.Helper()
		f, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	add("parley ready peer_id=12D3KooWabc pid=4242")
	if l, _, _ := logLines(log, 0, ownReady(4242)); l != "" {
		t.Fatalf("a ready line without its line end was taken: %q", l)
	}
	add(" addrs=/ip4/127.0.0.1/tcp/4001\n")
	if l, _, _ := logLines(log, 0, ownReady(4242)); !strings.HasSuffix(l, "addrs=/ip4/127.0.0.1/tcp/4001") {
		t.Fatalf("the whole ready line: %q", l)
	}

	from := int64(len("parley ready peer_id=12D3KooWabc pid=4242 addrs=/ip4/127.0.0.1/tcp/4001\n"))
	add("parley ready peer_id=12D3KooWdef pid=42")
	if l, _, _ := logLines(log, from, ownReady(42)); l != "" {
		t.Fatalf("another node's ready line, cut in its pid, was taken: %q", l)
	}
	add("17 addrs=/ip4/127.0.0.1/tcp/4002\n")
	if l, _, _ := logLines(log, from, ownReady(42)); l != "" {
		t.Fatalf("another node's ready line was taken: %q", l)
	}
	if l, _, _ := logLines(log, from, ownReady(4217)); !strings.Contains(l, "pid=4217 ") {
		t.Fatalf("the ready line of pid 4217: %q", l)
	}
}
