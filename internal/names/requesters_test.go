package names_test

import (
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/discovery"
	"github.com/parley-mesh/parley/internal/names"
	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// card is a fresh key's sealed node card with handle h.
func card(t *testing.T, h string) (peer.ID, []byte) {
	t.Helper()
	priv, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	w, err := discovery.SealNodeCard(priv, &discovery.NodeCard{Peer: id, Handle: h, Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	return id, w
}

// hostAndKey is a host that listens nowhere and a node key, for a
// Service that is not run.
func hostAndKey(t *testing.T) (host.Host, crypto.PrivKey) {
	t.Helper()
	h, err := libp2p.New(libp2p.NoListenAddrs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	priv, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	return h, priv
}

// lists is what the node would say is wanted, its contacts and asking.
type lists struct {
	mu                       sync.Mutex
	wanted, contacts, asking []peer.ID
}

func (l *lists) get(which *[]peer.ID) func() []peer.ID {
	return func() []peer.ID {
		l.mu.Lock()
		defer l.mu.Unlock()
		return append([]peer.ID(nil), (*which)...)
	}
}

func (l *lists) set(wanted, asking []peer.ID) {
	l.mu.Lock()
	l.wanted, l.asking = wanted, asking
	l.mu.Unlock()
}

func (l *lists) setAll(wanted, contacts, asking []peer.ID) {
	l.mu.Lock()
	l.wanted, l.contacts, l.asking = wanted, contacts, asking
	l.mu.Unlock()
}

// storedCards counts the cards in the store.
func storedCards(t *testing.T, db *store.DB) int {
	t.Helper()
	j := schema.NewJoiner(schema.NodeCardPrefix())
	if err := db.ScanFrom(schema.NodeCardPrefix(), nil, false, func(k, v []byte) bool { j.Add(k, v); return true }); err != nil {
		t.Fatal(err)
	}
	cards, damaged := j.Done()
	if len(damaged) > 0 {
		t.Fatal(damaged)
	}
	return len(cards)
}

// TestRequestersCardsAreNotKept: strangers asking to be contacts (each a
// fresh key) hand over cards; the user sees their names while they ask, but
// their cards go neither to the store nor into the names kept, at most
// MaxRequesterCards are held, and they are dropped once the peers stop
// asking. A requester that becomes a contact has its card kept.
func TestRequestersCardsAreNotKept(t *testing.T) {
	h, priv := hostAndKey(t)
	db, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l := &lists{}
	// The service reads the lists at most once a second: the clock moves
	// on whenever they change.
	now := time.Now()
	var clock sync.Mutex
	tick := func() { clock.Lock(); now = now.Add(2 * time.Second); clock.Unlock() }
	ns, err := names.New(names.Config{Host: h, Key: priv, Handle: "me", Store: db,
		Wanted: l.get(&l.wanted), Requesters: l.get(&l.asking),
		Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return now }})
	if err != nil {
		t.Fatal(err)
	}

	var asking []peer.ID
	wires := map[peer.ID][]byte{}
	for range names.MaxRequesterCards {
		id, w := card(t, "alice")
		asking = append(asking, id)
		wires[id] = w
	}
	l.set(nil, asking)
	tick()
	for _, p := range asking {
		if err := ns.Learn(p, wires[p]); err != nil {
			t.Fatalf("a requester's card: %v", err)
		}
	}
	if got := ns.Name(asking[0]); !strings.HasPrefix(got, "alice~") {
		t.Fatalf("a requester shows as %q, want alice~SUFFIX", got)
	}
	// One more while all still ask: refused, nothing grows.
	extra, w := card(t, "alice")
	l.set(nil, append(asking, extra))
	tick()
	if err := ns.Learn(extra, w); err == nil {
		t.Fatal("a requester's card taken past MaxRequesterCards")
	}
	if n := storedCards(t, db); n != 0 {
		t.Fatalf("%d requesters' cards in the store", n)
	}
	if n := len(ns.All()); n != names.MaxRequesterCards+1 { // and this node's own
		t.Fatalf("%d names known, want %d", n, names.MaxRequesterCards+1)
	}

	// All but one stop asking (evicted or denied); that one is approved: its
	// card is kept, in the store, the others' dropped, and there is room for
	// the next.
	approved := asking[0]
	l.set([]peer.ID{approved}, []peer.ID{extra})
	tick()
	ns.Tidy()
	if err := ns.Learn(extra, w); err != nil {
		t.Fatalf("a requester's card once the others left: %v", err)
	}
	if n := storedCards(t, db); n != 1 {
		t.Fatalf("%d cards in the store, want the approved contact's", n)
	}
	if n := len(ns.All()); n != 3 {
		t.Fatalf("%d names known, want this node, the contact and the one asking", n)
	}
	if h, ok := ns.Handle(approved); !ok || h != "alice" {
		t.Fatalf("the approved contact's handle: %q %v", h, ok)
	}
}

// TestSuffixesTellApart: nodes of one handle whose IDs share long tails
// each get the shortest tail no other has, and each name resolves back.
func TestSuffixesTellApart(t *testing.T) {
	h, priv := hostAndKey(t)
	// IDs that end alike in base58: n + j·58^k share their last k
	// characters. (Names shown from hints, as a contact's handle.)
	base, _ := new(big.Int).SetString("123456789012345678901234567890123456789", 10)
	step := new(big.Int).Exp(big.NewInt(58), big.NewInt(7), nil)
	var ids []peer.ID
	for j := range 40 {
		n := new(big.Int).Add(base, new(big.Int).Mul(big.NewInt(int64(j%5+1)*int64(j/5+1)), step))
		if j%3 == 0 {
			n.Add(n, big.NewInt(int64(j)))
		}
		ids = append(ids, peer.ID(n.Bytes()))
	}
	hints := map[peer.ID]string{}
	for _, p := range ids {
		hints[p] = "bob"
	}
	ns2, err := names.New(names.Config{Host: h, Key: priv, Hints: func() map[peer.ID]string { return hints }})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ids {
		name := ns2.Name(p)
		tail, ok := strings.CutPrefix(name, "bob~")
		if !ok {
			t.Fatalf("%s shows as %q", p, name)
		}
		// The shortest: no other ID ends in it, and one character less
		// (unless at the minimum of 4) some other does.
		full := p.String()
		if !strings.HasSuffix(full, tail) || len(tail) < 4 {
			t.Fatalf("%q is not a tail of %s", tail, full)
		}
		for _, q := range ids {
			if q != p && strings.HasSuffix(q.String(), tail) {
				t.Fatalf("%q also ends %s", tail, q)
			}
		}
		if len(tail) > 4 {
			shorter, shared := tail[1:], false
			for _, q := range ids {
				shared = shared || (q != p && strings.HasSuffix(q.String(), shorter))
			}
			if !shared {
				t.Fatalf("%q is not the shortest telling tail of %s", tail, full)
			}
		}
		if got, err := ns2.Resolve(name); err != nil || got != p {
			t.Fatalf("%q resolves to %s, %v", name, got, err)
		}
	}
}

// listedService is a Service (not run) whose Wanted and Requesters are l's
// lists, on a clock that tick moves on by 2 s (past the lists' cache).
func listedService(t *testing.T) (ns *names.Service, l *lists, tick func()) {
	t.Helper()
	h, priv := hostAndKey(t)
	l = &lists{}
	now := time.Now()
	var clock sync.Mutex
	tick = func() { clock.Lock(); now = now.Add(2 * time.Second); clock.Unlock() }
	ns, err := names.New(names.Config{Host: h, Key: priv, Wanted: l.get(&l.wanted), Requesters: l.get(&l.asking),
		Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return now }})
	if err != nil {
		t.Fatal(err)
	}
	return ns, l, tick
}

// TestRequesterCardOverKeptOne: a node known before (its card kept) that
// asks to be a contact shows the newer card it hands over while it asks,
// and its kept card again once it stops asking.
func TestRequesterCardOverKeptOne(t *testing.T) {
	ns, l, tick := listedService(t)
	key, _, _ := crypto.GenerateEd25519Key(nil)
	p, _ := peer.IDFromPrivateKey(key)
	sealed := func(handle string, seq uint64) []byte {
		w, err := discovery.SealNodeCard(key, &discovery.NodeCard{Peer: p, Handle: handle, Seq: seq})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	l.set([]peer.ID{p}, nil) // a room member
	tick()
	if err := ns.Learn(p, sealed("old", 1)); err != nil {
		t.Fatal(err)
	}
	l.set(nil, []peer.ID{p}) // left the rooms, asks to be a contact
	tick()
	if err := ns.Learn(p, sealed("new", 2)); err != nil {
		t.Fatal(err)
	}
	if h, _ := ns.Handle(p); h != "new" {
		t.Fatalf("while it asks the node shows as %q, want its newer card's handle", h)
	}
	l.set(nil, nil) // denied
	tick()
	ns.Tidy()
	if h, _ := ns.Handle(p); h != "old" {
		t.Fatalf("once it stopped asking the node shows as %q, want its kept card's handle", h)
	}
}

// TestRequesterRenamesNoContact: a stranger that asks to be a contact under
// a contact's handle does not rename the contact, who keeps the bare
// handle (and resolves by it), while the stranger shows with its tail; two
// kept nodes with one handle both show with their tails.
func TestRequesterRenamesNoContact(t *testing.T) {
	ns, l, tick := listedService(t)
	bob, bobCard := card(t, "bob")
	mallory, malloryCard := card(t, "Bob")
	l.set([]peer.ID{bob}, []peer.ID{mallory})
	tick()
	for _, c := range []struct {
		p    peer.ID
		wire []byte
	}{{bob, bobCard}, {mallory, malloryCard}} {
		if err := ns.Learn(c.p, c.wire); err != nil {
			t.Fatal(err)
		}
	}
	tick()
	if got := ns.Name(bob); got != "bob" {
		t.Fatalf("the contact shows as %q once a stranger asks as Bob", got)
	}
	if got := ns.Name(mallory); !strings.HasPrefix(got, "Bob~") || !strings.HasSuffix(mallory.String(), got[4:]) {
		t.Fatalf("the stranger shows as %q", got)
	}
	if p, err := ns.Resolve("bob"); err != nil || p != bob {
		t.Fatalf("Resolve(bob) = %s, %v; want the contact", p, err)
	}
	if p, err := ns.Resolve(ns.Name(mallory)); err != nil || p != mallory {
		t.Fatalf("Resolve(%s) = %s, %v; want the stranger", ns.Name(mallory), p, err)
	}
	// A node whose card was kept once (a room member then) that asks now
	// under bob's handle renames him no more than a stranger does.
	oldKey, _, _ := crypto.GenerateEd25519Key(nil)
	old, _ := peer.IDFromPrivateKey(oldKey)
	oldCard := func(h string, seq uint64) []byte {
		w, err := discovery.SealNodeCard(oldKey, &discovery.NodeCard{Peer: old, Handle: h, Seq: seq})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	l.set([]peer.ID{bob, old}, []peer.ID{mallory})
	tick()
	if err := ns.Learn(old, oldCard("olga", 1)); err != nil {
		t.Fatal(err)
	}
	l.set([]peer.ID{bob}, []peer.ID{mallory, old})
	tick()
	if err := ns.Learn(old, oldCard("bob", 2)); err != nil {
		t.Fatal(err)
	}
	tick()
	if got := ns.Name(bob); got != "bob" {
		t.Fatalf("the contact shows as %q once a node known before asks as bob", got)
	}
	// Once the stranger is a contact too, neither is the bare handle.
	l.set([]peer.ID{bob, mallory}, nil)
	tick()
	ns.Tidy()
	tick()
	if a, b := ns.Name(bob), ns.Name(mallory); !strings.HasPrefix(a, "bob~") || !strings.HasPrefix(b, "Bob~") {
		t.Fatalf("two contacts with one handle show as %q and %q", a, b)
	}
	if _, err := ns.Resolve("bob"); !errors.Is(err, names.ErrAmbiguous) {
		t.Fatalf("Resolve of two contacts' handle: %v", err)
	}
}

// TestOwnHandleStaysBare: a node keeps its own bare handle on itself when a
// node it deals with (a room member, a contact) has the same handle; the
// other node shows with its tail, and the bare handle resolves to this
// node. Two other nodes with this node's handle, trusted or not, both show
// with their tails.
func TestOwnHandleStaysBare(t *testing.T) {
	h, priv := hostAndKey(t)
	self, _ := peer.IDFromPrivateKey(priv)
	l := &lists{}
	now := time.Now()
	var clock sync.Mutex
	tick := func() { clock.Lock(); now = now.Add(2 * time.Second); clock.Unlock() }
	ns, err := names.New(names.Config{Host: h, Key: priv, Handle: "bob", Wanted: l.get(&l.wanted), Requesters: l.get(&l.asking),
		Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return now }})
	if err != nil {
		t.Fatal(err)
	}
	eve, eveCard := card(t, "bob")
	mallory, malloryCard := card(t, "Bob")
	l.set([]peer.ID{eve}, []peer.ID{mallory}) // eve a room member, mallory asking
	tick()
	for _, c := range []struct {
		p    peer.ID
		wire []byte
	}{{eve, eveCard}, {mallory, malloryCard}} {
		if err := ns.Learn(c.p, c.wire); err != nil {
			t.Fatal(err)
		}
	}
	tick()
	if got := ns.Name(self); got != "bob" {
		t.Fatalf("this node shows to itself as %q once a room member has its handle", got)
	}
	for _, p := range []peer.ID{eve, mallory} {
		if got := ns.Name(p); !strings.HasPrefix(strings.ToLower(got), "bob~") || !strings.HasSuffix(p.String(), got[4:]) {
			t.Fatalf("another node with this node's handle shows as %q", got)
		}
		if q, err := ns.Resolve(ns.Name(p)); err != nil || q != p {
			t.Fatalf("Resolve(%s) = %s, %v", ns.Name(p), q, err)
		}
	}
	if p, err := ns.Resolve("bob"); err != nil || p != self {
		t.Fatalf("Resolve(bob) = %s, %v; want this node", p, err)
	}
	// Both others trusted: still this node keeps the bare handle.
	l.set([]peer.ID{eve, mallory}, nil)
	tick()
	ns.Tidy()
	tick()
	if got := ns.Name(self); got != "bob" {
		t.Fatalf("this node shows to itself as %q among two trusted nodes with its handle", got)
	}
	if a, b := ns.Name(eve), ns.Name(mallory); !strings.HasPrefix(a, "bob~") || !strings.HasPrefix(b, "Bob~") {
		t.Fatalf("two other nodes with this node's handle show as %q and %q", a, b)
	}
}
