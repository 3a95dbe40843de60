package contacts_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/contacts"
)

// requestLines counts the audit lines of contact requests in home's log.
func requestLines(t *testing.T, home string) int {
	t.Helper()
	es, err := audit.List(home, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.Action == audit.ContactRequest {
			n++
		}
	}
	return n
}

// unaudited reads parley_contact_requests_unaudited_total.
func unaudited(t *testing.T, reg prometheus.Gatherer) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "parley_contact_requests_unaudited_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// TestStrangersGrowNoAuditLog: peers with fresh keys ask to be contacts,
// the first twice with the same request. The repeat writes nothing, and
// the audit log takes at most StrangerAudits requests in the minute and
// counts the others.
func TestStrangersGrowNoAuditLog(t *testing.T) {
	nt := startNet(t, 1)
	target := nt.ID(0)
	addrs := nt.Node(0).Host().Addrs()
	ask := func(priv crypto.PrivKey, wire []byte) {
		t.Helper()
		h, err := libp2p.New(libp2p.Identity(priv), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Connect(ctx, peer.AddrInfo{ID: target, Addrs: addrs}); err != nil {
			t.Fatal(err)
		}
		if ans := sendFrom(t, h, target, consent.Message{Kind: consent.KindRequest, Request: wire}); ans.Err() != nil {
			t.Fatalf("the request's answer: %v", ans.Err())
		}
	}
	// The first stranger asks twice with the same request: the book holds
	// it already the second time, and the log takes one line.
	first, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	wire := rawRequest(t, first, target, "let me in")
	ask(first, wire)
	ask(first, wire)
	if n := requestLines(t, nt.Home(0)); n != 1 {
		t.Fatalf("%d audit lines for one request sent twice", n)
	}
	const strangers = contacts.StrangerAudits + 15
	began := time.Now()
	for range strangers - 1 {
		priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		ask(priv, rawRequest(t, priv, target, "let me in"))
	}
	// The budget is StrangerAudits a minute, refilled as the minute goes:
	// a loaded run that takes a while gets a line more every 6 s.
	most := contacts.StrangerAudits + int(time.Since(began).Seconds()*contacts.StrangerAudits/60)
	n := requestLines(t, nt.Home(0))
	if n < contacts.StrangerAudits || n > most {
		t.Fatalf("%d audit lines for %d strangers' requests in %s, want %d to %d", n, strangers, time.Since(began).Round(time.Millisecond), contacts.StrangerAudits, most)
	}
	if got := unaudited(t, nt.Node(0).Registry()); got != float64(strangers-n) {
		t.Fatalf("parley_contact_requests_unaudited_total %v, want %d", got, strangers-n)
	}
}
