package contacts_test

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/node"
)

// TestStrangerRequestsDoNotGrowTheDisk: strangers with fresh keys send
// contact requests with the longest handle and note (four-byte runes).
// The book holds at most 100 of them, each new one dropping the oldest,
// but each is written as a record of about 4.9 KB: past the store's value
// threshold (1 KiB), into Badger's value log, which the node never
// reclaims. Every request a stranger sends thus adds ~5 KB to the disk for
// good, whatever the cap: fresh keys cost nothing and each has a rate
// limit bucket of its own, so a flood is limited by handshakes and
// signature checks alone.
func TestStrangerRequestsDoNotGrowTheDisk(t *testing.T) {
	t.Skip("known gap: a stranger's contact request is a record of ~5 KB in the value log, never reclaimed (docs/ARCHITECTURE.md, Known gaps)")
	nt := startNet(t, 1)
	b := nt.ID(0)
	addrs := nt.Node(0).Host().Addrs()
	const strangers = 250
	for range strangers {
		k, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		h, err := libp2p.New(libp2p.Identity(k), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := h.Connect(ctx, peer.AddrInfo{ID: b, Addrs: addrs}); err != nil {
			t.Fatal(err)
		}
		cancel()
		wire, err := consent.NewRequest(k, b, strings.Repeat("𝄞", consent.MaxHandle), strings.Repeat("𝄞", consent.MaxNote), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if ans := sendFrom(t, h, b, consent.Message{Kind: consent.KindRequest, Request: wire}); ans.Err() != nil {
			t.Fatalf("a stranger's request: %v", ans.Err())
		}
		_ = h.Close()
	}
	nt.Crash(0)
	vlog := int64(0)
	files, _ := filepath.Glob(filepath.Join(nt.Home(0), node.DataDirName, "*.vlog"))
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			vlog += fi.Size()
		}
	}
	// The book holds 100 requests; what the others wrote is garbage.
	if bound := int64(100*5000 + 256<<10); vlog > bound {
		t.Fatalf("after %d stranger requests (100 held) the value log holds %d bytes (bound %d)", strangers, vlog, bound)
	}
}
