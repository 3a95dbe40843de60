package tmux

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/poll"
)

// The tests drive a real tmux, each on a private server (tmux -L, with no
// config file), so nothing touches the user's own tmux.

func newServer(t *testing.T) Server {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is not installed (.ci/run installs it)")
		}
		t.Skip("tmux is not installed")
	}
	s := Server{Name: "parley-test-" + randomHex(6), Config: "/dev/null"}
	t.Cleanup(func() {
		if err := s.KillServer(context.Background()); err != nil {
			t.Errorf("kill server: %v", err)
		}
	})
	return s
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !poll.Until(d, cond) {
		t.Fatalf("timed out after %s waiting for %s", d, what)
	}
}

// agent is the fake terminal agent in a pane.
type agent struct {
	s    Server
	pane Pane
	log  string
}

func startAgent(t *testing.T, s Server, work string, o StartOptions) agent {
	t.Helper()
	script, err := filepath.Abs("testdata/fakeagent.sh")
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "taken")
	o.Command = []string{script}
	o.Env = append(o.Env, "FAKE_LOG="+log, "FAKE_WORK="+work, "INPUTRC=/dev/null")
	p, err := s.Start(testCtx(t, 20*time.Second), o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.ID, "%") || p.Socket == "" || p.PID == 0 {
		t.Fatalf("pane %+v", p)
	}
	// Cleanups run last first: this one, registered after the log's
	// TempDir, ends the agent before that directory is removed (an agent
	// still taking a line would write its log into a directory being
	// removed, and the removal fail with "directory not empty").
	t.Cleanup(func() { endProcess(t, s, p) })
	return agent{s: s, pane: p, log: log}
}

// endProcess closes the pane and waits until its program has exited.
func endProcess(t *testing.T, s Server, p Pane) {
	t.Helper()
	if err := s.KillPane(context.Background(), p.ID); err != nil && !errors.Is(err, ErrNoPane) && !errors.Is(err, ErrNoServer) {
		t.Errorf("kill pane %s: %v", p.ID, err)
	}
	if !poll.Until(10*time.Second, func() bool { return syscall.Kill(p.PID, 0) == syscall.ESRCH }) {
		t.Errorf("the program of pane %s (pid %d) did not exit", p.ID, p.PID)
	}
}

// taken returns the lines the agent has read.
func (a agent) taken() []string {
	b, _ := os.ReadFile(a.log)
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func (a agent) screen(t *testing.T) Screen {
	t.Helper()
	sc, err := a.s.Capture(testCtx(t, 10*time.Second), a.pane.ID)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func (a agent) bind(t *testing.T, o Options) *Terminal {
	t.Helper()
	if o.Quiet == 0 {
		o.Quiet = 300 * time.Millisecond
	}
	term := Bind(a.s, a.pane.ID, o)
	if o.Prompt == nil {
		p, err := term.LearnPrompt(testCtx(t, 20*time.Second))
		if err != nil || p != ">" {
			t.Fatalf("learned prompt %q: %v\n%s", p, err, a.screen(t).Text())
		}
	}
	return term
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDeliverToAnIdleAgent(t *testing.T) {
	s := newServer(t)
	a := startAgent(t, s, "0.1", StartOptions{Session: "agent"})
	term := a.bind(t, Options{})

	if err := term.Deliver(testCtx(t, 20*time.Second), "Bob asks you in room design: which port?"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the agent to take the text", func() bool {
		return equal(a.taken(), []string{"Bob asks you in room design: which port?"})
	})
	waitFor(t, 20*time.Second, "the answer on screen", func() bool {
		return strings.Contains(a.screen(t).Text(), "got: Bob asks you in room design: which port?")
	})

	// Two lines arrive as one paste and are sent by the one Enter: the
	// agent reads once (readline keeps the pasted newline in the line).
	if err := term.Deliver(testCtx(t, 20*time.Second), "first line\nsecond line"); err != nil {
		t.Fatal(err)
	}
	if err := term.Deliver(testCtx(t, 20*time.Second), "third"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "three reads", func() bool { return len(a.taken()) >= 3 })
	if got := a.taken(); len(got) != 3 || got[1] != "first line" || got[2] != "third" {
		t.Fatalf("the agent read %q", got)
	}
}

func TestDeliverWaitsWhileTheAgentWorks(t *testing.T) {
	s := newServer(t)
	a := startAgent(t, s, "1.5", StartOptions{})
	term := a.bind(t, Options{})
	if err := term.Deliver(testCtx(t, 20*time.Second), "one"); err != nil {
		t.Fatal(err)
	}
	// The agent works on "one" for 1.5 s; the second delivery waits for it.
	if err := term.Deliver(testCtx(t, 30*time.Second), "two"); err != nil {
		t.Fatal(err)
	}
	if text := a.screen(t).Text(); !strings.Contains(text, "got: one") {
		t.Fatalf("two was pasted before one was answered:\n%s", text)
	}
	waitFor(t, 20*time.Second, "both reads", func() bool { return equal(a.taken(), []string{"one", "two"}) })

	// A short wait while it is busy ends in an error, having sent nothing.
	if err := term.Deliver(testCtx(t, 20*time.Second), "three"); err != nil {
		t.Fatal(err)
	}
	// (Until the agent takes the paste, its line reads like a draft.)
	err := term.Deliver(testCtx(t, 500*time.Millisecond), "four")
	if !errors.Is(err, ErrBusy) && !errors.Is(err, ErrDraft) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deliver to a busy agent: %v", err)
	}
	waitFor(t, 20*time.Second, "three", func() bool { return len(a.taken()) == 3 })
	if text := a.screen(t).Text(); strings.Contains(text, "four") {
		t.Fatalf("four reached the pane:\n%s", text)
	}
}

func TestDeliverNeverPastesOverADraft(t *testing.T) {
	s := newServer(t)
	a := startAgent(t, s, "0.1", StartOptions{})
	term := a.bind(t, Options{})
	ctx := testCtx(t, 20*time.Second)

	// A person types half a thought and stops.
	if err := s.Type(ctx, a.pane.ID, "half a thou"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the draft on screen", func() bool {
		return strings.TrimRight(a.screen(t).CursorLine(), " ") == "> half a thou"
	})
	err := term.Deliver(testCtx(t, 3*time.Second), "from parley")
	if !errors.Is(err, ErrDraft) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deliver over a draft: %v", err)
	}
	if line := strings.TrimRight(a.screen(t).CursorLine(), " "); line != "> half a thou" {
		t.Fatalf("the draft line is %q", line)
	}
	if len(a.taken()) != 0 {
		t.Fatalf("the agent read %q", a.taken())
	}

	// The person erases it: the delivery goes through.
	if err := s.SendKeys(ctx, a.pane.ID, "C-u"); err != nil {
		t.Fatal(err)
	}
	if err := term.Deliver(ctx, "from parley"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the delivery", func() bool { return equal(a.taken(), []string{"from parley"}) })

	// The person types again and sends it themselves a moment later; the
	// delivery waits and comes after theirs.
	if err := s.Type(ctx, a.pane.ID, "my own question"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the second draft on screen", func() bool {
		return strings.Contains(a.screen(t).CursorLine(), "my own question")
	})
	person := time.AfterFunc(time.Second, func() { _ = s.SendKeys(context.Background(), a.pane.ID, "Enter") })
	defer person.Stop()
	if err := term.Deliver(testCtx(t, 30*time.Second), "second from parley"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "both", func() bool {
		return equal(a.taken(), []string{"from parley", "my own question", "second from parley"})
	})
}

func TestDeliverWaitsOutCopyMode(t *testing.T) {
	s := newServer(t)
	a := startAgent(t, s, "0.1", StartOptions{})
	term := a.bind(t, Options{})
	if _, err := s.run(testCtx(t, 10*time.Second), nil, "copy-mode", "-t", a.pane.ID); err != nil {
		t.Fatal(err)
	}
	err := term.Deliver(testCtx(t, time.Second), "hello")
	if !errors.Is(err, ErrInMode) {
		t.Fatalf("deliver in copy mode: %v", err)
	}
	if err := s.SendKeys(testCtx(t, 10*time.Second), a.pane.ID, "-X", "cancel"); err != nil {
		t.Fatal(err)
	}
	if err := term.Deliver(testCtx(t, 20*time.Second), "hello"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "hello", func() bool { return equal(a.taken(), []string{"hello"}) })
}

func TestPromptPattern(t *testing.T) {
	s := newServer(t)
	a := startAgent(t, s, "0.1", StartOptions{})
	if err := Bind(s, a.pane.ID, Options{}).Deliver(testCtx(t, 5*time.Second), "x"); !errors.Is(err, ErrNoPrompt) {
		t.Fatalf("deliver with no known prompt: %v", err)
	}
	term := a.bind(t, Options{Prompt: regexp.MustCompile(`^> ?$`), Quiet: time.Hour})
	// The pattern makes a stable screen idle without waiting an hour.
	if err := term.Deliver(testCtx(t, 20*time.Second), "by pattern"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the read", func() bool { return equal(a.taken(), []string{"by pattern"}) })
	waitFor(t, 20*time.Second, "the prompt", func() bool {
		return strings.TrimSpace(a.screen(t).CursorLine()) == ">"
	})
	if err := s.Type(testCtx(t, 10*time.Second), a.pane.ID, "draft"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the draft on screen", func() bool {
		return strings.Contains(a.screen(t).CursorLine(), "draft")
	})
	if err := term.Deliver(testCtx(t, time.Second), "over it"); !errors.Is(err, ErrDraft) && !errors.Is(err, ErrBusy) {
		t.Fatalf("deliver over a draft, by pattern: %v", err)
	}
	if len(a.taken()) != 1 {
		t.Fatalf("read %q", a.taken())
	}
}

func TestControlCharactersCannotEscapeThePaste(t *testing.T) {
	if got := Clean("a\x1b[201~b\r\nc\x07\u009b\x7f d\n\n", false); got != "a[201~b\nc d" {
		t.Errorf("Clean: %q", got)
	}
	if got := Clean("one\ntwo\r\nthree", true); got != "one two three" {
		t.Errorf("Clean flatten: %q", got)
	}
	s := newServer(t)
	a := startAgent(t, s, "0.1", StartOptions{})
	term := a.bind(t, Options{})
	if err := term.Deliver(testCtx(t, 20*time.Second), "safe\x1b[201~\x03\x04evil"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the read", func() bool { return equal(a.taken(), []string{"safe[201~evil"}) })
	// The agent is still there (no ^C or ^D reached it).
	if err := term.Deliver(testCtx(t, 20*time.Second), "still here"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the second read", func() bool { return len(a.taken()) == 2 })
}

func TestDeadClosedAndVanished(t *testing.T) {
	s := newServer(t)
	ctx := testCtx(t, 30*time.Second)

	// A program that exits, in a kept pane.
	dead, err := s.Start(ctx, StartOptions{Command: []string{"sh", "-c", "echo bye; exit 3"}, KeepDead: true})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the pane to die", func() bool {
		st, err := s.Inspect(ctx, dead.ID)
		return err == nil && st.Dead
	})
	// tmux has the status once it reaps the program, usually at once; in
	// one CI run of many it never did (pane_dead_status stayed empty for
	// 20 s), so a status that does not come is allowed, but must not be
	// claimed.
	known := poll.Until(10*time.Second, func() bool {
		st, err := s.Inspect(ctx, dead.ID)
		return err == nil && st.StatusKnown
	})
	st, _ := s.Inspect(ctx, dead.ID)
	if known && st.ExitStatus != 3 {
		t.Errorf("exit status %d", st.ExitStatus)
	}
	term := Bind(s, dead.ID, Options{Prompt: regexp.MustCompile(`^>$`)})
	err = term.Deliver(ctx, "hello")
	if err == nil {
		t.Fatal("deliver to a dead pane: no error")
	}
	names := strings.Contains(err.Error(), "exit status")
	if !errors.Is(err, ErrPaneDead) || (known && !names) || (names && !strings.Contains(err.Error(), "exit status 3")) {
		t.Fatalf("deliver to a dead pane (status known: %v): %v", known, err)
	}
	if !known {
		t.Logf("tmux did not report the exit status within 10 s; the error said: %v", err)
	}

	// A program that exits in a pane that is not kept: the pane is gone.
	gone, err := s.Start(ctx, StartOptions{Command: []string{"sh", "-c", "sleep 0.2"}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the pane to close", func() bool {
		_, err := s.Inspect(ctx, gone.ID)
		return errors.Is(err, ErrNoPane)
	})

	// A pane someone closes.
	a := startAgent(t, s, "0.1", StartOptions{})
	term = a.bind(t, Options{})
	if err := s.KillPane(ctx, a.pane.ID); err != nil {
		t.Fatal(err)
	}
	if err := term.Deliver(ctx, "hello"); !errors.Is(err, ErrNoPane) {
		t.Fatalf("deliver to a closed pane: %v", err)
	}
	if _, err := s.FindPane(ctx, "no-such-session"); !errors.Is(err, ErrNoPane) {
		t.Fatalf("find a missing session: %v", err)
	}

	// The whole server goes away.
	b := startAgent(t, s, "0.1", StartOptions{})
	term = b.bind(t, Options{})
	if err := s.KillServer(ctx); err != nil {
		t.Fatal(err)
	}
	if err := term.Deliver(ctx, "hello"); !errors.Is(err, ErrNoServer) {
		t.Fatalf("deliver after the server went: %v", err)
	}
}

func TestStartWindowsFindAndBindFromTheSocket(t *testing.T) {
	s := newServer(t)
	ctx := testCtx(t, 30*time.Second)
	dir := t.TempDir()
	alice, err := s.Start(ctx, StartOptions{Session: "agents", Window: "alice", Dir: dir, Env: []string{"GREETING=hi there"},
		Command: []string{"sh", "-c", `pwd; echo "$GREETING"; exec sleep 60`}})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := s.Start(ctx, StartOptions{InSession: "agents", Window: "bob", Command: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	if alice.Session != "agents" || bob.Session != "agents" || alice.ID == bob.ID || alice.Window == bob.Window {
		t.Fatalf("alice %+v bob %+v", alice, bob)
	}
	if _, err := s.Start(ctx, StartOptions{Session: "agents", Command: []string{"true"}}); !errors.Is(err, ErrSessionExists) {
		t.Fatalf("a second session agents: %v", err)
	}
	dotted, err := s.Start(ctx, StartOptions{Session: "reviewer@host.example:2", Command: []string{"sleep", "60"}})
	if err != nil || dotted.Session != "reviewer@host_example_2" {
		t.Fatalf("a session name with dots: %+v %v", dotted, err)
	}
	found, err := s.FindPane(ctx, "agents:bob")
	if err != nil || found.ID != bob.ID {
		t.Fatalf("find agents:bob: %+v %v", found, err)
	}
	// Another process finds the server again from the socket path alone.
	again := alice.Server()
	waitFor(t, 20*time.Second, "alice's output", func() bool {
		sc, err := again.Capture(ctx, alice.ID)
		return err == nil && strings.Contains(sc.Text(), dir) && strings.Contains(sc.Text(), "hi there")
	})
	waitFor(t, 20*time.Second, "bob to run sleep", func() bool {
		st, err := again.Inspect(ctx, bob.ID)
		return err == nil && st.Command == "sleep" && st.PID == bob.PID
	})
}

func TestLaunchCurrentAndAttach(t *testing.T) {
	s := newServer(t)
	script, _ := filepath.Abs("testdata/fakeagent.sh")
	log := filepath.Join(t.TempDir(), "taken")
	p, term, err := Launch(testCtx(t, 20*time.Second), s, StartOptions{Session: "carol", Command: []string{script},
		Env: []string{"FAKE_LOG=" + log, "INPUTRC=/dev/null"}}, Options{Quiet: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := term.Deliver(testCtx(t, 20*time.Second), "launched"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { endProcess(t, s, p) })
	a := agent{s: s, pane: p, log: log}
	waitFor(t, 20*time.Second, "the read", func() bool { return equal(a.taken(), []string{"launched"}) })

	env := map[string]string{"TMUX": p.Socket + ",1234,0", "TMUX_PANE": p.ID}
	cs, pane, ok := Current(func(k string) string { return env[k] })
	if !ok || cs.Socket != p.Socket || pane != p.ID {
		t.Fatalf("Current: %+v %q %v", cs, pane, ok)
	}
	if _, _, ok := Current(func(string) string { return "" }); ok {
		t.Fatal("Current outside tmux")
	}
	if got := strings.Join(cs.AttachCommand("carol"), " "); got != "tmux -S "+p.Socket+" attach-session -t =carol" {
		t.Fatalf("attach: %s", got)
	}
}

// A blank cursor line is not taken for the empty prompt at once, even when
// the prompt pattern takes a blank line: a program that printed a line and
// works on without output shows one too. Only the quiet period makes it
// idle (it was pasted into two looks after the output stopped).
func TestBlankLineIsNoPromptAtOnce(t *testing.T) {
	s := newServer(t)
	ctx := testCtx(t, 30*time.Second)
	p, err := s.Start(ctx, StartOptions{Command: []string{"sh", "-c", "echo thinking; sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the output", func() bool {
		sc, err := s.Capture(ctx, p.ID)
		return err == nil && strings.Contains(sc.Text(), "thinking") && sc.CursorLine() == ""
	})
	term := Bind(s, p.ID, Options{Prompt: regexp.MustCompile(`^$`), Quiet: time.Hour})
	if err := term.Deliver(testCtx(t, 1500*time.Millisecond), "pasted"); !errors.Is(err, ErrBusy) {
		t.Fatalf("deliver at a blank line while the program works: %v", err)
	}
	if sc, err := s.Capture(ctx, p.ID); err != nil || strings.Contains(sc.Text(), "pasted") {
		t.Fatalf("pasted into a working program (%v):\n%s", err, sc.Text())
	}
	// A prompt that is not blank still makes a stable screen idle at once.
	q := startAgent(t, s, "0.1", StartOptions{})
	if err := q.bind(t, Options{Prompt: regexp.MustCompile(`^> ?$`), Quiet: time.Hour}).Deliver(testCtx(t, 10*time.Second), "at the prompt"); err != nil {
		t.Fatal(err)
	}
}

// A server with no session left (its last pane just closed, and it has not
// exited yet) says "no current target" for a pane: the pane is gone
// (before, it was an error of its own, which a caller did not take for a
// pane that is gone).
func TestPaneOfAServerWithNoSessionIsGone(t *testing.T) {
	s := newServer(t)
	ctx := testCtx(t, 30*time.Second)
	// exit-empty off keeps the server running without a session.
	if _, err := s.run(ctx, nil, "start-server", ";", "set-option", "-s", "exit-empty", "off"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Inspect(ctx, "%0"); !errors.Is(err, ErrNoPane) {
		t.Fatalf("a pane of a server with no session: %v", err)
	}
}

// tmux 3.6b and later also say "no current target" while sessions exist,
// when none of them is, for a moment, any use as a start (a session of a
// group being synchronised has no current window): a pane looked for then
// is not taken for gone unless tmux, asked again, lists no such pane
// (before, any "no current target" was ErrNoPane, and a route whose pane
// still ran ended as if it had closed). A tmux wrapper stands in for that
// tmux: it answers a pane's list-panes so while the file armed exists.
func TestNoCurrentTargetWhileSessionsLiveIsNotAPaneGone(t *testing.T) {
	s := newServer(t)
	ctx := testCtx(t, 30*time.Second)
	real, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	armed, bin := filepath.Join(dir, "armed"), filepath.Join(dir, "tmux")
	script := "#!/bin/sh\nif [ -e '" + armed + "' ]; then\n  case \" $* \" in *\" list-panes \"*) echo 'no current target' >&2; exit 1 ;; esac\nfi\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	live := startAgent(t, s, "1", StartOptions{})
	other := startAgent(t, s, "1", StartOptions{})
	ws := s
	ws.Bin = bin
	if err := os.WriteFile(armed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Inspect(ctx, live.pane.ID); err == nil || errors.Is(err, ErrNoPane) || !strings.Contains(err.Error(), "no current target") {
		t.Fatalf("a live pane, tmux saying no current target: %v", err)
	}
	if err := s.KillPane(ctx, live.pane.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Inspect(ctx, live.pane.ID); !errors.Is(err, ErrNoPane) {
		t.Fatalf("a closed pane, tmux saying no current target while another session lives: %v", err)
	}
	if _, err := ws.Inspect(ctx, other.pane.ID); errors.Is(err, ErrNoPane) {
		t.Fatalf("the other live pane: %v", err)
	}
}
