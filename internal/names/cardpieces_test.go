package names_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/discovery"
	"github.com/parley-mesh/parley/internal/names"
	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// bigCard is priv's node card at seq with a handle of 64 bytes and a
// membership of ~4 KB: a wire of ~4.6 KB.
func bigCard(t *testing.T, priv crypto.PrivKey, seq uint64) []byte {
	t.Helper()
	id, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	member := make([]byte, discovery.MaxNodeCardMember-64)
	for i := range member {
		member[i] = byte(i)
	}
	w, err := discovery.SealNodeCard(priv, &discovery.NodeCard{Peer: id, Handle: strings.Repeat("𝄞", 16), Seq: seq, Member: member})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func vlogBytes(t *testing.T, dir string) int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if err != nil {
		t.Fatal(err)
	}
	n := int64(0)
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// TestCardsKeptInPieces: node cards of ~4.6 KB pushed over and over are
// kept in pieces under the value threshold, so the value log does not
// grow with them; they read back after a restart, and a card an older
// Parley kept whole under n/<peer> reads too.
func TestCardsKeptInPieces(t *testing.T) {
	dir := t.TempDir()
	h, priv := hostAndKey(t)
	l := &lists{}
	const peers, pushes = 20, 10
	var keys []crypto.PrivKey
	var ids []peer.ID
	for range peers + 1 {
		k, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(k)
		keys, ids = append(keys, k), append(ids, id)
	}
	l.setAll(ids, ids, nil)
	open := func() (*store.DB, *names.Service) {
		db, err := store.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := names.New(names.Config{Host: h, Key: priv, Handle: "me", Store: db,
			Wanted: l.get(&l.wanted), Contacts: l.get(&l.contacts)})
		if err != nil {
			t.Fatal(err)
		}
		return db, ns
	}
	db, ns := open()
	for seq := uint64(1); seq <= pushes; seq++ {
		for i := range peers {
			if err := ns.Learn(ids[i], bigCard(t, keys[i], seq)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The last peer's card as an older Parley kept it: whole.
	old := bigCard(t, keys[peers], 3)
	if err := db.Set(schema.NodeCard([]byte(ids[peers])), old); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	vlog := vlogBytes(t, dir)
	t.Logf("%d cards of %d bytes pushed: value logs hold %d bytes", peers*pushes, len(bigCard(t, keys[0], 1)), vlog)
	if vlog > int64(len(old))+1<<10 { // the old card alone is there
		t.Errorf("%d cards pushed: the value logs hold %d bytes", peers*pushes, vlog)
	}
	db, ns = open()
	defer db.Close()
	for i, id := range ids {
		want := uint64(pushes)
		if i == peers {
			want = 3
		}
		if seq, ok := ns.CardSeq(id); !ok || seq != want {
			t.Errorf("peer %d after a restart: card seq %d %v, want %d", i, seq, ok, want)
		}
	}
	if n := storedCards(t, db); n != peers+1 {
		t.Errorf("%d cards stored, want %d", n, peers+1)
	}
}
