package main

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// startTail starts `room tail ROOM` on home and waits until a message said
// in the room shows in it. It returns the tail's stderr and a channel with
// its exit.
func startTail(t *testing.T, home, room string) (*syncBuffer, <-chan error) {
	t.Helper()
	cmd := exec.Command(parleyBin, "--home", home, "room", "tail", room)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errb := &syncBuffer{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		done <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// The tail is up once a message said now shows in it.
	deadline := time.Now().Add(20 * time.Second)
	for up := false; !up; {
		if time.Now().After(deadline) {
			t.Fatal("room tail printed nothing")
		}
		run(t, "--home", home, "room", "say", room, "a line")
		select {
		case <-lines:
			up = true
		case <-time.After(500 * time.Millisecond):
		}
	}
	return errb, done
}

// tailExit waits for a tail to end and returns its exit code.
func tailExit(t *testing.T, done <-chan error) int {
	t.Helper()
	select {
	case werr := <-done:
		if ee, ok := werr.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return 0
	case <-time.After(15 * time.Second):
		t.Fatal("room tail did not end when its node stopped")
	}
	return 0
}

// Regression: a `room tail` whose node stopped (`parley down`) ended
// without a word and exited 0, which a script following the room reads as
// a room gone quiet. The node now ends the stream with a "stopped" event,
// and the tail fails saying the node stopped.
func TestCLIRoomTailFailsWhenTheNodeStops(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	if _, errs, code := run(t, "--home", home, "room", "create", "followed"); code != 0 {
		t.Fatalf("room create: %s", errs)
	}
	errb, done := startTail(t, home, "followed")
	if _, errs, code := run(t, "--home", home, "down"); code != 0 {
		t.Fatalf("down: %s", errs)
	}
	code := tailExit(t, done)
	if code == 0 || !strings.Contains(errb.String(), "the node stopped: the tail of room followed ends here") {
		t.Fatalf("room tail ended with the node: exit %d, stderr %q; want a non-zero exit and a line saying the node stopped", code, errb.String())
	}
}

// A tail whose node is killed (it never says it stops) fails too, saying
// the node stopped without a word.
func TestCLIRoomTailFailsWhenTheNodeIsKilled(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	d := up(t, home, "--listen", loopback)
	if _, errs, code := run(t, "--home", home, "room", "create", "followed"); code != 0 {
		t.Fatalf("room create: %s", errs)
	}
	errb, done := startTail(t, home, "followed")
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code := tailExit(t, done)
	if code == 0 || !strings.Contains(errb.String(), "the node stopped without a word (it crashed or was killed") {
		t.Fatalf("room tail ended with the killed node: exit %d, stderr %q; want a non-zero exit and a line saying the node is gone", code, errb.String())
	}
}

// Regression: `parley down` with a long poll open (`room ask --wait`,
// `inbox --wait`, an agent's parley_wait) waited out the local API's 2 s
// shutdown grace and printed "waiting for the node … to exit". The node's
// stop now cancels every request's context: the wait ends at once, and
// its command says the node stopped.
func TestCLIDownEndsALongPollAtOnce(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	if _, errs, code := run(t, "--home", home, "room", "create", "solo"); code != 0 {
		t.Fatalf("room create: %s", errs)
	}
	// An agent to ask, that never answers (an ask of a room nobody else is
	// in is refused at once).
	if _, errs, code := run(t, "--home", home, "agent", "register", "mute", "--ttl", "1h"); code != 0 {
		t.Fatalf("agent register: %s", errs)
	}
	cmd := exec.Command(parleyBin, "--home", home, "room", "ask", "solo", "anyone?", "--to", "mute", "--wait", "50s")
	var errb syncBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	nodetest.WaitFor(t, 15*time.Second, func() bool { return strings.Contains(errb.String(), "waiting up to") },
		"the ask to be posted and its wait to start")
	// The wait's request is on its way to the node: give it a moment's
	// head start by a call that goes through the same socket after it.
	run(t, "--home", home, "status")
	start := time.Now()
	_, errs, code := run(t, "--home", home, "down")
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("down: exit %d: %s", code, errs)
	}
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the ask's wait did not end with the node")
	}
	// down says it waits once the node has not let go of its home for 2 s:
	// the grace a stopping node gave a long poll before it cut it.
	if strings.Contains(errs, "waiting for the node") {
		t.Fatalf("down took %s with a long poll open (stderr %q); without one it takes well under a second", took.Round(time.Millisecond), errs)
	}
	if ask := errb.String(); !strings.Contains(ask, "waiting for its reply failed: the node stopped before it answered") {
		t.Fatalf("the ask whose wait the node's stop ended says %q", ask)
	}
}
