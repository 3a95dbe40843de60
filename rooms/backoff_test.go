package rooms_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/internal/store/schema"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// cutOff takes everyone but the peers it cut off, as a user who revoked
// them would.
type cutOff struct {
	mu  sync.Mutex // protects out
	out map[peer.ID]bool
}

func (c *cutOff) CanInvite(peer.ID) error { return nil }

func (c *cutOff) Allowed(p peer.ID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out[p] {
		return fmt.Errorf("%s is cut off", p)
	}
	return nil
}

func (c *cutOff) cut(p peer.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out[p] = true
}

// startCutOff starts n nodes (anti-entropy every second), node i with a
// cutOff policy, which it returns.
func startCutOff(t *testing.T, n, i int) (*nodetest.Net, *cutOff) {
	t.Helper()
	pol := &cutOff{out: map[peer.ID]bool{}}
	nt := nodetest.Start(t, n, nodetest.WithConfig(func(j int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		if j == i {
			c.RoomPolicy = pol
		}
		c.SyncInterval = time.Second
	}))
	return nt, pol
}

// TestSyncWithoutProgressBacksOff: node 2 refuses every event of node 0,
// the room's creator, so nothing node 1 sends it can be stored. A sync
// that stores nothing ends after one round and the room backs off from
// the peer, instead of fetching the same events again and again.
func TestSyncWithoutProgressBacksOff(t *testing.T) {
	t.Cleanup(rooms.SetAskLimit(8)) // runs after the nodes stop
	nt, pol := startCutOff(t, 3, 2)
	pol.cut(nt.ID(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id := openRoom(t, nt, 1)
	sayMany(t, nt, 0, id, 40, "m")
	nt.WaitFor(20*time.Second, func() bool { return eventCount(nt, 1, id) == 43 }, "node 1 to hold the room")
	waitConnected(t, nt, 1, 2) // dialled if the DHT has not brought them together
	if _, err := mgr(nt, 1).Invite(ctx, id, nt.ID(2), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	// The catch-up after the invite stores nothing and backs off.
	nt.WaitFor(20*time.Second, func() bool { return counter(t, nt.Node(2), "parley_room_sync_backoffs_total") >= 1 },
		"node 2 to back off from node 1")
	// Each round brings the same 8 events, of which node 2 can store none:
	// a sync stops instead of asking again and again.
	for range 2 {
		before := counter(t, nt.Node(2), "parley_room_sync_events_received_total")
		err := mgr(nt, 2).SyncNow(ctx, id, nt.ID(1))
		if !errors.Is(err, rooms.ErrNoProgress) {
			t.Fatalf("sync that stores nothing: %v", err)
		}
		// A round may ask for parents its events named, so a few rounds
		// may pass; before, it went on for 10,000.
		if got := counter(t, nt.Node(2), "parley_room_sync_events_received_total") - before; got > 80 {
			t.Fatalf("one sync fetched %v events, 8 a round", got)
		}
	}
	if n := counter(t, nt.Node(2), "parley_room_sync_backoffs_total"); n < 3 {
		t.Fatalf("%v backoffs counted", n)
	}
	if n := eventCount(nt, 2, id); n != 0 {
		t.Fatalf("node 2 stored %d events of a creator it cut off", n)
	}
}

// TestMetaWithoutCreator: the record of a room whose create event has not
// arrived has no creator; reading it back loses nothing else.
func TestMetaWithoutCreator(t *testing.T) {
	_, pub, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	in := rooms.Meta{Name: "r", InvitedBy: p, Opened: time.Unix(1_700_000_000, 0).UTC(), Left: true, Leaving: true}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out rooms.Meta
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if out != in {
		t.Fatalf("read back %+v, want %+v", out, in)
	}
	if err := json.Unmarshal([]byte(`{"name":"r","creator":"garbage","left":true}`), &out); err != nil || !out.Left || out.Creator != "" {
		t.Fatalf("a bad creator: %+v, %v", out, err)
	}
}

// TestDamagedRoomDoesNotStopTheNode: a room whose state cannot be read
// stays unopened (and is counted), and the node starts with its other
// rooms, which list and work as before.
func TestDamagedRoomDoesNotStopTheNode(t *testing.T) {
	nt := startNet(t, 1)
	ctx := context.Background()
	bad, err := mgr(nt, 0).Create(ctx, "damaged", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	good, err := mgr(nt, 0).Create(ctx, "fine", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	nt.Crash(0)
	db, err := store.Open(filepath.Join(nt.Home(0), "data"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// A member key that names no peer.
	if err := db.Apply([]schema.Op{{Key: schema.RoomMember(string(bad), []byte("not a peer")), Val: make([]byte, 32)}}, true); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	nt.Restart(0)
	l := mgr(nt, 0).List()
	if len(l) != 1 || l[0].ID != good {
		t.Fatalf("rooms after the restart: %+v", l)
	}
	say(t, nt, 0, good, "still here")
	if n := counter(t, nt.Node(0), "parley_rooms_open_failed_total"); n != 1 {
		t.Fatalf("%v rooms counted as not opened", n)
	}
}

// TestAntiEntropyBacksOffWhenNothingToFetch: in a quiet room every
// periodic catch-up finds nothing, and after three in a row anti-entropy
// visits the room once every eight turns. A catch-up that brings events
// (here node 1's subscription is held, so only a sync can bring node 0's
// post) ends the backoff at once: the next turn syncs.
func TestAntiEntropyBacksOffWhenNothingToFetch(t *testing.T) {
	t.Parallel() // waits on timers, sets no package knob
	// A turn every half second, not startNet's second: the test counts
	// turns (7 skipped, then 14 more), so it waited ~30 s on the clock.
	// What it checks is in turns, not seconds; the one check a period
	// bounds, that the turn after a fruitful catch-up syncs, has two
	// turns' slack (the second empty sync after it starts skipping).
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.RoomPolicy = rooms.DefaultPolicy{}
		c.SyncInterval = 500 * time.Millisecond
	}))
	id := openRoom(t, nt, 1)
	n1 := nt.Node(1)
	turns := func(outcome string) float64 { return aeTurns(t, n1, outcome) }
	nt.WaitFor(60*time.Second, func() bool { return turns("skipped") >= 7 }, "node 1 to skip anti-entropy turns in a quiet room")
	if got := mgr(nt, 1).EmptySyncs(id); got < 3 {
		t.Fatalf("backing off after %d empty catch-ups", got)
	}
	synced, skipped := turns("synced"), turns("skipped")
	nt.WaitFor(60*time.Second, func() bool { return turns("skipped")-skipped >= 14 }, "14 more turns skipped")
	if d := turns("synced") - synced; d < 1 || d > 3 {
		t.Fatalf("%v syncs in the turns that skipped 14: want one in eight", d)
	}

	stallReader(t, nt, 1)
	before := eventCount(nt, 1, id)
	if _, err := mgr(nt, 0).Say(context.Background(), id, rooms.SayArgs{Agent: identity.HumanAgent, Text: "after the quiet"}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(60*time.Second, func() bool { return eventCount(nt, 1, id) > before }, "a catch-up to bring node 0's post")
	synced, skipped = turns("synced"), turns("skipped")
	nt.WaitFor(30*time.Second, func() bool { return turns("synced") > synced }, "the next anti-entropy sync")
	if d := turns("skipped") - skipped; d > 1 {
		t.Fatalf("%v turns skipped after a catch-up that brought an event", d)
	}
}

// aeTurns is node n's count of anti-entropy turns with outcome.
func aeTurns(t *testing.T, n *node.Node, outcome string) float64 {
	t.Helper()
	mfs, err := n.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "parley_room_antientropy_turns_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestCutOffMemberDoesNotSplitTheRoom: node 0's user cuts off node 2, a
// member of a room they share (a revoked contact). Node 2's post, which
// node 0 refuses, is built on by node 1's reply: node 0 takes it then,
// with the reply and every later post, so the room stays whole on every
// node (before, node 0 could store no later post of node 1, for good). A
// post of node 2 that no member built on stays out.
func TestCutOffMemberDoesNotSplitTheRoom(t *testing.T) {
	nt, pol := startCutOff(t, 3, 0)
	ctx := context.Background()
	id := openRoom(t, nt, 1, 2)
	pol.cut(nt.ID(2))
	say := func(i int, text string) {
		t.Helper()
		if _, err := mgr(nt, i).Say(ctx, id, rooms.SayArgs{Agent: identity.HumanAgent, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	say(2, "from the cut-off member")
	nt.WaitFor(20*time.Second, func() bool { return logHas(nt, 1, id, "from the cut-off member") }, "node 1 to hold node 2's post")
	say(1, "a reply built on it")
	say(0, "node 0 goes on")
	waitConverged(t, nt, id, 8, 40*time.Second, 0, 1, 2)
	for _, text := range []string{"from the cut-off member", "a reply built on it", "node 0 goes on"} {
		if !logHas(nt, 0, id, text) {
			t.Fatalf("node 0 lacks %q", text)
		}
	}

	// Node 2 speaks again; nobody builds on it yet: node 0 does not take
	// it, even when a sync with node 1 brings it.
	say(2, "unanswered")
	nt.WaitFor(20*time.Second, func() bool { return logHas(nt, 1, id, "unanswered") }, "node 1 to hold node 2's second post")
	if err := mgr(nt, 0).SyncNow(ctx, id, nt.ID(1)); err != nil && !errors.Is(err, rooms.ErrNoProgress) {
		t.Fatal(err)
	}
	if logHas(nt, 0, id, "unanswered") {
		t.Fatal("node 0 took a post of the member its user cut off that no member built on")
	}
	say(1, "answered now")
	waitConverged(t, nt, id, 10, 40*time.Second, 0, 1, 2)

	// A long run of the cut-off member's posts, more than the pending pool
	// would hold in a chain, answered once: node 0 takes them all.
	sayMany(t, nt, 2, id, 5000, "run")
	nt.WaitFor(60*time.Second, func() bool { return eventCount(nt, 1, id) == 5010 }, "node 1 to hold the run")
	say(1, "answered the run")
	waitConverged(t, nt, id, 5011, 60*time.Second, 0, 1, 2)
}
