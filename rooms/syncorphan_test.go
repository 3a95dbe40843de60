package rooms_test

import (
	"crypto/rand"
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

// TestOrphanFeedingPeerIsGivenUpAndBackedOff: before, node 2, a member,
// answered each of node 0's catch-up Hellos with 300 events of a fresh key
// (a stranger), each with a random parent that no node holds or ever will,
// more than the 16 the Hello asked for, and said More; nothing was ever
// stored, yet each round parked orphans wanting parents it had not asked
// for (wantsMore), which syncSession counted as progress, clearing node
// 2's stall and asking again, up to maxSyncRounds (10,000) rounds, each
// read to its end whatever its size (122 answers, 36,600 orphans in 20
// s), and node 0 never backed off. Now an answer past the Hello's Limit
// and its wanted events is cut (errSyncOverLimit) and its peer backed
// off from; only a changed progress mark is progress, and a session
// whose rounds only park events is given up after maxParkRounds in a row
// as no progress.
func TestOrphanFeedingPeerIsGivenUpAndBackedOff(t *testing.T) {
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
