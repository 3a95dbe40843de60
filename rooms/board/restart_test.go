package board_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// TestBoardSameAfterACrash: a node crashes and restarts; its board, read
// again from its store, holds the same claims with the same since and
// expiry, on it and on the node that stayed up, and a claim whose ttl ran
// out while it was down is gone on both.
func TestBoardSameAfterACrash(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.Befriend(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "long", time.Hour, 0, "long.go"); err != nil {
		t.Fatal(err)
	}
	if _, err := claim(ctx, nt, 1, "bob", "short", 2*time.Second, 0, "short.go"); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool { return len(live(t, nt, 0)) == 2 && len(live(t, nt, 1)) == 2 }, "both boards to hold both claims")
	before := live(t, nt, 0)
	nt.Crash(0)
	nt.WaitFor(30*time.Second, func() bool { return len(live(t, nt, 1)) == 1 }, "bob's short claim to expire")
	nt.Restart(0)
	nt.WaitFor(30*time.Second, func() bool {
		a, b := live(t, nt, 0), live(t, nt, 1)
		return len(a) == 1 && reflect.DeepEqual(a, b)
	}, "the restarted node to agree with the other")
	if a := live(t, nt, 0); a[0] != before[0] {
		t.Fatalf("after the restart %+v, before %+v", a[0], before[0])
	}
	if _, err := claim(ctx, nt, 1, "bob", "mine now?", time.Hour, 0, "long.go"); err == nil {
		t.Fatal("bob granted long.go, alice's, after her node restarted")
	}
}
