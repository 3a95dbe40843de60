package inbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/inbox"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
)

// An ask from a node whose clock is two hours behind is dated older than
// the ask's time to live; it is owed all the same, for that time from when
// it reached this node (before, it was dropped before it was ever shown).
// One dated two hours ahead ends an hour after it came, not an hour after
// its date.
func TestAskTimeToLiveRunsFromItsArrival(t *testing.T) {
	for _, skew := range []time.Duration{-2 * time.Hour, 2 * time.Hour} {
		t.Run(skew.String(), func(t *testing.T) {
			nt := start(t, 2, func(c *node.Config) {
				if c.Handle == "node0" {
					c.RoomClock = func() time.Time { return time.Now().Add(skew) }
				}
			})
			ctx := context.Background()
			bob := register(t, nt, 1, "bob")
			if _, err := ib(nt, 0).OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "design", Members: []string{bob}}); err != nil {
				t.Fatal(err)
			}
			a, err := ib(nt, 0).Ask(ctx, "human", localapi.AskRequest{Room: "design", To: bob, Text: "which port?"})
			if err != nil {
				t.Fatal(err)
			}
			var owed []localapi.Item
			nt.WaitFor(30*time.Second, func() bool {
				owed, err = ib(nt, 1).Owed(ctx, "bob")
				return err == nil && len(owed) == 1
			}, "bob to owe the ask")
			if owed[0].ID != a.AskID {
				t.Fatalf("owed: %+v", owed)
			}
			now := time.Now().UnixMilli()
			ttl := inbox.DefaultAskTTL.Milliseconds()
			if exp := owed[0].Expires; exp < now+ttl-60_000 || exp > now+ttl+1000 {
				t.Fatalf("the ask ends at %s, not an hour after it came (%s)", time.UnixMilli(exp), time.UnixMilli(now+ttl))
			}
			p, err := ib(nt, 1).Take(ctx, "bob")
			if err != nil || len(p.Items) == 0 || p.Items[0].Kind != "ask" || p.Items[0].ID != a.AskID {
				t.Fatalf("bob's pending: %+v, %v", p.Items, err)
			}
		})
	}
}
