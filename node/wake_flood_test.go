package node_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/manual"
	"github.com/parley-mesh/parley/internal/wake/tmux"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestWakeHandsTheFirstAskFirstNotBackdatedOnes: the wake-up service hands
// an idle agent's owed asks to its route in the order they arrived at this
// node, as the inbox lists them, not by the date their sender wrote on
// them. Here a local agent (alice) asks bot first; then a room member
// (node 1), whose events are dated an hour back, asks bot 30 times. The
// channel route gets one notification per item in the order handed, and a
// terminal paste shows its first item in full and the rest as one line
// each (or "… and N more"): handed by the sender's date, the member's
// backdated asks came first, and alice's, the first to arrive, was a line
// at the end of the paste or none.
func TestWakeHandsTheFirstAskFirstNotBackdatedOnes(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.AgentPostLimit = -1
		if i == 1 {
			c.RoomClock = func() time.Time { return time.Now().Add(-time.Hour) }
		}
	}))
	ctx, c := wakeNet(t, nt)
	c0, c1, me := c[0], c[1], nt.ID(0).String()
	registered(t, ctx, c0, "bot", "alice")
	registered(t, ctx, c1, "mallory")

	local, err := c0.OpenRoom(ctx, "alice", localapi.OpenRoomRequest{Name: "team", Members: []string{"bot"}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := c0.Ask(ctx, "alice", localapi.AskRequest{Room: local.RoomID, To: "bot", Text: "may I deploy?"})
	if err != nil {
		t.Fatal(err)
	}
	spam, err := c1.OpenRoom(ctx, "mallory", localapi.OpenRoomRequest{Name: "spam", Members: []string{"bot@" + me}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 30
	for i := range n {
		if _, err := c1.Ask(ctx, "mallory", localapi.AskRequest{Room: spam.RoomID, To: "bot@" + me, Text: fmt.Sprintf("ask %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	nt.WaitFor(time.Minute, func() bool {
		owed, err := c0.Owed(ctx, "bot")
		return err == nil && len(owed) == n+1
	}, "bot to owe %d asks", n+1)

	w, err := c0.WakeWait(ctx, "bot", localapi.WakeWaitRequest{Kind: localapi.WakeChannel, Session: "s-flood", Seconds: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Items) == 0 {
		t.Fatal("the channel route was handed nothing")
	}
	i := slices.IndexFunc(w.Items, func(it localapi.Item) bool { return it.ID == first.AskID })
	if i != 0 {
		// What a terminal route would paste: the first item in full.
		t.Fatalf("the ask that came first is item %d of %d handed to the route (-1: not handed); the first is %s from %s; a paste:\n%s",
			i, len(w.Items), w.Items[0].ID, w.Items[0].From, manual.Wake(w.Items, "bot@"+me, manual.Shell{Agent: "bot"}))
	}
}

// TestWakePasteShowsAnotherNodesAskDespiteAFlood: a room member (node 1)
// asks an idle terminal agent 30 times; then a local agent (alice) asks it
// once. The terminal route's first paste shows alice's ask, as the inbox
// gives a take's asks in turns by asking node: a wake text shows its first
// item in full and a few more as a line each, the rest only counted ("…
// and 28 more"), so in the order of arrival alice's was only counted. And
// every item handed to the paste counted as pasted (read): hers was never
// pasted again, and her human was never told.
func TestWakePasteShowsAnotherNodesAskDespiteAFlood(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.AgentPostLimit = -1
		c.WakeLimit = time.Second
	}))
	ctx, c := wakeNet(t, nt)
	c0, c1, me := c[0], c[1], nt.ID(0).String()
	registered(t, ctx, c0, "bot", "alice")
	registered(t, ctx, c1, "mallory")

	spam, err := c1.OpenRoom(ctx, "mallory", localapi.OpenRoomRequest{Name: "spam", Members: []string{"bot@" + me}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 30
	for i := range n {
		if _, err := c1.Ask(ctx, "mallory", localapi.AskRequest{Room: spam.RoomID, To: "bot@" + me, Text: fmt.Sprintf("spam %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	nt.WaitFor(time.Minute, func() bool {
		owed, err := c0.Owed(ctx, "bot")
		return err == nil && len(owed) == n
	}, "bot to owe %d asks", n)
	local, err := c0.OpenRoom(ctx, "alice", localapi.OpenRoomRequest{Name: "team", Members: []string{"bot"}})
	if err != nil {
		t.Fatal(err)
	}
	honest, err := c0.Ask(ctx, "alice", localapi.AskRequest{Room: local.RoomID, To: "bot", Text: "may I deploy?"})
	if err != nil {
		t.Fatal(err)
	}

	pane, taken := fakeAgentPane(ctx, t, nt)
	if err := c0.WakeTerminal(ctx, "bot", localapi.TerminalRequest{Socket: pane.Socket, Pane: pane.ID, Prompt: "> "}); err != nil {
		t.Fatal(err)
	}
	var lines []string
	nt.WaitFor(30*time.Second, func() bool {
		b, _ := os.ReadFile(taken)
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		return len(lines) > 0 && strings.Contains(lines[0], "Parley:")
	}, "the first paste")
	if !strings.Contains(lines[0], honest.AskID) {
		t.Fatalf("the first paste (%d characters) does not show alice's ask %s:\n%s", len(lines[0]), honest.AskID, lines[0])
	}
}

// TestWakeSeesAnAskBehindALongOne: a room member (node 1) asks bot once,
// at the most an ask may be (64 KiB); then a local agent (alice) asks bot.
// No route reaches bot: once the wake limit passes, its human is told of
// both. Found: the wake-up service sees only what a peek lists, within
// the inbox's PendingBudget (32 KiB); the first ask fills it, so alice's,
// left out, waits unseen (not handed to any route, the human not told)
// for as long as the long one is owed and not shown: an hour, for an
// agent that takes nothing (a terminal agent given pastes). An item that
// leaves a peek's list for want of room counts as read, too: its human's
// mark goes, and once back it is handed again to a route that had it.
func TestWakeSeesAnAskBehindALongOne(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.WakeLimit = 500 * time.Millisecond
	}))
	ctx, c := wakeNet(t, nt)
	c0, c1, me := c[0], c[1], nt.ID(0).String()
	registered(t, ctx, c0, "bot", "alice")
	registered(t, ctx, c1, "mallory")

	spam, err := c1.OpenRoom(ctx, "mallory", localapi.OpenRoomRequest{Name: "spam", Members: []string{"bot@" + me}})
	if err != nil {
		t.Fatal(err)
	}
	long, err := c1.Ask(ctx, "mallory", localapi.AskRequest{Room: spam.RoomID, To: "bot@" + me, Text: strings.Repeat("x", 64<<10-16)})
	if err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(time.Minute, func() bool {
		owed, err := c0.Owed(ctx, "bot")
		return err == nil && len(owed) == 1 && owed[0].ID == long.AskID
	}, "bot to owe the long ask")
	local, err := c0.OpenRoom(ctx, "alice", localapi.OpenRoomRequest{Name: "team", Members: []string{"bot"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c0.Ask(ctx, "alice", localapi.AskRequest{Room: local.RoomID, To: "bot", Text: "may I deploy?"}); err != nil {
		t.Fatal(err)
	}
	unreached := func() int {
		ws, err := c0.WakeStatus(ctx)
		if err != nil {
			return -1
		}
		for _, w := range ws {
			if w.Agent == "bot" {
				return w.Unreached
			}
		}
		return 0
	}
	if !nodetest.Poll(20*time.Second, func() bool { return unreached() >= 2 }) {
		owed, _ := c0.Owed(ctx, "bot")
		p, _ := c0.Peek(ctx, "bot")
		t.Fatalf("bot owes %d asks (a peek lists %d items, %d asks left out); its human was told of %d items", len(owed), len(p.Items), p.OwedLeftOut, unreached())
	}
}

// TestWakeRestartDoesNotPasteAgain: an ask pasted into an idle terminal
// agent's pane counts as reached (it is not pasted again, its human not
// told). A restart of the node takes the pane up again (Restore); the ask,
// still owed (a terminal agent may take nothing), must not be pasted into
// the pane a second time. Found: what was pasted is kept in memory only,
// so every restart pastes again all the owed items it can (with a flood,
// a full wake text), and tells the human of them once the limit passes.
func TestWakeRestartDoesNotPasteAgain(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	nt := nodetest.Start(t, 1, nodetest.WithConfig(func(_ int, c *node.Config) { c.WakeLimit = time.Second }))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n := nt.Node(0)
	if _, err := n.Agents().Session(ctx, agents.SessionRequest{Session: "s1", Name: "bot", Client: "terminal", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	room, err := n.Inbox().OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "ops", Members: []string{"bot"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Inbox().Take(ctx, "bot"); err != nil { // the invitation
		t.Fatal(err)
	}
	if _, err := n.Inbox().Ask(ctx, "human", localapi.AskRequest{Room: room.RoomID, To: "bot", Text: "which port?"}); err != nil {
		t.Fatal(err)
	}
	pane, taken := fakeAgentPane(ctx, t, nt)
	if err := n.Wake().WakeTerminal(ctx, "bot", localapi.TerminalRequest{Socket: pane.Socket, Pane: pane.ID, Prompt: "> ", Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	pastes := func() int { b, _ := os.ReadFile(taken); return strings.Count(string(b), "which port?") }
	nt.WaitFor(30*time.Second, func() bool { return pastes() == 1 }, "the paste")

	nt.Crash(0)
	n = nt.Restart(0)
	terminal := func() bool {
		for _, w := range n.Wake().WakeStatus(ctx) {
			if w.Agent == "bot" && slices.Contains(w.Routes, localapi.WakeTerminal) {
				return true
			}
		}
		return false
	}
	nt.WaitFor(30*time.Second, terminal, "the pane taken up again")
	// Three wake limits, and the agent idle at its prompt all along.
	start := time.Now()
	nodetest.Poll(5*time.Second, func() bool { return pastes() > 1 || time.Since(start) > 4*time.Second })
	if k := pastes(); k != 1 {
		t.Fatalf("the ask was pasted %d times into the pane: again after the node restarted", k)
	}
}

// TestWakeStopHookFloodWakesWithoutEnd: a room member asks an idle Claude
// Code session again each time it stops (its node's post limit is its
// own to set, and the receiving node limits no member's asks). Each Stop
// hook waiter is handed the new ask and wakes the session for a turn of
// its model: 20 asks, 20 turns, for as long as the member goes on, while
// the agent answers none. Found: no wake-up route has a budget per asking
// node; a member keeps an agent working (and its person paying) without
// end. Suggested: after a few wakes for one node's asks that the agent
// left unanswered, its further asks wake nothing (they ride in tool
// results), and the human is told.
func TestWakeStopHookFloodWakesWithoutEnd(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) { c.AgentPostLimit = -1 }))
	ctx, c := wakeNet(t, nt)
	c0, c1, me := c[0], c[1], nt.ID(0).String()
	registered(t, ctx, c0, "bot")
	registered(t, ctx, c1, "mallory")
	spam, err := c1.OpenRoom(ctx, "mallory", localapi.OpenRoomRequest{Name: "spam", Members: []string{"bot@" + me}})
	if err != nil {
		t.Fatal(err)
	}
	wakes := 0
	for i := range 20 {
		a, err := c1.Ask(ctx, "mallory", localapi.AskRequest{Room: spam.RoomID, To: "bot@" + me, Text: fmt.Sprintf("still there? %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		nt.WaitFor(time.Minute, func() bool {
			owed, err := c0.Owed(ctx, "bot")
			return err == nil && slices.ContainsFunc(owed, func(it localapi.Item) bool { return it.ID == a.AskID })
		}, "bot to owe ask %d", i)
		// The session stops: its Stop hook waits, is handed what is new,
		// takes it (as the hook does) and wakes the session.
		w, err := c0.WakeWait(ctx, "bot", localapi.WakeWaitRequest{Kind: localapi.WakeStop, Session: "s1", Seconds: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(w.Items) > 0 {
			wakes++
			if _, err := c0.Take(ctx, "bot"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if wakes > 5 {
		t.Fatalf("one member's 20 unanswered asks woke the idle session %d times", wakes)
	}
}

// TestWakeBudgetSpentLeavesOtherNodesAndComesBack: once a member's (node
// 1) unanswered asks woke an idle session its budget's worth (3 times),
// its next ask wakes nothing and its human is told; another node's ask
// (node 2) still wakes the session at once, handed alone; once the agent
// answers or dismisses all of node 1's asks, its next ask wakes the
// session again.
func TestWakeBudgetSpentLeavesOtherNodesAndComesBack(t *testing.T) {
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) { c.AgentPostLimit = -1 }))
	ctx, c := wakeNet(t, nt)
	c0, c1, c2, me := c[0], c[1], c[2], nt.ID(0).String()
	registered(t, ctx, c0, "bot")
	registered(t, ctx, c1, "mallory")
	registered(t, ctx, c2, "carol")
	spam, err := c1.OpenRoom(ctx, "mallory", localapi.OpenRoomRequest{Name: "spam", Members: []string{"bot@" + me}})
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	ask := func(c *localapi.Client, who, room, text string) string {
		t.Helper()
		a, err := c.Ask(ctx, who, localapi.AskRequest{Room: room, To: "bot@" + me, Text: text})
		if err != nil {
			t.Fatal(err)
		}
		nt.WaitFor(time.Minute, func() bool {
			owed, err := c0.Owed(ctx, "bot")
			return err == nil && slices.ContainsFunc(owed, func(it localapi.Item) bool { return it.ID == a.AskID })
		}, "bot to owe %s", a.AskID)
		return a.AskID
	}
	// stop is one Stop of the session: its hook waits, and takes what it
	// is handed.
	stop := func(seconds float64) []localapi.Item {
		t.Helper()
		w, err := c0.WakeWait(ctx, "bot", localapi.WakeWaitRequest{Kind: localapi.WakeStop, Session: "s1", Seconds: seconds})
		if err != nil {
			t.Fatal(err)
		}
		if len(w.Items) > 0 {
			if _, err := c0.Take(ctx, "bot"); err != nil {
				t.Fatal(err)
			}
		}
		return w.Items
	}
	for i := range 3 {
		asked = append(asked, ask(c1, "mallory", spam.RoomID, fmt.Sprintf("still there? %d", i)))
		if len(stop(20)) == 0 {
			t.Fatalf("mallory's ask %d woke nothing within the budget", i)
		}
	}
	asked = append(asked, ask(c1, "mallory", spam.RoomID, "still there? 3"))
	if items := stop(2); len(items) > 0 {
		t.Fatalf("mallory's 4th unanswered ask woke the session (budget spent): %v", items)
	}
	nt.WaitFor(20*time.Second, func() bool {
		ws, _ := c0.WakeStatus(ctx)
		return slices.ContainsFunc(ws, func(w localapi.WakeStatus) bool { return w.Agent == "bot" && w.Unreached >= 1 })
	}, "bot's human to be told of the ask held back")

	team, err := c2.OpenRoom(ctx, "carol", localapi.OpenRoomRequest{Name: "team", Members: []string{"bot@" + me}})
	if err != nil {
		t.Fatal(err)
	}
	honest := ask(c2, "carol", team.RoomID, "may I deploy?")
	items := stop(20)
	if !slices.ContainsFunc(items, func(it localapi.Item) bool { return it.ID == honest }) {
		t.Fatalf("carol's ask did not wake the session while mallory's budget was spent: %v", items)
	}
	for _, it := range items {
		if strings.HasSuffix(it.From, "@"+nt.ID(1).String()) {
			t.Fatalf("mallory's held item %s rode along on carol's wake-up", it.ID)
		}
	}

	// bot dismisses all of mallory's asks: it owes node 1 nothing.
	for _, id := range asked {
		if _, err := c0.Dismiss(ctx, "bot", localapi.DismissRequest{AskID: id}); err != nil {
			t.Fatal(err)
		}
	}
	again := ask(c1, "mallory", spam.RoomID, "one more")
	items = stop(20)
	if !slices.ContainsFunc(items, func(it localapi.Item) bool { return it.ID == again }) {
		t.Fatalf("mallory's ask did not wake the session once bot owed node 1 nothing: %v", items)
	}
}

// fakeAgentPane starts internal/wake/tmux/testdata/fakeagent.sh, a
// terminal agent that logs what it takes to the file taken, in a pane of
// a tmux server of its own, and waits for its prompt.
func fakeAgentPane(ctx context.Context, t *testing.T, nt *nodetest.Net) (pane tmux.Pane, taken string) {
	t.Helper()
	srv := tmux.Server{Name: fmt.Sprintf("parley-wake-%d-%d", os.Getpid(), time.Now().UnixNano()), Config: "/dev/null"}
	t.Cleanup(func() { srv.KillServer(context.Background()) }) //nolint:errcheck // gone already is fine
	script, err := filepath.Abs(filepath.Join("..", "internal", "wake", "tmux", "testdata", "fakeagent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	taken = filepath.Join(t.TempDir(), "taken")
	pane, err = srv.Start(ctx, tmux.StartOptions{Command: []string{script}, Env: []string{"FAKE_LOG=" + taken, "FAKE_WORK=0.05", "INPUTRC=/dev/null"}})
	if err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		sc, err := srv.Capture(ctx, pane.ID)
		return err == nil && sc.CursorLine() == ">"
	}, "the agent's prompt")
	return pane, taken
}

// wakeNet connects nt's nodes, makes each of the others node 0's contact,
// and returns a context for the test and a local API client of each node.
func wakeNet(t *testing.T, nt *nodetest.Net) (context.Context, []*localapi.Client) {
	t.Helper()
	nt.ConnectAll()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	var cs []*localapi.Client
	for i := range nt.Len() {
		if i > 0 {
			nt.Befriend(t, i, 0)
		}
		c := localapi.NewClient(node.SocketPath(nt.Home(i)))
		t.Cleanup(func() { c.Close() })
		cs = append(cs, c)
	}
	return ctx, cs
}
