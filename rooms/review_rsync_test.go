package rooms_test

import (
	"crypto/rand"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/poll"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// TestReviewOrphanFeedingPeerHoldsACatchUpForEver: node 2, a member,
// answers each of node 0's catch-up Hellos with 300 events of a fresh key
// (a stranger), each with a random parent that no node holds or ever
// will, more than the 16 the Hello asked for, and says More. Nothing is
// ever stored, yet the pool's strangers' share (256) evicts the last
// answer's orphans for this one's, so every round parks events that want
// parents the round did not ask for: syncSession counts it as progress
// (wantsMore), clears node 2's stall (noteProgress(p, true)) and asks
// again, up to maxSyncRounds (10,000) rounds, each of which may last up
// to the exchange's minute with no bound on the events read (the Hello's
// Limit is not enforced by the requester), every one of them
// signature-checked. Node 0 never backs off from node 2. A catch-up whose
// rounds store nothing should be given up after a few rounds (a chain of
// forks that comes a step a round is a handful of steps, not hundreds)
// and the peer backed off from; an answer past the Hello's Limit (plus
// the wanted events) should be cut.
func TestReviewOrphanFeedingPeerHoldsACatchUpForEver(t *testing.T) {
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.SyncInterval = time.Hour
	}))
	waitConnected(t, nt, 0, 1)
	waitConnected(t, nt, 0, 2)
	nt.Befriend(t, 0, 1)
	nt.Befriend(t, 0, 2)
	id := openRoom(t, nt, 1, 2)
	// A fresh key's orphans, held in the pool's strangers' share (256
	// events): each answer's evict the last one's, so the pool's missing
	// parents are new after every round.
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	author, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	var hellos atomic.Int64 // node 0's
	var seq atomic.Uint64
	var sent atomic.Int64 // orphans node 2 sent node 0
	// Node 0 asks for 16 events an answer; node 2 sends more anyway.
	t.Cleanup(rooms.SetAskLimit(16))
	const perRound = rooms.MaxWant + 44
	seq.Store(1 << 20)
	nt.Node(2).Host().SetStreamHandler(rooms.ProtocolSync, func(s network.Stream) {
		defer s.Close()
		if _, err := rooms.ReadHello(s, rooms.MaxFrame); err != nil {
			s.Reset()
			return
		}
		if s.Conn().RemotePeer() != nt.ID(0) {
			_ = rooms.WriteFrame(s, &rooms.Batch{End: true})
			return
		}
		hellos.Add(1)
		b := &rooms.Batch{}
		for range perRound {
			var parent rooms.ID
			_, _ = rand.Read(parent[:])
			e := rooms.Event{Room: id, Author: author, Agent: identity.HumanAgent, Seq: seq.Add(1),
				Parents: []rooms.ID{parent}, Depth: 1 << 30, Time: time.Now().UnixMilli(),
				Kind: rooms.KindMessage, Body: []byte("orphan")}
			w, _, err := rooms.Seal(key, &e)
			if err != nil {
				s.Reset()
				return
			}
			b.Events = append(b.Events, w)
		}
		sent.Add(int64(len(b.Events)))
		if rooms.WriteFrame(s, b) != nil {
			return
		}
		_ = rooms.WriteFrame(s, &rooms.Batch{End: true, More: true})
	})
	mgr(nt, 0).RequestSync(id, nt.ID(2))
	// An honest catch-up that stores nothing needs a few rounds at most.
	const bound = 50
	poll.Until(20*time.Second, func() bool { return mgr(nt, 0).StalledFrom(id, nt.ID(2)) })
	t.Logf("node 2 sent node 0 %d orphans in %d answers", sent.Load(), hellos.Load())
	if n := hellos.Load(); n > bound {
		t.Errorf("one catch-up of node 0's asked node 2 %d times in 20 s, though no round stored an event (bound %d)", n, bound)
	}
	if !mgr(nt, 0).StalledFrom(id, nt.ID(2)) {
		t.Errorf("node 0 does not back off from node 2, whose answers only ever brought orphans")
	}
}

// TestReviewMemberWidensTheHeadsWithoutBound: node 2, a member, signs
// 3,000 events of its own with the next seqs, each naming only the room's
// create event as its parent (no rule asks an event to name its author's
// previous one), and node 0 catches up with it. Every one of them is a
// head on node 0, kept in memory (heads, headTime), copied at every batch
// (headsSnap) and written in every tip; an honest post merges at most 19
// of them (parents ≤ 20), so node 0's heads stay in the thousands after
// its own posts, and grow with whatever the member signs (memory, the
// O(heads) copy at every batch, and each tip's size on every node of the
// room). One author should add at most one head (its latest event), forks
// aside.
func TestReviewMemberWidensTheHeadsWithoutBound(t *testing.T) {
	nt, id, _ := silentNet(t)
	key := loadKey(t, nt.Home(2))
	vs := must(mgr(nt, 2).Log(id, 100, nil))
	create := vs[0]
	var seq uint64
	for _, v := range vs {
		if v.Depth < create.Depth {
			create = v
		}
		if v.Author == nt.ID(2) {
			seq = max(seq, v.Seq)
		}
	}
	const wide = 3000
	wires := make([][]byte, 0, wide)
	for k := range wide {
		seq++
		e := rooms.Event{Room: id, Author: nt.ID(2), Agent: identity.HumanAgent, Seq: seq,
			Parents: []rooms.ID{create.ID}, Depth: create.Depth + 1, Time: time.Now().UnixMilli(),
			Kind: rooms.KindMessage, Body: []byte(fmt.Sprint("wide ", k))}
		w, _, err := rooms.Seal(key, &e)
		if err != nil {
			t.Fatal(err)
		}
		wires = append(wires, w)
	}
	if err := mgr(nt, 2).ProcessBatch(id, wires...); err != nil {
		t.Fatal(err)
	}
	mgr(nt, 0).RequestSync(id, nt.ID(2))
	nt.WaitFor(30*time.Second, func() bool { return logHas(nt, 0, id, fmt.Sprint("wide ", wide-1)) },
		"node 0 to catch up node 2's events")
	for k := range 5 {
		say(t, nt, 0, id, fmt.Sprint("honest ", k))
	}
	if n := len(mgr(nt, 0).Heads(id)); n > rooms.MaxHeads {
		t.Errorf("node 0 holds %d heads after one member's %d events and 5 posts of its own; one author should add one", n, wide)
	}
}
