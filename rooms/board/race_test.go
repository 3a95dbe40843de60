package board_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// TestBoardConcurrentClaimsOnTwoConnectedNodesOneGranted: alice's node
// and bob's share the board and are connected (no partition). Each claims
// the same file at the same moment. Each node checks only the claims it
// has stored so far, so both may find the file free, post, and tell their
// agent "Claimed": two agents told they hold the same file, one of them
// to learn later that its claim lost. The package says losers come only
// from claims made apart across a partition; here they come from any two
// claims made within the time an event takes to reach the other node.
func TestBoardConcurrentClaimsOnTwoConnectedNodesOneGranted(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "unrelated", time.Hour, 0, "zzz/**"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return len(live(t, nt, 1)) == 1 }, "node 1 to share the board")

	for i := range 10 {
		path := fmt.Sprintf("f%d.go", i)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for n, agent := range []string{"alice", "bob"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[n] = claim(ctx, nt, n, agent, agent+"'s work", time.Hour, 0, path)
			}()
		}
		wg.Wait()
		if errs[0] == nil && errs[1] == nil {
			t.Fatalf("%s: both alice (node 0) and bob (node 1) were told they hold it", path)
		}
	}
}

// TestBoardTwoWaitersOnOtherNodesOneGranted: alice holds x.go; bob (node
// 1) and carol (node 2) each claim it with a wait, as wait_seconds lets
// agents do. Alice releases: the release reaches both nodes at about the
// same time, each wakes its waiter, finds x.go free in its own fold and
// posts, so both are told they hold x.go. Waiting for a release makes two
// claims made together the rule, not a partition's exception.
func TestBoardTwoWaitersOnOtherNodesOneGranted(t *testing.T) {
	nt := nodetest.Start(t, 3)
	nt.Befriend(t, 0, 1)
	nt.Befriend(t, 0, 2)
	nt.Befriend(t, 1, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "alice's work", time.Hour, 0, "x.go"); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, 2} {
		nt.WaitFor(30*time.Second, func() bool { return len(live(t, nt, i)) == 1 }, "node %d to share the board", i)
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	cctx := []context.Context{nil, nil, nil}
	stop := []context.CancelFunc{nil, nil, nil}
	done := make(chan int, 2)
	agents := []string{"", "bob", "carol"}
	for _, i := range []int{1, 2} {
		cctx[i], stop[i] = context.WithCancel(ctx)
		defer stop[i]()
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = claim(cctx[i], nt, i, agents[i], agents[i]+"'s work", time.Hour, 30*time.Second, "x.go")
			done <- i
		}()
	}
	nt.WaitFor(10*time.Second, func() bool {
		return nt.Node(1).Board().Waiting() == 1 && nt.Node(2).Board().Waiting() == 1
	}, "both claims to wait")
	if _, err := nt.Node(0).Board().Release(ctx, "alice", project, nil); err != nil {
		t.Fatal(err)
	}
	// The first told it holds x.go wins; the other's claim, still waiting
	// once its node's board shows the winner holding x.go for an hour,
	// cannot be granted any more: it is ended there rather than left to
	// wait out its 30 s.
	if w := <-done; errs[w] == nil {
		l := 3 - w
		winner := agents[w] + "@" + nt.ID(w).String()
		nt.WaitFor(30*time.Second, func() bool {
			select {
			case <-done:
				return true
			default:
			}
			return holders(live(t, nt, l))["x.go"] == winner && nt.Node(l).Board().Waiting() == 1
		}, "node %d to see %s hold x.go", l, winner)
		stop[l]()
	}
	wg.Wait()
	if errs[1] == nil && errs[2] == nil {
		t.Fatalf("both bob (node 1) and carol (node 2) were told they hold x.go after waiting for alice's release")
	}
}
