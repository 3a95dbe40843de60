package contacts_test

import (
	"bytes"
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
	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/internal/store/schema"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestStrangerRequestsDoNotGrowTheDisk: strangers with fresh keys send
// contact requests with the longest handle and note (four-byte runes).
// The book holds at most 100 of them, each new one dropping the oldest;
// each is a record of about 4.9 KB, kept in pieces under the store's value
// threshold (schema.SetPieces), so it lives in Badger's tables, whose
// compaction reclaims the dropped ones, and not in the value log, which
// the node never reclaims: the value log does not grow with the requests.
// After a restart the book holds the 100 newest requests.
func TestStrangerRequestsDoNotGrowTheDisk(t *testing.T) {
	nt := startNet(t, 1)
	var sent []peer.ID
	var du func(pattern string) int64
	send := func(n int) {
		for range n {
			sent = append(sent, strangerRequest(t, nt, 0))
		}
	}
	vlog := func() int64 { return du("*.vlog") }
	du = func(pattern string) int64 {
		n := int64(0)
		files, _ := filepath.Glob(filepath.Join(nt.Home(0), node.DataDirName, pattern))
		for _, f := range files {
			if fi, err := os.Stat(f); err == nil {
				n += fi.Size()
			}
		}
		return n
	}
	nt.Crash(0)
	empty := vlog()
	nt.RestartAlone(0)
	const first, strangers = 50, 250
	send(first)
	nt.Crash(0)
	after50 := vlog()
	nt.RestartAlone(0)
	send(strangers - first)
	nt.Crash(0)
	after250 := vlog()
	t.Logf("value logs: %d bytes empty, %d after %d stranger requests, %d after %d (a request is ~4.9 KB); tables %d bytes",
		empty, after50, first, after250, strangers, du("*.sst"))
	// A record in the value log would be ~5 KB a request: 200 more
	// requests would add ~1 MB.
	if grew := after250 - after50; grew > 32<<10 {
		t.Errorf("%d more stranger requests grew the value logs by %d bytes", strangers-first, grew)
	}
	if after250 > empty+64<<10 {
		t.Errorf("after %d stranger requests the value logs hold %d bytes (%d empty)", strangers, after250, empty)
	}
	n := nt.RestartAlone(0)
	for i, p := range sent {
		c, ok := n.Contacts().Book().Get(p, time.Now())
		held := ok && c.State == consent.StatePendingIn
		if newest := i >= len(sent)-100; held != newest {
			t.Errorf("stranger %d of %d: in the book %v (state %q), want %v", i, len(sent), held, c.State, newest)
		}
	}
}

// strangerRequest sends node i a contact request with the longest handle
// and note (four-byte runes, a record of ~4.9 KB) from a stranger with a
// fresh key, and returns the stranger's peer ID.
func strangerRequest(t *testing.T, nt *nodetest.Net, i int) peer.ID {
	t.Helper()
	b := nt.ID(i)
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h, err := libp2p.New(libp2p.Identity(k), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Connect(ctx, peer.AddrInfo{ID: b, Addrs: nt.Node(i).Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	wire, err := consent.NewRequest(k, b, strings.Repeat("𝄞", consent.MaxHandle), strings.Repeat("𝄞", consent.MaxNote), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if ans := sendFrom(t, h, b, consent.Message{Kind: consent.KindRequest, Request: wire}); ans.Err() != nil {
		t.Fatalf("a stranger's request: %v", ans.Err())
	}
	return h.ID()
}

// rawContacts returns the contact keys and values in node i's store (the
// node is down).
func rawContacts(t *testing.T, nt *nodetest.Net, i int) map[string][]byte {
	t.Helper()
	db, err := store.Open(filepath.Join(nt.Home(i), node.DataDirName), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := map[string][]byte{}
	if err := db.Scan(schema.ContactPrefix(), func(k, v []byte) bool {
		m[string(k)] = bytes.Clone(v)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestWholeContactRecordsOfOlderParleysLoad: a store an older Parley
// wrote, each contact record one whole value under c/<peer>, loads the
// same book; a record the node rewrites goes in pieces and replaces the
// whole value, and the book reads the same after a restart.
func TestWholeContactRecordsOfOlderParleysLoad(t *testing.T) {
	nt := startNet(t, 1)
	a, b := strangerRequest(t, nt, 0), strangerRequest(t, nt, 0)
	nt.Crash(0)
	pieced := rawContacts(t, nt, 0)
	db, err := store.Open(filepath.Join(nt.Home(0), node.DataDirName), nil)
	if err != nil {
		t.Fatal(err)
	}
	j := schema.NewJoiner(schema.ContactPrefix())
	if err := db.Scan(schema.ContactPrefix(), func(k, v []byte) bool { j.Add(k, v); return true }); err != nil {
		t.Fatal(err)
	}
	recs, damaged := j.Done()
	if len(recs) != 2 || len(damaged) > 0 || len(pieced) < 2*5 {
		t.Fatalf("%d records in %d keys, damaged: %v", len(recs), len(pieced), damaged)
	}
	for _, r := range recs { // as an older Parley wrote them
		ops := append(schema.DeletePieces(r.Key), schema.Op{Key: r.Key, Val: r.Val})
		if err := db.Apply(ops, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if raw := rawContacts(t, nt, 0); len(raw) != 2 || len(raw[string(schema.Contact([]byte(a)))]) < 4000 {
		t.Fatalf("the old form: %d keys", len(raw))
	}
	n := nt.RestartAlone(0)
	for _, p := range []peer.ID{a, b} {
		if c, ok := n.Contacts().Book().Get(p, time.Now()); !ok || c.State != consent.StatePendingIn || c.Handle != strings.Repeat("𝄞", consent.MaxHandle) {
			t.Fatalf("%s from a whole record: %v %+v", p, ok, c)
		}
	}
	// The stranger is gone: the denial is kept and not told.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := n.Contacts().Deny(ctx, a.String()); err != nil {
		t.Fatal(err)
	}
	nt.Crash(0)
	raw := rawContacts(t, nt, 0)
	if v := raw[string(schema.Contact([]byte(a)))]; len(v) == 0 || v[0] != 0 || len(v) >= store.ValueThreshold {
		t.Errorf("the rewritten record is not in pieces: its first key holds %d bytes", len(v))
	}
	if v := raw[string(schema.Contact([]byte(b)))]; len(v) < 4000 {
		t.Errorf("the record not rewritten changed: %d bytes", len(v))
	}
	n = nt.RestartAlone(0)
	if c, ok := n.Contacts().Book().Get(a, time.Now()); !ok || c.State != consent.StateDenied {
		t.Errorf("the rewritten record after a restart: %v %q", ok, c.State)
	}
	if c, ok := n.Contacts().Book().Get(b, time.Now()); !ok || c.State != consent.StatePendingIn {
		t.Errorf("the whole record after a restart: %v %q", ok, c.State)
	}
}
