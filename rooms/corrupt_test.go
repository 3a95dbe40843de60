package rooms_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/internal/store/schema"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// readsTrue polls node i's copy of event eid until it reads as text; until
// then it must read as damage (rooms.ErrCorrupt), never as other text.
func readsTrue(t *testing.T, nt *nodetest.Net, i int, id identity.RoomID, eid rooms.ID, text string) {
	t.Helper()
	sawCorrupt := false
	nt.WaitFor(30*time.Second, func() bool {
		v, err := mgr(nt, i).Event(id, eid)
		switch {
		case errors.Is(err, rooms.ErrCorrupt):
			sawCorrupt = true
			return false
		case err != nil:
			t.Fatalf("read the damaged event: %v", err)
		case v.Text != text:
			t.Fatalf("damaged event served as truth: %.40q", v.Text)
		}
		return true
	}, "node %d to fetch the damaged event again", i)
	if _, err := mgr(nt, i).Log(id, 100, nil); err != nil {
		t.Fatalf("log after the repair: %v", err)
	}
	t.Logf("reported as corrupt before the repair: %v; repaired %v", sawCorrupt, counter(t, nt.Node(i), "parley_room_events_repaired_total"))
}

// TestEditedEventIsCorruptAndRefetched: an event whose stored bytes were
// changed (its text edited under its ID) reads as damage, never as the
// edited text, and the node fetches it again from a member.
func TestEditedEventIsCorruptAndRefetched(t *testing.T) {
	nt := startNet(t, 2)
	id := openRoom(t, nt, 1)
	const text = "the original words of node zero"
	eid := say(t, nt, 0, id, text)
	waitConverged(t, nt, id, 4, 20*time.Second, 0, 1)
	nt.Crash(1)
	db, err := store.Open(filepath.Join(nt.Home(1), node.DataDirName), nil)
	if err != nil {
		t.Fatal(err)
	}
	key := schema.RoomEvent(string(id), eid[:])
	v, err := db.Get(key)
	if err != nil || !bytes.Contains(v, []byte(text)) {
		t.Fatalf("stored event: %v", err)
	}
	v = bytes.Replace(v, []byte(text), []byte(strings.Replace(text, "original", "tampered", 1)), 1)
	if err := db.Set(key, v); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	nt.Restart(1)
	readsTrue(t, nt, 1, id, eid, text)
}

// TestFlippedValueLogIsCorruptAndRefetched: bytes flipped in a real value
// log (an event over Badger's value threshold lives there) read as damage,
// and the node fetches the event again from a member.
func TestFlippedValueLogIsCorruptAndRefetched(t *testing.T) {
	nt := startNet(t, 2)
	id := openRoom(t, nt, 1)
	text := strings.Repeat("a long message that Badger keeps in its value log. ", 60)
	eid := say(t, nt, 0, id, text)
	waitConverged(t, nt, id, 4, 20*time.Second, 0, 1)
	nt.Crash(1)
	logs, _ := filepath.Glob(filepath.Join(nt.Home(1), node.DataDirName, "*.vlog"))
	flipped := false
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if k := bytes.Index(b, []byte(text)); k >= 0 {
			b[k+len(text)/2] ^= 0x20
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			flipped = true
		}
	}
	if !flipped {
		t.Fatalf("the message is in none of the value logs %v", logs)
	}
	nt.Restart(1)
	readsTrue(t, nt, 1, id, eid, text)
}
