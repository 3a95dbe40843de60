package names_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/discovery"
	"github.com/parley-mesh/parley/internal/names"
)

// clockedMembers is a names service (handle "alice") whose every node of
// handles is a room member, with a clock the test moves: tick makes the
// display table stale, so the next read rebuilds it.
func clockedMembers(t *testing.T, handles []string) (ns *names.Service, ids []peer.ID, tick func()) {
	t.Helper()
	h, priv := hostAndKey(t)
	ids = make([]peer.ID, len(handles))
	wires := make([][]byte, len(handles))
	for i, hd := range handles {
		k, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		ids[i], _ = peer.IDFromPrivateKey(k)
		if wires[i], err = discovery.SealNodeCard(k, &discovery.NodeCard{Peer: ids[i], Handle: hd, Seq: 1}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	now := time.Now()
	ns, err := names.New(names.Config{Host: h, Key: priv, Handle: "alice",
		Wanted: func() []peer.ID { return ids }, Contacts: func() []peer.ID { return nil },
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range ids {
		if err := ns.Learn(ids[i], wires[i]); err != nil {
			t.Fatal(err)
		}
	}
	tick = func() { mu.Lock(); now = now.Add(2 * time.Second); mu.Unlock() }
	tick()
	ns.All() // the first build makes every handle's keys
	return ns, ids, tick
}

// punct is the i-th run of five ASCII signs (none a joiner or a tilde):
// a remark that differs from node to node.
func punct(i int) string {
	const set = "!#$%&*+,/:;<=>?@^|"
	var b strings.Builder
	for range 5 {
		b.WriteByte(set[i%len(set)])
		i /= len(set)
	}
	return b.String()
}

// rebuild is how long a rebuild of the display table takes (the least of
// runs).
func rebuild(ns *names.Service, tick func(), runs int) time.Duration {
	least := time.Duration(1<<63 - 1)
	for range runs {
		tick()
		t0 := time.Now()
		ns.All()
		least = min(least, time.Since(t0))
	}
	return least
}

// TestReviewRemarksIndexIsQuadratic: room members whose handles hold one
// word with remarks that differ ("x !!!!!", "x #!!!!" …) are each a key of
// their own with one core in the index of held keys, and a member whose
// handle repeats that word ("x x x … x") looks each repetition up in that
// core's whole list: the table's rebuild (every second while names are
// read, under the service's lock) grows with the square of the nodes. At
// 9,990 members it took 33 s on the review machine; the build of as many
// members sharing one handle takes a fraction of a second.
func TestReviewRemarksIndexIsQuadratic(t *testing.T) {
	const n = 4000
	same := make([]string, n)
	for i := range same {
		same[i] = "bob"
	}
	ns, _, tick := clockedMembers(t, same)
	base := rebuild(ns, tick, 3)

	hostile := make([]string, n)
	for i := range hostile {
		if i%2 == 0 {
			hostile[i] = "x " + punct(i)
		} else {
			hostile[i] = strings.Repeat("x ", 29) + punct(i)
		}
	}
	ns, _, tick = clockedMembers(t, hostile)
	got := rebuild(ns, tick, 1)
	t.Logf("rebuild of %d members: one shared handle %v, remarks of one word %v", n, base, got)
	if got > 5*base+100*time.Millisecond {
		t.Errorf("the rebuild of %d members whose remarks share a word took %v, %d times the %v of %d members sharing a handle",
			n, got, got/max(base, 1), base, n)
	}
}

// TestReviewResolveIsQuadratic: with many room members of one handle,
// Resolve of that handle walks each node's whole group once per node of
// the key (table.like), and its refusal lists every node: 4,000 members
// named bob make one Resolve("bob") — an agent addressing NAME@bob — take
// seconds and return an error of hundreds of KiB, which the local API
// hands to the agent as its tool result.
func TestReviewResolveIsQuadratic(t *testing.T) {
	const n = 4000
	hs := make([]string, n)
	for i := range hs {
		hs[i] = "bob"
	}
	ns, _, tick := clockedMembers(t, hs)
	build := rebuild(ns, tick, 3)
	t0 := time.Now()
	_, err := ns.Resolve("bob")
	took := time.Since(t0)
	if !errors.Is(err, names.ErrAmbiguous) {
		t.Fatalf("Resolve(bob) among %d bobs: %v", n, err)
	}
	t.Logf("%d bobs: table rebuild %v, Resolve(bob) %v, its error %d bytes", n, build, took, len(err.Error()))
	if took > 5*build+100*time.Millisecond {
		t.Errorf("Resolve(\"bob\") among %d members named bob took %v (the whole table's rebuild: %v)", n, took, build)
	}
	if len(err.Error()) > 64<<10 {
		t.Errorf("Resolve(\"bob\")'s refusal is %d bytes: it names each of %d nodes", len(err.Error()), n)
	}
}

// TestReviewGeneralMarkShowsBare: a stranger "bob" with U+0317 (acute
// accent below, a general-purpose mark Parley means to read through) and
// a room member "alice" with U+030D (vertical line above) show bare on
// alice's node beside the contact bob and alice herself: the lookalike
// keys keep those marks (see internal/lookalike's
// TestReviewGeneralMarksLeftInKeys).
func TestReviewGeneralMarkShowsBare(t *testing.T) {
	nodes := []rankedNode{
		{"bob", "contact"},
		{"bob\u0317", "stranger"},
		{"alic\u030de", "member"},
		{"bob\u0323", "stranger"}, // a dot below: read through, shows its tail
	}
	ids, book, _ := namesOf(t, "alice", nodes, nil)
	if e := book[ids[0]]; e.Name != "bob" {
		t.Fatalf("the contact bob shows as %+q", e.Name)
	}
	if e := book[ids[3]]; e.Name == nodes[3].handle {
		t.Fatalf("the control %+q shows bare", nodes[3].handle)
	}
	for i := 1; i < 3; i++ {
		if e := book[ids[i]]; e.Name == nodes[i].handle {
			t.Errorf("%+q (%s) shows bare as %+q, LikeSelf %v", nodes[i].handle, nodes[i].rank, e.Name, e.LikeSelf)
		}
	}
}
