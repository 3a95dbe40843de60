package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
