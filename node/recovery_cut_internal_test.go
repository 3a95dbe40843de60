package node

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// TestRecoverCutShortKeepsTheRecoveryFile: a --recover start makes a new
// database and then writes the recovery file's room list and contacts
// into it. A start cut short between the two (killed, a power loss, or
// the write refused by a full disk) leaves a database that holds no
// m/node key and none of the file's entries. The next start must still
// take the entries from the recovery file; before, it opened the empty
// database as the node's own and its first save wrote the recovery file
// over with nothing, losing the room list and contacts for good.
func TestRecoverCutShortKeepsTheRecoveryFile(t *testing.T) {
	home := t.TempDir()
	contact := append(schema.Contact([]byte("a peer")), []byte{}...)
	start := func(recover bool) *Node {
		t.Helper()
		n, err := New(Config{Home: home, Recover: recover, NoLocalAPI: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := n.openStore(); err != nil {
			n.lock.unlock()
			t.Fatal(err)
		}
		return n
	}
	stop := func(n *Node) {
		t.Helper()
		n.saveRecovery()
		if err := n.db.Close(); err != nil {
			t.Fatal(err)
		}
		n.lock.unlock()
	}
	n := start(false)
	if err := n.db.Apply([]schema.Op{{Key: contact, Val: []byte("a contact")}}, true); err != nil {
		t.Fatal(err)
	}
	stop(n)

	// The database is lost; a --recover start makes a new one and is cut
	// short before it writes the recovery file's entries into it.
	data := filepath.Join(home, DataDirName)
	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	for _, recover := range []bool{false, true} {
		n = start(recover)
		v, ok, err := n.db.Lookup(contact)
		stop(n)
		if err != nil || !ok || string(v) != "a contact" {
			t.Fatalf("start (recover %v) after a --recover cut short: the contact is %q, %v, %v: the recovery file's entries are lost", recover, v, ok, err)
		}
	}
}
