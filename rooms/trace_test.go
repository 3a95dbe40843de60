package rooms_test

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// stamps records the trace of each node: event → stage → time.
type stamps struct {
	mu sync.Mutex // protects at
	at []map[rooms.ID]map[rooms.Stage]time.Time
}

func (s *stamps) get(i int, id rooms.ID, st rooms.Stage) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.at[i][id][st]
	return t, ok
}

// TestTraceStages: an own event is published, then acknowledged once it is
// durable; a receiver validates, stores and shows it, in that order.
func TestTraceStages(t *testing.T) {
	s := &stamps{at: make([]map[rooms.ID]map[rooms.Stage]time.Time, 2)}
	for i := range s.at {
		s.at[i] = make(map[rooms.ID]map[rooms.Stage]time.Time)
	}
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Second
		c.RoomTrace = func(_ identity.RoomID, id rooms.ID, st rooms.Stage, at time.Time) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.at[i][id] == nil {
				s.at[i][id] = make(map[rooms.Stage]time.Time)
			}
			s.at[i][id][st] = at
		}
	}))
	room := openRoom(t, nt, 1)
	ctx := context.Background()
	var id rooms.ID
	// The mesh may take a moment to form: until then events come by sync
	// and skip the validator. Say until one comes by gossip.
	ok := nodetest.Poll(60*time.Second, func() bool {
		var err error
		id, err = mgr(nt, 0).Say(ctx, room, rooms.SayArgs{Agent: identity.HumanAgent, Text: "hello"})
		if err != nil {
			t.Fatal(err)
		}
		acked := time.Now()
		durable, ok := s.get(0, id, rooms.StageDurable)
		if !ok || durable.After(acked) {
			t.Fatalf("post returned at %v, durable at %v (%v)", acked, durable, ok)
		}
		if _, ok := s.get(0, id, rooms.StagePublished); !ok {
			t.Fatal("an own event was not published before its post returned")
		}
		return nodetest.Poll(10*time.Second, func() bool {
			_, ok := s.get(1, id, rooms.StageVisible)
			return ok
		}) && func() bool { _, ok := s.get(1, id, rooms.StageValidated); return ok }()
	})
	if !ok {
		t.Fatal("no event reached node 1 by gossip")
	}
	v, _ := s.get(1, id, rooms.StageValidated)
	st, _ := s.get(1, id, rooms.StageStored)
	vis, _ := s.get(1, id, rooms.StageVisible)
	if st.Before(v) || vis.Before(st) {
		t.Fatalf("receiver stages out of order: validated %v, stored %v, visible %v", v, st, vis)
	}
}

// TestSinceFromRecentViews: what Since returns from a busy room's recent
// views is what it reads from the store once the room is idle.
func TestSinceFromRecentViews(t *testing.T) {
	// Anti-entropy, rare here, would keep the rooms busy.
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Hour
	}))
	room := openRoom(t, nt, 1)
	ctx := context.Background()
	reply, err := mgr(nt, 0).Say(ctx, room, rooms.SayArgs{Agent: identity.HumanAgent, Text: "first"})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []rooms.SayArgs{
		{Agent: identity.HumanAgent, Text: "an answer", ReplyTo: &reply},
		{Agent: identity.HumanAgent, Text: "a question?", Ask: true, To: "someone@" + nt.ID(1).String()},
	} {
		if _, err := mgr(nt, 0).Say(ctx, room, a); err != nil {
			t.Fatal(err)
		}
	}
	waitConverged(t, nt, room, 6, 40*time.Second, 0, 1)
	var hot, hotTail [2][]rooms.View
	for i := range 2 {
		if !mgr(nt, i).KeepsViews(room) {
			t.Skipf("node %d's room went idle before it was read (a slow machine)", i)
		}
		if hot[i], err = mgr(nt, i).Since(room, 0, 100); err != nil {
			t.Fatal(err)
		}
		if hotTail[i], err = mgr(nt, i).Since(room, 3, 2); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		nt.WaitFor(30*time.Second, func() bool { return !mgr(nt, i).KeepsViews(room) }, "node %d's room to go idle", i)
		cold, err := mgr(nt, i).Since(room, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(hot[i]) != 6 || !reflect.DeepEqual(hot[i], cold) {
			t.Fatalf("node %d: Since from recent views:\n%+v\nfrom the store:\n%+v", i, hot[i], cold)
		}
		if !reflect.DeepEqual(hotTail[i], cold[3:5]) {
			t.Fatalf("node %d: Since(3, 2) from recent views:\n%+v\nfrom the store:\n%+v", i, hotTail[i], cold[3:5])
		}
	}
}
