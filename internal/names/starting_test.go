package names_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/parley-mesh/parley/internal/names"
	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// A node listens, and its peers connect to it, before its name service
// serves its card. The tests below stand for that moment with a host whose
// name service starts later.

// startingHost is a loopback host whose name service is not up yet; asked
// counts the streams peers opened for names.Protocol meanwhile (refused as
// not supported).
func startingHost(t *testing.T) (host.Host, crypto.PrivKey, *atomic.Int64) {
	t.Helper()
	priv, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := libp2p.New(libp2p.Identity(priv), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	asked := new(atomic.Int64)
	h.SetStreamHandlerMatch("/parley-test/spy", func(p protocol.ID) bool {
		if p == names.Protocol {
			asked.Add(1)
		}
		return false
	}, func(st network.Stream) { _ = st.Reset() })
	return h, priv, asked
}

// startNames starts h's name service with handle.
func startNames(t *testing.T, h host.Host, priv crypto.PrivKey, handle string) {
	t.Helper()
	h.RemoveStreamHandler("/parley-test/spy")
	ns, err := names.New(names.Config{Host: h, Key: priv, Handle: handle})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ns.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

func connect(t *testing.T, from, to host.Host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := from.Connect(ctx, peer.AddrInfo{ID: to.ID(), Addrs: to.Addrs()}); err != nil {
		t.Fatal(err)
	}
}

// TestCardOfAPeerThatStartsServingIt: the card of a peer that connected
// while its name service was starting is asked for again once it serves
// it, not 10 minutes later (names.RefetchAfter).
func TestCardOfAPeerThatStartsServingIt(t *testing.T) {
	ha, nsa := runService(t, "alice", new(atomic.Pointer[string]))
	hb, privB, asked := startingHost(t)
	connect(t, ha, hb)
	waitFor(t, 20*time.Second, "alice to ask for bob's card", func() bool { return asked.Load() > 0 })
	startNames(t, hb, privB, "bob")
	waitFor(t, 20*time.Second, "alice to hold bob's card", func() bool { return nsa.Name(hb.ID()) == "bob" })
}

// TestCardAskedAgainOnTheNextConnectionAfterAFailedAsk: an ask that got
// no card (the peer was starting) does not keep the peer from being asked
// when it connects again within 10 minutes.
func TestCardAskedAgainOnTheNextConnectionAfterAFailedAsk(t *testing.T) {
	ha, nsa := runService(t, "alice", new(atomic.Pointer[string]))
	hb, privB, asked := startingHost(t)
	connect(t, ha, hb)
	waitFor(t, 20*time.Second, "alice to ask for bob's card", func() bool { return asked.Load() > 0 })
	// Bob goes away, starts, and comes back.
	if err := ha.Network().ClosePeer(hb.ID()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "alice and bob to be apart", func() bool {
		return ha.Network().Connectedness(hb.ID()) != network.Connected && hb.Network().Connectedness(ha.ID()) != network.Connected
	})
	startNames(t, hb, privB, "bob")
	connect(t, hb, ha)
	waitFor(t, 20*time.Second, "alice to hold bob's card", func() bool { return nsa.Name(hb.ID()) == "bob" })
}

// TestOwnCardAcrossARestart: a node seals its card afresh at each start,
// dated then (seq above the card it handed out before), and stores the
// card it hands out; one whose handle changed pushes the new card to its
// peers (node.TestHandleChangedAtRestartReachesContacts), one that changed
// nothing pushes nothing.
func TestOwnCardAcrossARestart(t *testing.T) {
	h, priv := hostAndKey(t)
	self, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	open := func(handle string) *names.Service {
		ns, err := names.New(names.Config{Host: h, Key: priv, Handle: handle, Store: db})
		if err != nil {
			t.Fatal(err)
		}
		return ns
	}
	first := open("me")
	seq, ok := first.CardSeq(self)
	if !ok {
		t.Fatal("the node holds no card of its own")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- first.Run(ctx) }()
	waitFor(t, 10*time.Second, "the card to be stored as handed out", func() bool {
		_, ok, err := db.Lookup(schema.KeyOwnCard())
		return err == nil && ok
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Restarted unchanged, the node seals its card again, dated now (a
	// home restored from an older copy shows a card newer than any it
	// handed out before); Run pushes it to nobody, as it says the same.
	if again, _ := open("me").CardSeq(self); again <= seq {
		t.Errorf("restarted unchanged, the card's seq is %d, not above %d", again, seq)
	}
	renamed := open("myself")
	if s, _ := renamed.CardSeq(self); s <= seq {
		t.Errorf("renamed, the card's seq is %d, not above %d", s, seq)
	}
}
