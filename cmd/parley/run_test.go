package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// terminalAgent is a fake terminal agent started by `parley run` on a
// private tmux server.
type terminalAgent struct {
	sock, log, pane string
}

func startTerminalAgent(t testing.TB, home, name string) terminalAgent {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	dir, err := os.MkdirTemp("", "pt-") // a short path: unix socket paths are short
	if err != nil {
		t.Fatal(err)
	}
	ta := terminalAgent{sock: filepath.Join(dir, "tmux.sock"), log: filepath.Join(dir, "fake.log")}
	t.Cleanup(func() {
		exec.Command("tmux", "-S", ta.sock, "kill-server").Run() //nolint:errcheck // gone already is fine
		os.RemoveAll(dir)
	})
	script, err := filepath.Abs(filepath.Join("testdata", "fakeagent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(parleyBin, "--home", home, "run", "--detach", "--name", name, "--tmux-socket", ta.sock, "--", "bash", "--norc", script)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(parleyBin)+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKE_LOG="+ta.log)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "agent "+name) {
		t.Fatalf("parley run: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`tmux pane (%[0-9]+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("parley run named no pane: %s", out)
	}
	ta.pane = m[1]
	return ta
}

// waitPrompt waits until the agent's pane ends with its empty prompt.
func (ta terminalAgent) waitPrompt(t testing.TB) {
	t.Helper()
	var screen []byte
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		screen, _ = exec.Command("tmux", "-S", ta.sock, "capture-pane", "-p", "-t", ta.pane).Output()
		lines := strings.Split(strings.TrimRight(string(screen), "\n"), "\n")
		return strings.TrimSpace(lines[len(lines)-1]) == ">"
	}, "the terminal agent to be back at its prompt")
}

// two nodes that are contacts, A and B.
func twoContacts(t testing.TB) (homeA, homeB, idB string, dB *daemon) {
	base := t.TempDir()
	homeA, homeB = filepath.Join(base, "a"), filepath.Join(base, "b")
	a := up(t, homeA, "--listen", loopback)
	dB = up(t, homeB, "--listen", loopback, "--bootstrap", a.addr(), "--log-level", "debug")
	idB = peerID(t, homeB)
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		var peers []map[string]any
		runJSON(t, &peers, "--home", homeA, "peers")
		return len(peers) == 1
	}, "B to connect to A")
	befriend(t, homeA, homeB, idB)
	return homeA, homeB, idB, dB
}

// The test: a fake terminal agent started by `parley run`, idle at
// its prompt, is woken by an ask from another node and its answer reaches
// the asker's blocking ask. A person's half-typed input is never pasted
// over: the wake waits until it is gone.
func TestRunWakesIdleTerminalAgent(t *testing.T) {
	t.Parallel()
	homeA, homeB, idB, dB := twoContacts(t)
	ta := startTerminalAgent(t, homeB, "fake")
	c := localapi.NewClient(node.SocketPath(homeA))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	res, err := c.Ask(ctx, "human", localapi.AskRequest{Text: "which port does the shop use?", To: "fake@" + idB, WaitSeconds: 45})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reply == nil || res.Reply.Text != "the port is 8080" || !strings.HasPrefix(res.Reply.From, "fake@") {
		screen, _ := exec.Command("tmux", "-S", ta.sock, "capture-pane", "-p", "-t", ta.pane).CombinedOutput()
		log, _ := os.ReadFile(ta.log)
		t.Fatalf("no answer from the terminal agent: %+v\nscreen:\n%s\nlog: %s\nB:\n%s", res, screen, log, dB.stderr)
	}

	// Someone starts typing at the agent's prompt: the next wake waits. The
	// asker hears the answer before the agent is back at its prompt; keys
	// typed before it is would be echoed by the terminal, not edited by the
	// agent's line editor.
	ta.waitPrompt(t)
	if out, err := exec.Command("tmux", "-S", ta.sock, "send-keys", "-t", ta.pane, "-l", "half a thought").CombinedOutput(); err != nil {
		t.Fatalf("send-keys: %v %s", err, out)
	}
	res, err = c.Ask(ctx, "human", localapi.AskRequest{Text: "and the host?", To: "fake@" + idB, WaitSeconds: 4})
	if err != nil || res.Reply != nil {
		t.Fatalf("answered over a draft: %+v, %v", res, err)
	}
	screen, err := exec.Command("tmux", "-S", ta.sock, "capture-pane", "-p", "-t", ta.pane).Output()
	if err != nil || !strings.Contains(string(screen), "> half a thought") || strings.Contains(string(screen), "and the host?") {
		t.Fatalf("the draft was touched: %v\n%s", err, screen)
	}
	// The person erases it: the wake goes in, and the answer comes.
	if out, err := exec.Command("tmux", "-S", ta.sock, "send-keys", "-t", ta.pane, "C-u").CombinedOutput(); err != nil {
		t.Fatalf("send-keys: %v %s", err, out)
	}
	got, err := c.WaitReply(ctx, "human", res.AskID, 45*time.Second, false)
	if err != nil || got.Reply == nil || got.Reply.Text != "the port is 8080" {
		screen, _ := exec.Command("tmux", "-S", ta.sock, "capture-pane", "-p", "-t", ta.pane).CombinedOutput()
		log, _ := os.ReadFile(ta.log)
		t.Fatalf("no answer after the draft went: %+v, %v\nscreen:\n%s\nlog: %s\nB:\n%s", got, err, screen, log, dB.stderr)
	}
	// The agent is live on B, and nobody had to be told.
	out, errs, code := run(t, "--home", homeB, "who")
	if code != 0 || !strings.Contains(out, "fake") || strings.Contains(out, "NOT REACHED") {
		t.Fatalf("who: %s %s", out, errs)
	}
}

// tmuxDir makes a short folder for a private tmux server's socket, whose
// server is killed at the end of the test.
func tmuxDir(t testing.TB) (sock string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	dir, err := os.MkdirTemp("", "pt-") // a short path: unix socket paths are short
	if err != nil {
		t.Fatal(err)
	}
	sock = filepath.Join(dir, "tmux.sock")
	t.Cleanup(func() {
		exec.Command("tmux", "-S", sock, "kill-server").Run() //nolint:errcheck // gone already is fine
		os.RemoveAll(dir)
	})
	return sock
}

// parleyRun runs `parley run` the way a script does: stdin /dev/null.
func parleyRun(t testing.TB, home string, args ...string) (string, int) {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "fakeagent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	args = append([]string{"--home", home, "run"}, args...)
	for i, a := range args {
		if a == "FAKEAGENT" {
			args[i] = script
		}
	}
	cmd := exec.Command(parleyBin, args...)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	cmd.Stdin = devnull
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(parleyBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// `parley run` from a script or cron (stdin /dev/null, no --detach) starts
// the agent, leaves it detached and says so, and exits 0 (it failed with
// "open terminal failed: not a terminal": /dev/null is a character device).
func TestRunWithoutTerminalRunsDetached(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	sock := tmuxDir(t)
	out, code := parleyRun(t, home, "--name", "cron", "--tmux-socket", sock, "--", "bash", "--norc", "FAKEAGENT")
	if code != 0 || !strings.Contains(out, "agent cron") || !strings.Contains(out, "runs detached") || !strings.Contains(out, "attach: ") {
		t.Fatalf("parley run with stdin /dev/null: exit %d\n%s", code, out)
	}
}

// listed reports whether the node lists the agent.
func listed(t testing.TB, home, name string) bool {
	t.Helper()
	var as []localapi.AgentInfo
	runJSON(t, &as, "--home", home, "agent", "list")
	for _, a := range as {
		if a.Name == name {
			return true
		}
	}
	return false
}

// A run that fails leaves no agent behind: a program that exits at once,
// a tmux socket that cannot be made. `run` exits non-zero saying why, the
// agent is not listed, and an ask to it is refused as to an unknown agent.
// An agent whose program exits later is let go by the node as well.
func TestRunFailureLeavesNoAgent(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	sock := tmuxDir(t)
	c := localapi.NewClient(node.SocketPath(home))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	refused := func(name string) {
		t.Helper()
		if listed(t, home, name) {
			t.Fatalf("agent %s is still listed", name)
		}
		if _, err := c.Ask(ctx, "human", localapi.AskRequest{Text: "there?", To: name}); err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("an ask to %s: %v", name, err)
		}
	}

	out, code := parleyRun(t, home, "--name", "quick", "--tmux-socket", sock, "--", "/bin/true")
	// tmux tells the exit status a moment after the pane is dead: the message
	// names it when tmux had it ("exit status 0"), and says the program exited
	// either way.
	if code == 0 || !strings.Contains(out, "/bin/true exited") || strings.Contains(out, "exit status") && !strings.Contains(out, "exit status 0") || !strings.Contains(out, "agent quick is unregistered") {
		t.Fatalf("run of a program that exits at once: exit %d\n%s", code, out)
	}
	refused("quick")

	out, code = parleyRun(t, home, "--name", "nosock", "--tmux-socket", filepath.Join(t.TempDir(), "no", "such", "sock"), "--", "bash", "--norc", "FAKEAGENT")
	if code == 0 || !strings.Contains(out, "cannot start") || !strings.Contains(out, "agent nosock is unregistered") {
		t.Fatalf("run on a tmux socket that cannot be made: exit %d\n%s", code, out)
	}
	refused("nosock")

	// The program of a running agent ends (the fake agent ends at EOF).
	out, code = parleyRun(t, home, "--name", "later", "--tmux-socket", sock, "--", "bash", "--norc", "FAKEAGENT")
	m := regexp.MustCompile(`tmux pane (%[0-9]+)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("parley run: exit %d\n%s", code, out)
	}
	if !listed(t, home, "later") {
		t.Fatal("the running agent is not listed")
	}
	if out, err := exec.Command("tmux", "-S", sock, "send-keys", "-t", m[1], "C-d").CombinedOutput(); err != nil {
		t.Fatalf("send-keys: %v %s", err, out)
	}
	nodetest.WaitFor(t, 15*time.Second, func() bool { return !listed(t, home, "later") }, "the agent whose program exited to be let go")
	refused("later")
}

// A node restart does not orphan a `parley run` agent: the node keeps the
// pane and takes it up again at start (the same program still runs in it),
// re-registers the agent, and pastes an ask made after the restart.
func TestRunSurvivesNodeRestart(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	if out, errs, code := run(t, "--home", home, "up", "-d", "--loopback"); code != 0 {
		t.Fatalf("up -d: exit %d\n%s\n%s", code, out, errs)
	}
	t.Cleanup(func() { run(t, "--home", home, "down") })
	ta := startTerminalAgent(t, home, "fake")
	if _, errs, code := run(t, "--home", home, "down"); code != 0 {
		t.Fatalf("down: %s", errs)
	}
	if out, errs, code := run(t, "--home", home, "up", "-d", "--loopback"); code != 0 {
		t.Fatalf("up -d again: exit %d\n%s\n%s", code, out, errs)
	}
	c := localapi.NewClient(node.SocketPath(home))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		st, err := c.WakeStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range st {
			if w.Agent == "fake" && slices.Contains(w.Routes, localapi.WakeTerminal) {
				return true
			}
		}
		return false
	}, "the restarted node to take up the agent's pane")
	res, err := c.Ask(ctx, "human", localapi.AskRequest{Text: "which port does the shop use?", To: "fake", WaitSeconds: 30})
	if err != nil || res.Reply == nil || res.Reply.Text != "the port is 8080" {
		screen, _ := exec.Command("tmux", "-S", ta.sock, "capture-pane", "-p", "-t", ta.pane).CombinedOutput()
		log, _ := os.ReadFile(filepath.Join(home, "node.log"))
		t.Fatalf("no answer from the agent after the restart: %+v, %v\nscreen:\n%s\nlog:\n%s", res, err, screen, log)
	}
	var as []localapi.AgentInfo
	runJSON(t, &as, "--home", home, "agent", "list")
	for _, a := range as {
		if a.Name == "fake" && a.Session == "" {
			t.Fatalf("the agent is not bound to its run's session: %+v", a)
		}
	}
}

// A program that takes a while to start (a line printed, then silence
// with the cursor on a blank line, then its prompt) has its real prompt
// learned, not the blank line: the blank line was taken for the prompt, and
// the real prompt then looked like a person's draft, so nothing was pasted.
func TestRunLearnsThePromptOfASlowStart(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	sock := tmuxDir(t)
	script, err := filepath.Abs(filepath.Join("testdata", "fakeagent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	out, code := parleyRun(t, home, "--name", "slow", "--tmux-socket", sock, "--", "sh", "-c", "echo loading; sleep 3; exec bash --norc "+script)
	if code != 0 || strings.Contains(out, "blank line") {
		t.Fatalf("parley run: exit %d\n%s", code, out)
	}
	m := regexp.MustCompile(`tmux pane (%[0-9]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("parley run named no pane: %s", out)
	}
	// Asked once the prompt shows (asked before, the text would be pasted
	// into the starting program, and read by the shell from the terminal).
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, err := exec.Command("tmux", "-S", sock, "display-message", "-p", "-t", m[1], "#{cursor_x}").Output()
		return err == nil && strings.TrimSpace(string(out)) == "2"
	}, "the agent's prompt")
	c := localapi.NewClient(node.SocketPath(home))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := c.Ask(ctx, "human", localapi.AskRequest{Text: "which port does the shop use?", To: "slow", WaitSeconds: 20})
	if err != nil || res.Reply == nil || res.Reply.Text != "the port is 8080" {
		t.Fatalf("no answer from the agent: %+v, %v", res, err)
	}
}

// An ask made to a `parley run` agent while it was muted is pasted into
// its pane once it is unmuted, without another ask coming.
func TestUnmuteDeliversWhatWaited(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	startTerminalAgent(t, home, "fake")
	if _, errs, code := run(t, "--home", home, "agent", "mute", "fake"); code != 0 {
		t.Fatalf("mute: %s", errs)
	}
	c := localapi.NewClient(node.SocketPath(home))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := c.Ask(ctx, "human", localapi.AskRequest{Text: "which port does the shop use?", To: "fake", WaitSeconds: 3})
	if err != nil || res.Reply != nil {
		t.Fatalf("a muted agent answered: %+v, %v", res, err)
	}
	if _, errs, code := run(t, "--home", home, "agent", "unmute", "fake"); code != 0 {
		t.Fatalf("unmute: %s", errs)
	}
	got, err := c.WaitReply(ctx, "human", res.AskID, 20*time.Second, false)
	if err != nil || got.Reply == nil || got.Reply.Text != "the port is 8080" {
		t.Fatalf("no answer after unmute: %+v, %v", got, err)
	}
}

// The node cannot make the pane the agent's wake-up route: its tmux does
// not answer its check of the pane in time (the local API's 504). `run`
// exits 1 saying why, the agent is unregistered, and the pane, whose
// program would run on for no agent, is closed, so that running `run`
// again, as the message says to, starts no second copy (before, the
// program ran on in its pane).
func TestRunClosesItsPaneWhenTheNodeCannotBindIt(t *testing.T) {
	t.Parallel()
	real, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	// The node's tmux (found on its PATH) hangs on a bare check of a pane
	// (list-panes without capture-pane: WakeTerminal's), until the node's
	// time limit kills it; a hang left at the end of the test is killed
	// then, by its process group, while its command line names dir.
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	script := "#!/bin/sh\ncase \" $* \" in *\" capture-pane \"*) ;; *\" list-panes \"*) echo $$ >> '" + pids + "'; exec sh -c 'sleep 600; :' '" + dir + "' ;; esac\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "tmux"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		raw, _ := os.ReadFile(pids)
		for _, f := range strings.Fields(string(raw)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && bytes.Contains(cmdline, []byte(dir)) {
				syscall.Kill(-pid, syscall.SIGKILL) //nolint:errcheck // ended meanwhile is fine
			}
		}
	})
	home := filepath.Join(t.TempDir(), "a")
	upEnv(t, home, []string{"PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH")}, "--listen", loopback)
	sock := tmuxDir(t)
	out, code := parleyRun(t, home, "--name", "slow", "--tmux-socket", sock, "--", "bash", "--norc", "FAKEAGENT")
	if code == 0 || !strings.Contains(out, "did not answer") || !strings.Contains(out, "the pane is closed") || !strings.Contains(out, "agent slow is unregistered") {
		t.Fatalf("parley run, the node's tmux not answering: exit %d\n%s", code, out)
	}
	if listed(t, home, "slow") {
		t.Fatal("agent slow is still listed")
	}
	// The pane was the server's only one: the server is gone with it.
	if panes, err := exec.Command("tmux", "-S", sock, "list-panes", "-a", "-F", "#{pane_id}").CombinedOutput(); err == nil && strings.TrimSpace(string(panes)) != "" {
		t.Fatalf("panes left on the tmux server: %s", panes)
	}
}
