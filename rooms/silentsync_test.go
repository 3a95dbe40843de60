package rooms_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// silentNet is three nodes in a room with anti-entropy out of the way,
// and hold, which gives node 1 an event that only it holds (stored there
// as if it had come by catch-up: no gossip carries it, and no nudge).
func silentNet(t *testing.T) (nt *nodetest.Net, id identity.RoomID, hold func()) {
	t.Helper()
	nt = nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = time.Hour
	}))
	id = openRoom(t, nt, 1, 2)
	say(t, nt, 1, id, "seen by all")
	nt.WaitFor(10*time.Second, func() bool {
		return logHas(nt, 0, id, "seen by all") && logHas(nt, 2, id, "seen by all")
	}, "every node to hold node 1's post")
	return nt, id, func() {
		t.Helper()
		vs := must(mgr(nt, 1).Log(id, 100, nil))
		head := vs[len(vs)-1]
		var seq uint64
		for _, v := range vs {
			if v.Author == nt.ID(1) {
				seq = max(seq, v.Seq)
			}
		}
		e := rooms.Event{Room: id, Author: nt.ID(1), Agent: identity.HumanAgent, Seq: seq + 1, Parents: []rooms.ID{head.ID},
			Depth: head.Depth + 1, Time: time.Now().UnixMilli(), Kind: rooms.KindMessage, Body: []byte("held by node 1 alone")}
		w, _, err := rooms.Seal(loadKey(t, nt.Home(1)), &e)
		if err != nil {
			t.Fatal(err)
		}
		if err := mgr(nt, 1).ProcessBatch(id, w); err != nil {
			t.Fatal(err)
		}
		if !logHas(nt, 1, id, "held by node 1 alone") {
			t.Fatal("node 1 did not store the event")
		}
	}
}

// TestSilentSyncPeerHoldsNoOtherCatchUp: node 2, a member, takes node 0's
// catch-up Hello and then says nothing. Node 0's catch-up with node 1,
// asked while that one waits, still runs at once, and the silent one is
// given up after the silence limit, counted, and node 2 backed off from
// (not asked again by the room meanwhile).
// Before, a room ran one catch-up at a time and a sync's only limit was a
// minute for the whole exchange: node 1's catch-up waited that minute.
func TestSilentSyncPeerHoldsNoOtherCatchUp(t *testing.T) {
	t.Cleanup(rooms.SetSyncSilence(8 * time.Second))
	nt, id, hold := silentNet(t)
	var hellos atomic.Int32 // node 0's
	quiet := make(chan struct{})
	t.Cleanup(func() { close(quiet) })
	nt.Node(2).Host().SetStreamHandler(rooms.ProtocolSync, func(s network.Stream) {
		if _, err := rooms.ReadHello(s, rooms.MaxFrame); err != nil {
			s.Reset()
			return
		}
		if s.Conn().RemotePeer() == nt.ID(0) {
			hellos.Add(1)
		}
		<-quiet
		s.Reset()
	})
	mgr(nt, 0).RequestSync(id, nt.ID(2))
	nt.WaitFor(10*time.Second, func() bool { return hellos.Load() == 1 }, "node 2 to take node 0's Hello")
	if hellos.Load() != 1 {
		t.Fatal("node 0 asked node 2 twice at once")
	}
	// Node 1 holds an event the others lack, and node 0 asks it for a
	// catch-up while its catch-up with node 2 waits.
	hold()
	mgr(nt, 0).RequestSync(id, nt.ID(1))
	// Well inside the old minute, and inside the silence limit too.
	nt.WaitFor(5*time.Second, func() bool { return logHas(nt, 0, id, "held by node 1 alone") },
		"node 0 to catch up with node 1 while node 2 stays silent")
	nt.WaitFor(20*time.Second, func() bool {
		return syncSessions(t, nt.Node(0), "requester", "silent") == 1 && mgr(nt, 0).StalledFrom(id, nt.ID(2))
	}, "node 0 to give up its catch-up with silent node 2, and back off from it")
	if n := hellos.Load(); n != 1 {
		t.Fatalf("node 2 took %d Hellos of node 0's, want 1", n)
	}
}

// TestBusyResponderIsAskedAgain: node 1 serves as many catch-ups as it has
// slots, all taken, so node 0's catch-up waits for one; node 1 answers
// "busy" before node 0 would give it up as silent, and node 0 asks again
// a moment later and gets node 1's event once a slot is free. Before,
// node 1 let the request wait up to a minute and then reset it plainly,
// which node 0 took for a refusal and did not ask again.
func TestBusyResponderIsAskedAgain(t *testing.T) {
	t.Cleanup(rooms.SetSyncSilence(2 * time.Second))
	t.Cleanup(rooms.SetSyncRetryFirst(200 * time.Millisecond))
	nt, id, hold := silentNet(t)
	release := mgr(nt, 1).HoldServing()
	busy := syncSessions(t, nt.Node(1), "responder", "busy")
	hold()
	mgr(nt, 0).RequestSync(id, nt.ID(1))
	nt.WaitFor(10*time.Second, func() bool { return syncSessions(t, nt.Node(1), "responder", "busy") > busy },
		"node 1 to answer busy")
	nt.WaitFor(10*time.Second, func() bool { n, _ := mgr(nt, 0).SyncRetry(id, nt.ID(1)); return n >= 1 },
		"node 0 to ask node 1 again")
	if s := syncSessions(t, nt.Node(0), "requester", "silent"); s != 0 {
		t.Fatalf("node 0 gave up %v catch-ups as silent: busy came too late", s)
	}
	release()
	nt.WaitFor(15*time.Second, func() bool { return logHas(nt, 0, id, "held by node 1 alone") },
		"node 0 to catch up with node 1 once it has a slot")
}
