package main

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/node/nodetest"
)

// sybilRequest sends one contact request to target from a host with a
// fresh key, and returns the answer.
func sybilRequest(t *testing.T, target peer.AddrInfo) *consent.Message {
	t.Helper()
	priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h, err := libp2p.New(libp2p.Identity(priv), libp2p.NoListenAddrs, libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.Connect(ctx, target); err != nil {
		t.Fatal(err)
	}
	wire, err := consent.NewRequest(priv, target.ID, "sybil", "let me in", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s, err := h.NewStream(ctx, target.ID, consent.ProtocolID)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := consent.WriteFrame(s, consent.Message{Kind: consent.KindRequest, Request: wire}); err != nil {
		t.Fatal(err)
	}
	_ = s.CloseWrite()
	b, err := consent.ReadFrame(s, 0)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	ans, err := consent.DecodeMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	return ans
}

func pendingIn(t *testing.T, home string) map[string]bool {
	t.Helper()
	out := make(map[string]bool)
	for _, c := range contactsOf(t, home) {
		if c.State == "pending-in" {
			out[c.PeerID] = true
		}
	}
	return out
}

// Strangers with fresh keys flood B with contact requests: B keeps at most
// its cap of them (the oldest give way), a genuine stranger's request is
// still taken, a room co-member's request is never crowded out, and B's
// memory and goroutines stay bounded.
func TestCLISybilContactRequests(t *testing.T) {
	t.Parallel()
	tn := trio(t, "shared")
	homeB, homeC, idB, idC := tn.homes[1], tn.homes[2], tn.idB, tn.idC
	b := tn.nodes[1]
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		return logHas(t, homeB, tn.room, "hi from c")
	}, "B to see C in the room")

	target, err := parsePeerAddr(b.addr())
	if err != nil {
		t.Fatal(err)
	}
	pid := b.cmd.Process.Pid
	rssBefore, gBefore := procStatus(t, pid, "VmRSS"), metric(t, homeB, "go_goroutines", "")

	const capIn = 100 // consent's default MaxPendingIn
	flood := func(n int) {
		for i := range n {
			if ans := sybilRequest(t, target); ans.Kind != consent.KindAck {
				t.Fatalf("sybil %d: %+v", i, ans)
			}
		}
	}
	start := time.Now()
	flood(130)
	if got := len(pendingIn(t, homeB)); got != capIn {
		t.Fatalf("after 130 sybils B holds %d pending requests, want the cap %d", got, capIn)
	}
	// C, a room co-member, asks; then the flood goes on.
	if _, errs, code := run(t, "--home", homeC, "contact", "request", idB, "--note", "we share a room"); code != 0 {
		t.Fatalf("C's request: %s", errs)
	}
	more := floodSize(130)
	flood(more)
	if !pendingIn(t, homeB)[idC] {
		t.Fatal("the co-member's request was crowded out by strangers")
	}
	// A genuine stranger is still heard.
	if ans := sybilRequest(t, target); ans.Kind != consent.KindAck {
		t.Fatalf("a stranger's request after the flood: %+v", ans)
	}
	elapsed := time.Since(start)
	if got := len(pendingIn(t, homeB)); got != capIn+1 {
		t.Fatalf("B holds %d pending requests, want %d strangers' and the co-member's", got, capIn)
	}
	peak, rssAfter, gAfter := procStatus(t, pid, "VmHWM"), procStatus(t, pid, "VmRSS"), metric(t, homeB, "go_goroutines", "")
	t.Logf("sybil flood: %d fresh keys in %v; B keeps %d pending (cap %d + the co-member); RSS %d → %d kB (peak %d kB); goroutines %v → %v",
		130+more+1, elapsed.Round(time.Millisecond), capIn+1, capIn, rssBefore, rssAfter, peak, gBefore, gAfter)
	if gAfter > gBefore+40 {
		t.Fatalf("goroutines %v → %v", gBefore, gAfter)
	}
	if growth := rssAfter - rssBefore; growth > 128<<10 {
		t.Fatalf("RSS grew by %d kB", growth)
	}
}
