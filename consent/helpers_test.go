package consent

import (
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// t0 is the test clock's start.
var t0 = time.UnixMilli(1_800_000_000_000)

// tnode is one node under test: its key, its book and its store.
type tnode struct {
	t     testing.TB
	priv  crypto.PrivKey
	id    peer.ID
	book  *Book
	store map[peer.ID][]byte
}

func newKey(t testing.TB) (crypto.PrivKey, peer.ID) {
	t.Helper()
	priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return priv, id
}

func newNode(t testing.TB, pol Policy) *tnode {
	t.Helper()
	priv, id := newKey(t)
	b, err := NewBook(priv, pol)
	if err != nil {
		t.Fatal(err)
	}
	return &tnode{t: t, priv: priv, id: id, book: b, store: map[peer.ID][]byte{}}
}

// save persists records as the node would.
func (n *tnode) save(recs []Record) {
	for _, r := range recs {
		if r.Delete {
			delete(n.store, r.Peer)
			continue
		}
		n.store[r.Peer] = r.Value
	}
}

// must fails the test on err and persists recs.
func (n *tnode) must(recs []Record, err error) {
	n.t.Helper()
	if err != nil {
		n.t.Fatal(err)
	}
	n.save(recs)
}

func wantErr(t testing.TB, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

// connect runs request → approve → countersign → complete between
// requester and approver at now, validity d, and returns the request ID.
func connect(t testing.TB, requester, approver *tnode, now time.Time, d time.Duration) string {
	t.Helper()
	wire, recs, err := requester.book.OutgoingRequest(approver.id, "req-handle", "hello", now)
	requester.must(recs, err)
	c, recs, err := approver.book.IncomingRequest(requester.id, wire, false, now)
	approver.must(recs, err)
	a, recs, err := approver.book.Approve(c.ID, d, now)
	approver.must(recs, err)
	sig, recs, err := requester.book.Countersign(approver.id, "appr-handle", a.Payload, a.Sig, now)
	requester.must(recs, err)
	recs, err = approver.book.Complete(requester.id, sig, now)
	approver.must(recs, err)
	return c.ID
}

func stateOf(t testing.TB, n *tnode, p peer.ID, now time.Time) State {
	t.Helper()
	c, ok := n.book.Get(p, now)
	if !ok {
		t.Fatalf("no contact %s", p)
	}
	return c.State
}
