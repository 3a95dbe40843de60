package node_test

import (
	"context"
	"crypto/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/frame"
	"github.com/parley-mesh/parley/internal/org"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestOrgStrangerRequestOpensIntroExchangesWithoutBound: node 0 is a
// member of an organisation that trusts another, so every contact request
// is decided by organisation trust first, which asks the requester for its
// introduction (up to 1 MiB, each record's signature checked). A stranger
// with a fresh key sends the same request again and again (a repeat is
// answered "ack", and decided again) and never answers the introductions:
// the node holds one intro exchange open for each send, at once, each for
// up to 15 s. The strangers' budget of /parley/org/1 (one exchange a second
// for all of them, 16 KiB each) does not hold for what the node reads from
// them, and fresh keys multiply it. Before, each send opened an exchange
// (10 at once); now one decision per peer runs at a time (repeats are
// folded into one more, at least 5 s on), and a stranger's introduction is
// read within 16 KiB.
func TestOrgStrangerRequestOpensIntroExchangesWithoutBound(t *testing.T) {
	nt := nodetest.Start(t, 1)
	y, x := newOrgKey(t, "Yco"), newOrgKey(t, "Xco")
	y.publish(t, nt, 0, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(0), Handle: "yann"})
	y.publish(t, nt, 0, consent.OrgRecord{Kind: consent.OrgTrust, Subject: x.id, Scopes: []string{consent.ScopeAsk}})

	priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h, err := libp2p.New(libp2p.Identity(priv), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var inflight, most atomic.Int64
	release := make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(release) })
	h.SetStreamHandler(org.ProtocolID, func(st network.Stream) {
		defer st.Reset()
		if _, err := frame.Read(st, 1<<20); err != nil {
			return
		}
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-release:
		case <-time.After(20 * time.Second):
		}
	})
	target := nt.ID(0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Connect(ctx, peer.AddrInfo{ID: target, Addrs: nt.Node(0).Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	wire, err := consent.NewRequest(priv, target, "mallory", "hi", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	const sends = 10
	for i := range sends {
		st, err := h.NewStream(ctx, target, consent.ProtocolID)
		if err != nil {
			t.Fatal(err)
		}
		if err := consent.WriteFrame(st, consent.Message{Kind: consent.KindRequest, Request: wire}); err != nil {
			t.Fatal(err)
		}
		_ = st.CloseWrite()
		b, err := consent.ReadFrame(st, 0)
		if err != nil {
			t.Fatal(err)
		}
		ans, err := consent.DecodeMessage(b)
		if err != nil {
			t.Fatal(err)
		}
		_ = st.Close()
		if ans.Err() != nil {
			t.Fatalf("send %d: %v", i, ans.Err())
		}
	}
	// Give the node time to open what it opens: at most one exchange for
	// one stranger's one request is expected.
	nodetest.Poll(10*time.Second, func() bool { return most.Load() >= sends })
	if n := most.Load(); n > 1 {
		t.Errorf("one stranger's request sent %d times holds %d intro exchanges open at once on the node", sends, n)
	}
}
