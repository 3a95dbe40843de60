package names_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/internal/names"
)

// runService starts a Service on a loopback host whose card shows the
// membership member holds, and which takes a card's certificate as the
// organisation's name.
func runService(t *testing.T, handle string, member *atomic.Pointer[string]) (host.Host, *names.Service) {
	t.Helper()
	priv, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := libp2p.New(libp2p.Identity(priv), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	ns, err := names.New(names.Config{Host: h, Key: priv, Handle: handle,
		Member: func() []byte {
			if m := member.Load(); m != nil {
				return []byte(*m)
			}
			return nil
		},
		CheckMember: func(_ peer.ID, wire []byte) (names.Membership, error) {
			return names.Membership{Name: string(wire), Until: time.Now().Add(time.Hour)}, nil
		}})
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
		h.Close()
	})
	return h, ns
}

// A push of a changed card that the peer did not take is tried again, so
// the peer sees the change in seconds, not when it next asks for the card
// (names.RefetchAfter, 10 minutes).
func TestRefusedPushIsTriedAgain(t *testing.T) {
	var memberA, memberB atomic.Pointer[string]
	ha, _ := runService(t, "alice", &memberA)
	hb, nsb := runService(t, "bob", &memberB)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hb.Connect(ctx, peer.AddrInfo{ID: ha.ID(), Addrs: ha.Addrs()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "bob to hold alice's card", func() bool {
		_, ok := nsb.CardSeq(ha.ID())
		return ok
	})
	// Bob refuses the next two pushes, as a node whose stream was lost
	// would; the third, 5 s and 10 s later, is taken.
	nsb.RefusePushes(2)
	org := "Xco"
	memberA.Store(&org)
	waitFor(t, 60*time.Second, "bob to see alice's new membership", func() bool {
		m := nsb.Member(ha.ID())
		return m != nil && m.Name == "Xco"
	})
	if n := nsb.PushesRefused(); n != 2 {
		t.Fatalf("bob refused %d pushes, not 2: the card did not come by a retried push", n)
	}
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(d)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out after %s waiting for %s", d, what)
		case <-tick.C:
		}
	}
}
