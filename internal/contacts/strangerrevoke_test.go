package contacts_test

import (
	"context"
	"crypto/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestConsentStrangerRevokeLeavesAnEntry: peers with fresh keys each send
// a contact request and then a revocation of it, over real libp2p hosts.
// Each leaves a revoked contact in the node's book and store for good (a
// restart keeps them all): the strangers' cap (MaxPendingIn) and the TTL
// bound only waiting requests, so fresh keys grow the book, the store and
// the audit log without bound (the revocations' audit lines are not held
// to StrangerAudits), and each such stranger's next request counts as a
// known peer's. Before, all 25 were held and each revocation audited; now
// the revocation drops the request, and its audit line is held to the
// strangers' budget.
func TestConsentStrangerRevokeLeavesAnEntry(t *testing.T) {
	nt := startNet(t, 1)
	target := nt.ID(0)
	addrs := nt.Node(0).Host().Addrs()
	const strangers = 25
	var ids []peer.ID
	for range strangers {
		priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		h, err := libp2p.New(libp2p.Identity(priv), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := h.Connect(ctx, peer.AddrInfo{ID: target, Addrs: addrs}); err != nil {
			t.Fatal(err)
		}
		cancel()
		askAndWithdraw(t, h, priv, target)
		ids = append(ids, h.ID())
		_ = h.Close()
	}
	es, err := audit.List(nt.Home(0), time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	revokes := 0
	for _, e := range es {
		if e.Action == audit.ContactRevoke {
			revokes++
		}
	}
	nt.Crash(0)
	nt.Restart(0)
	held := 0
	for _, id := range ids {
		if c, ok := svc(nt, 0).Book().Get(id, time.Now()); ok && c.State == consent.StateRevoked {
			held++
		}
	}
	t.Logf("%d strangers: %d revoked entries held after a restart, %d contact.revoke audit lines", strangers, held, revokes)
	if held > 0 {
		t.Errorf("strangers that asked and revoked their own request are held for good: %d of %d after a restart", held, strangers)
	}
	if revokes > 10 {
		t.Errorf("%d audit lines for strangers' revocations (StrangerAudits is %d a minute for their requests)", revokes, 10)
	}
}

// TestConsentStrangerRevocationIsDeliveredBack: a stranger asks, revokes
// its own request and goes. Its entry is revoked with the stranger's
// revocation kept (PeerRevocation), which the node then works to deliver
// back to the stranger: at its next connection, and every RetryInterval
// for a month (retryFor), dialling it and asking the DHT while it is away,
// one goroutine each. Fresh keys make that work for the node without
// bound. Before, the revocation came back at the next connection; now the
// book keeps nothing of it, so there is nothing to hand back.
func TestConsentStrangerRevocationIsDeliveredBack(t *testing.T) {
	nt := startNet(t, 1)
	target := nt.ID(0)
	addrs := nt.Node(0).Host().Addrs()
	priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h, err := libp2p.New(libp2p.Identity(priv), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var back atomic.Int64
	h.SetStreamHandler(consent.ProtocolID, func(st network.Stream) {
		defer st.Close()
		b, err := consent.ReadFrame(st, 0)
		if err != nil {
			return
		}
		if m, err := consent.DecodeMessage(b); err == nil && m.Kind == consent.KindRevoke {
			back.Add(1)
		}
		_ = consent.WriteFrame(st, consent.Message{Kind: consent.KindAck})
		_ = st.CloseWrite()
	})
	connect := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Connect(ctx, peer.AddrInfo{ID: target, Addrs: addrs}); err != nil {
			t.Fatal(err)
		}
	}
	connect()
	askAndWithdraw(t, h, priv, target)
	// The stranger goes and comes back.
	_ = h.Network().ClosePeer(target)
	nt.WaitFor(10*time.Second, func() bool { return h.Network().Connectedness(target) != network.Connected }, "the stranger to go")
	connect()
	if nodetest.Poll(10*time.Second, func() bool { return back.Load() > 0 }) {
		t.Errorf("the node delivers a stranger's revocation of its own request back to it (%d times): an entry a stranger made is work the node retries for a month", back.Load())
	}
}

// askAndWithdraw sends target, from host h of key priv, a contact request
// and then the key's own revocation of it.
func askAndWithdraw(t *testing.T, h host.Host, priv crypto.PrivKey, target peer.ID) {
	t.Helper()
	if ans := sendFrom(t, h, target, consent.Message{Kind: consent.KindRequest, Request: rawRequest(t, priv, target, "hi")}); ans.Err() != nil {
		t.Fatalf("request: %v", ans.Err())
	}
	rev, err := consent.NewRevocation(priv, target, 0, 1, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if ans := sendFrom(t, h, target, consent.Message{Kind: consent.KindRevoke, Revocation: rev}); ans.Err() != nil {
		t.Fatalf("revocation: %v", ans.Err())
	}
}
