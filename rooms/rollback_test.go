package rooms_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// sayRetry posts as soon as the node may: it retries while the node is
// still learning its own events from its peers.
func sayRetry(t *testing.T, nt *nodetest.Net, i int, id identity.RoomID, text string) rooms.ID {
	t.Helper()
	var eid rooms.ID
	var err error
	nodetest.Poll(60*time.Second, func() bool {
		eid, err = mgr(nt, i).Say(context.Background(), id, rooms.SayArgs{Agent: identity.HumanAgent, Text: text})
		return !errors.Is(err, rooms.ErrOwnEventsUnknown)
	})
	if err != nil {
		t.Fatalf("node %d say %q: %v", i, text, err)
	}
	return eid
}

func ownSeq(t *testing.T, nt *nodetest.Net, i int, id identity.RoomID) uint64 {
	t.Helper()
	vv, err := mgr(nt, i).VersionVector(id)
	if err != nil {
		t.Fatal(err)
	}
	return vv[nt.ID(i)]
}

// TestRollbackLearnsOwnSeq: a node started on an older copy of its data
// learns its own later events from its members before it posts, so it
// reuses no seq, loses nothing and every node converges.
func TestRollbackLearnsOwnSeq(t *testing.T) {
	nt := startNet(t, 3)
	id := openRoom(t, nt, 1, 2)
	say(t, nt, 1, id, "before the copy")
	waitConverged(t, nt, id, 6, 20*time.Second, 0, 1, 2)
	copied := ownSeq(t, nt, 1, id)
	nt.Crash(1)
	old := nt.CopyData(1)
	nt.Restart(1)
	for _, s := range []string{"one", "two", "three", "four", "five"} {
		sayRetry(t, nt, 1, id, "after the copy: "+s)
	}
	waitConverged(t, nt, id, 11, 20*time.Second, 0, 1, 2)
	high := ownSeq(t, nt, 1, id)
	if high != copied+5 {
		t.Fatalf("node 1 is at seq %d after five posts on a copy at seq %d", high, copied)
	}
	nt.Crash(1)
	nt.RestoreData(1, old)
	// Restarted on the copy (at seq copied), the node may learn its later
	// events from the members before this goroutine looks: what matters is
	// that its next post takes none of their seqs.
	nt.Restart(1)
	t0 := time.Now()
	eid := sayRetry(t, nt, 1, id, "back from the old copy")
	t.Logf("rolled-back node posted %v after its start", time.Since(t0))
	v, err := mgr(nt, 1).Event(id, eid)
	if err != nil || v.Seq != high+1 {
		t.Fatalf("the post after the rollback has seq %d (%v), want %d", v.Seq, err, high+1)
	}
	waitConverged(t, nt, id, 12, 30*time.Second, 0, 1, 2)
}

// TestRollbackForkHeals: a node on an older copy of its data that posts
// before it could learn its own events (no member reachable) reuses seqs;
// once it is back, every node keeps both events of each reused seq, all
// show the same log, and its next posts reach everyone.
func TestRollbackForkHeals(t *testing.T) {
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Second
		c.OwnEventsWait = 200 * time.Millisecond
	}))
	id := openRoom(t, nt, 1, 2)
	nt.Crash(1)
	old := nt.CopyData(1)
	nt.Restart(1)
	for _, s := range []string{"one", "two", "three"} {
		sayRetry(t, nt, 1, id, "the branch the copy lacks: "+s)
	}
	waitConverged(t, nt, id, 8, 20*time.Second, 0, 1, 2)
	nt.Crash(1)
	nt.RestoreData(1, old)
	nt.Partition([]int{0, 2}, []int{1})
	nt.Restart(1)
	for _, s := range []string{"one", "two"} {
		sayRetry(t, nt, 1, id, "offline, from the copy: "+s)
	}
	nt.Heal()
	// Both branches everywhere: 5 + 3 + 2 events.
	waitConverged(t, nt, id, 10, 40*time.Second, 0, 1, 2)
	say(t, nt, 1, id, "after the heal")
	say(t, nt, 0, id, "welcome back")
	waitConverged(t, nt, id, 12, 40*time.Second, 0, 1, 2)
}

// BenchmarkRollbackPostAgain: node 1 of 3 restarts on a copy of its data
// that lacks its last 5 posts, and posts at once (retrying while it
// learns its own events). post-again-ms: restart to the post stored;
// converged-ms: restart to every node holding every event.
//
//	go test -run '^$' -bench RollbackPostAgain -benchtime 5x ./rooms
func BenchmarkRollbackPostAgain(b *testing.B) {
	ctx := context.Background()
	var again, conv time.Duration
	runs := 0
	for b.Loop() {
		b.StopTimer()
		nt := benchNet(b, 3)
		id := benchRoom(b, nt)
		m := func(i int) *rooms.Manager { return nt.Node(i).Rooms() }
		nt.Crash(1)
		old := nt.CopyData(1)
		nt.Restart(1)
		for k := range 5 {
			if !nodetest.Poll(30*time.Second, func() bool {
				_, err := m(1).Say(ctx, id, rooms.SayArgs{Agent: identity.HumanAgent, Text: fmt.Sprint("lost by the copy ", k)})
				return err == nil
			}) {
				b.Fatal("node 1 cannot post")
			}
		}
		in, err := m(1).Get(id)
		if err != nil {
			b.Fatal(err)
		}
		want := in.Events + 1
		nt.WaitFor(30*time.Second, func() bool {
			a, _ := m(0).Get(id)
			c, _ := m(2).Get(id)
			return a.Events == want-1 && c.Events == want-1
		}, "nodes 0 and 2 to hold node 1's posts")
		nt.Crash(1)
		nt.RestoreData(1, old)
		b.StartTimer()
		t0 := time.Now()
		nt.Restart(1)
		var serr error
		if !nodetest.Poll(30*time.Second, func() bool {
			_, serr = m(1).Say(ctx, id, rooms.SayArgs{Agent: identity.HumanAgent, Text: "back"})
			return !errors.Is(serr, rooms.ErrOwnEventsUnknown)
		}) || serr != nil {
			b.Fatalf("post after the rollback: %v", serr)
		}
		t1 := time.Now()
		nt.WaitFor(30*time.Second, func() bool {
			for i := range 3 {
				if in, err := m(i).Get(id); err != nil || in.Events != want {
					return false
				}
			}
			return true
		}, "every node to hold %d events", want)
		b.StopTimer()
		again += t1.Sub(t0)
		conv += time.Since(t0)
		runs++
		nt.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(again.Microseconds())/1000/float64(runs), "post-again-ms")
	b.ReportMetric(float64(conv.Microseconds())/1000/float64(runs), "converged-ms")
}
