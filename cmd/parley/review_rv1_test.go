package main

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A `room tail` follows a room until interrupted. When the node stops under
// it (`parley down`, a crash), the README says a command whose request is
// under way says so; a tail that ends without a word and exits 0 reads, to a
// script following a room, as if the room had simply gone quiet.
func TestCLIRoomTailSaysWhenTheNodeStops(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	if _, errs, code := run(t, "--home", home, "room", "create", "followed"); code != 0 {
		t.Fatalf("room create: %s", errs)
	}
	cmd := exec.Command(parleyBin, "--home", home, "room", "tail", "followed")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb syncBuffer
	cmd.Stderr = &errb
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
		run(t, "--home", home, "room", "say", "followed", "a line")
		select {
		case <-lines:
			up = true
		case <-time.After(500 * time.Millisecond):
		}
	}
	if _, errs, code := run(t, "--home", home, "down"); code != 0 {
		t.Fatalf("down: %s", errs)
	}
	var werr error
	select {
	case werr = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("room tail did not end when its node stopped")
	}
	code := 0
	if ee, ok := werr.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code == 0 || !strings.Contains(errb.String(), "stopped") {
		t.Fatalf("room tail ended with the node: exit %d, stderr %q; want a non-zero exit and a line saying the node stopped", code, errb.String())
	}
}

// `parley down` returns once the node's process has exited. A CLI command
// that waits on the node (`inbox --wait`, `room ask --wait`, an agent's
// parley_wait) is a long poll the node could end at once when it stops;
// instead the node's local API waits out its 2 s shutdown grace for it,
// so every `down` while an agent waits takes over 2 s and prints "waiting
// for the node (pid …) to exit and let go of …/node.lock …".
func TestCLIDownDoesNotWaitOutALongPoll(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	if _, errs, code := run(t, "--home", home, "room", "create", "solo"); code != 0 {
		t.Fatalf("room create: %s", errs)
	}
	cmd := exec.Command(parleyBin, "--home", home, "room", "ask", "solo", "anyone?", "--wait", "50s")
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
	if took > 1500*time.Millisecond || strings.Contains(errs, "waiting for the node") {
		t.Fatalf("down took %s with a long poll open (stderr %q); without one it takes well under a second", took.Round(time.Millisecond), errs)
	}
}

// `up -d` runs "the same in the background", but the background node is
// started with only some of up's flags (cmd/parley/up.go, childArgs: handle,
// listen, bootstrap, no-mdns, loopback, recover, new-identity, log-level,
// min-free-disk): `up -d --wake-limit 1s` runs a node with the default
// 60 s, silently. An agent that does not read what it owes is then marked
// NOT REACHED after a minute, not after the second asked for.
func TestUpDetachedKeepsWakeLimit(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	out, errs, code := run(t, "--home", home, "up", "-d", "--loopback", "--wake-limit", "1s")
	t.Cleanup(func() { run(t, "--home", home, "down") })
	if code != 0 || !strings.HasPrefix(out, "parley ready ") {
		t.Fatalf("up -d: exit %d\n%s\n%s", code, out, errs)
	}
	if _, errs, code := run(t, "--home", home, "agent", "register", "quiet", "--ttl", "10m"); code != 0 {
		t.Fatalf("agent register: %s", errs)
	}
	if _, errs, code := run(t, "--home", home, "room", "create", "solo"); code != 0 {
		t.Fatalf("room create: %s", errs)
	}
	if _, errs, code := run(t, "--home", home, "room", "ask", "solo", "anyone there?", "--to", "quiet", "--wait", "0"); code != 0 {
		t.Fatalf("room ask: %s", errs)
	}
	// With a 1 s limit the agent, which no route reaches, is marked within
	// a few seconds; with the default it takes 60.
	var st struct {
		Unreached int `json:"unreached"`
	}
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		runJSON(t, &st, "--home", home, "status")
		return st.Unreached > 0
	}, "the agent to be counted unreached, with --wake-limit 1s (the default is 60 s)")
}

// README: "Every command takes --home DIR … and --json". `parley --json up
// -d` prints the text ready line on stdout ("parley ready peer_id=…"), not
// JSON, so `parley --json up -d | jq` fails; a script has to parse the
// key=value line instead.
func TestUpDetachedJSONPrintsJSON(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	out, errs, code := run(t, "--home", home, "--json", "up", "-d", "--loopback")
	t.Cleanup(func() { run(t, "--home", home, "down") })
	if code != 0 {
		t.Fatalf("up -d --json: exit %d: %s", code, errs)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("up -d --json: stdout is not JSON (%v): %q", err, out)
	}
}

// Revoking a contact that is revoked already prints the error chain of four
// layers, the peer ID twice and internal package names:
// "contacts: revoke ID: consent: revoke ID: consent: operation does not fit
// contact state: contact is revoked". It should say it in the user's terms:
// the contact is revoked already (nothing to do).
func TestCLIRevokeTwiceSaysItPlainly(t *testing.T) {
	t.Parallel()
	homeA, _, idB, _ := twoContacts(t)
	if _, errs, code := run(t, "--home", homeA, "contact", "revoke", idB); code != 0 {
		t.Fatalf("revoke: %s", errs)
	}
	_, errs, code := run(t, "--home", homeA, "contact", "revoke", idB)
	if code == 0 {
		t.Fatalf("a second revoke succeeded: %s", errs)
	}
	if strings.Count(errs, idB) > 1 || strings.Contains(errs, "consent:") || strings.Contains(errs, "does not fit contact state") {
		t.Fatalf("second revoke: %q; want one plain sentence (already revoked)", strings.TrimSpace(errs))
	}
}
