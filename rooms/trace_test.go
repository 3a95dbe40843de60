package rooms_test

import (
	"context"
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
