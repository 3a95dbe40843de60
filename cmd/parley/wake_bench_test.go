package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// agentTime reads the fake agent's log: how long it took over its last
// line (from reading it to its answer sent).
func agentTime(b *testing.B, log string) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(log)
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	f := strings.Fields(lines[len(lines)-1]) // took START done END
	if len(f) != 4 {
		b.Fatalf("fake agent log line %q", lines[len(lines)-1])
	}
	start, err1 := strconv.ParseFloat(f[1], 64)
	end, err2 := strconv.ParseFloat(f[3], 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("fake agent log line %q", lines[len(lines)-1])
	}
	return time.Duration((end - start) * float64(time.Second))
}

// An ask from node A to a fake terminal agent on node B, idle at its
// prompt in tmux (`parley run`): the time until the answer reaches the
// asker's blocking ask, minus the agent's own time (reading the line and
// running `parley room say`).
//
//	go test -run '^$' -bench TerminalWake -benchtime 10x ./cmd/parley
func BenchmarkTerminalWake(b *testing.B) {
	homeA, homeB, idB, _ := twoContacts(b)
	ta := startTerminalAgent(b, homeB, "fake")
	c := localapi.NewClient(node.SocketPath(homeA))
	defer c.Close()
	ctx := context.Background()
	ask := func() (time.Duration, time.Duration) {
		t0 := time.Now()
		res, err := c.Ask(ctx, "human", localapi.AskRequest{Text: "which port?", To: "fake@" + idB, WaitSeconds: 45})
		total := time.Since(t0)
		if err != nil || res.Reply == nil {
			b.Fatalf("no answer: %+v, %v", res, err)
		}
		return total, agentTime(b, ta.log)
	}
	ask() // the room is made and joined
	var sum, agent time.Duration
	b.ResetTimer()
	for range b.N {
		total, own := ask()
		sum += total - own
		agent += own
	}
	b.ReportMetric(float64(sum.Milliseconds())/float64(b.N), "ms-wake/op")
	b.ReportMetric(float64(agent.Milliseconds())/float64(b.N), "ms-agent/op")
}

// An ask from node A to a Claude Code session on node B whose Stop hook
// waits (asyncRewake, `parley hook claude Stop`): the time from the ask
// until the waiter has written the wake text and exited 2.
//
//	go test -run '^$' -bench StopHookWake -benchtime 10x ./cmd/parley
func BenchmarkStopHookWake(b *testing.B) {
	homeA, homeB, idB, _ := twoContacts(b)
	c := localapi.NewClient(node.SocketPath(homeA))
	defer c.Close()
	cb := localapi.NewClient(node.SocketPath(homeB))
	defer cb.Close()
	ctx := context.Background()
	proj := b.TempDir() + "/shop"
	in := `{"session_id":"bench","cwd":"` + proj + `","hook_event_name":"Stop","stop_hook_active":false}`
	waitRoute := func() {
		nodetest.WaitFor(b, 30*time.Second, func() bool {
			ws, err := cb.WakeStatus(ctx)
			if err != nil {
				return false
			}
			for _, w := range ws {
				for _, r := range w.Routes {
					if r == localapi.WakeStop {
						return true
					}
				}
			}
			return false
		}, "the Stop waiter to wait")
	}
	var sum time.Duration
	for i := -1; i < b.N; i++ {
		if i == 0 {
			b.ResetTimer()
		}
		w := startHook(b, in, "--home", homeB, "hook", "claude", "Stop")
		waitRoute()
		t0 := time.Now()
		ask, err := c.Ask(ctx, "human", localapi.AskRequest{Text: "which port?", To: "claude-code-shop@" + idB})
		if err != nil {
			b.Fatal(err)
		}
		if code := w.exited(b, 60*time.Second); code != 2 {
			b.Fatalf("waiter exit %d: %s", code, w.stderr)
		}
		if i >= 0 {
			sum += time.Since(t0)
			continue
		}
		// The first round also made the room: the waiter may have woken
		// for the invitation alone. Hand the ask out before measuring.
		nodetest.WaitFor(b, 30*time.Second, func() bool {
			owed, err := cb.Owed(ctx, "claude-code-shop")
			return err == nil && len(owed) > 0 && owed[0].ID == ask.AskID
		}, "the first ask to arrive")
		if _, err := cb.Take(ctx, "claude-code-shop"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(sum.Microseconds())/1000/float64(b.N), "ms-wake/op")
}

// An ask from node A to a Codex thread on node B that is idle (its notify
// program, `parley hook codex notify`, ran after its turn) and that no
// route reaches: the time from the ask until B tells the human (the count
// `parley who` and `parley status` show), instead of after the wake limit.
//
//	go test -run '^$' -bench CodexNotifyTells -benchtime 10x ./cmd/parley
func BenchmarkCodexNotifyTells(b *testing.B) {
	homeA, homeB, idB, dB := twoContacts(b)
	c := localapi.NewClient(node.SocketPath(homeA))
	defer c.Close()
	cb := localapi.NewClient(node.SocketPath(homeB))
	defer cb.Close()
	ctx := context.Background()
	proj := b.TempDir() + "/shop"
	notify := `{"type":"agent-turn-complete","thread-id":"bench","turn-id":"t","cwd":"` + proj + `","input-messages":["go"],"last-assistant-message":"done"}`
	unreached := func() int {
		ws, err := cb.WakeStatus(ctx)
		if err != nil {
			return -1
		}
		for _, w := range ws {
			if w.Agent == "codex-shop" {
				return w.Unreached
			}
		}
		return 0
	}
	var sum time.Duration
	for i := -1; i < b.N; i++ {
		if i == 0 {
			b.ResetTimer()
		}
		b.StopTimer()
		if _, errs, code := runStdin(b, "", "--home", homeB, "hook", "codex", "notify", notify); code != 0 {
			b.Fatalf("notify: %s", errs)
		}
		b.StartTimer()
		t0 := time.Now()
		if _, err := c.Ask(ctx, "human", localapi.AskRequest{Text: "which port?", To: "codex-shop@" + idB}); err != nil {
			b.Fatal(err)
		}
		if !nodetest.Poll(30*time.Second, func() bool { return unreached() >= 1 }) {
			ws, _ := cb.WakeStatus(ctx)
			owed, err := cb.Owed(ctx, "codex-shop")
			as, _ := cb.Agents(ctx)
			b.Fatalf("not told (round %d): %+v; owed %+v %v; agents %+v\n%s", i, ws, owed, err, as, dB.stderr)
		}
		if i >= 0 {
			sum += time.Since(t0)
		}
		b.StopTimer()
		// The agent reads: the count and the idle mark go.
		nodetest.WaitFor(b, 30*time.Second, func() bool {
			_, err := cb.Take(ctx, "codex-shop")
			return err == nil && unreached() == 0
		}, "the count to go")
		b.StartTimer()
	}
	b.ReportMetric(float64(sum.Microseconds())/1000/float64(b.N), "ms-told/op")
}
