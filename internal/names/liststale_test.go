package names_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/internal/names"
)

// TestListsChangedNotUndoneByAnOlderRead: a card fetch (Learn) that read
// the lists just before the user approved bob finishes after the loop,
// woken by ListsChanged, read them again: the older answer must not
// replace the newer one. Before (found by a review), refreshLists kept
// whichever read ended last, so bob, shown as bare "bob" a moment before,
// read bob~SUFFIX again (and "bob" resolved to no one) until the lists
// were next asked, a second or two later in a node (never here: the clock
// does not move).
func TestListsChangedNotUndoneByAnOlderRead(t *testing.T) {
	h, priv := hostAndKey(t)
	l := &lists{}
	// The test's own Learn, alone, waits in Contacts once it has read it:
	// the loop's reads and the ticker's pass.
	var armed, held atomic.Bool
	entered, release := make(chan struct{}), make(chan struct{})
	fromTestLearn := func() bool {
		buf := make([]byte, 64<<10)
		st := string(buf[:runtime.Stack(buf, false)])
		return strings.Contains(st, "TestListsChangedNotUndoneByAnOlderRead.func") && !strings.Contains(st, "tidyPassing")
	}
	var clockMu sync.Mutex
	now := time.Now()
	ns, err := names.New(names.Config{Host: h, Key: priv,
		Wanted: l.get(&l.wanted),
		Contacts: func() []peer.ID {
			out := l.get(&l.contacts)()
			if armed.Load() && fromTestLearn() && held.CompareAndSwap(false, true) {
				close(entered)
				<-release
			}
			return out
		},
		Requesters: l.get(&l.asking),
		Now: func() time.Time {
			clockMu.Lock()
			defer clockMu.Unlock()
			return now
		}})
	if err != nil {
		t.Fatal(err)
	}
	bob, bobCard := card(t, "bob")
	other, otherCard := card(t, "bob")
	carol, carolCard := card(t, "carol")
	l.setAll(nil, nil, []peer.ID{bob, other, carol})
	for _, c := range []struct {
		p peer.ID
		w []byte
	}{{bob, bobCard}, {other, otherCard}} {
		if err := ns.Learn(c.p, c.w); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ns.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	// Two seconds on: the lists' answers are stale; carol's card comes
	// in, and its Learn reads the lists (bob not yet a contact).
	clockMu.Lock()
	now = now.Add(2 * time.Second)
	clockMu.Unlock()
	armed.Store(true)
	learned := make(chan error, 1)
	go func() { learned <- ns.Learn(carol, carolCard) }()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("carol's Learn did not read the lists")
	}

	l.setAll([]peer.ID{bob}, []peer.ID{bob}, []peer.ID{other, carol}) // the user approves bob; the contact service says so
	ns.ListsChanged()
	waitFor(t, 10*time.Second, "the approved contact to read bob", func() bool {
		p, err := ns.Resolve("bob")
		return ns.Name(bob) == "bob" && err == nil && p == bob
	})

	close(release) // carol's Learn ends with the lists it read before
	if err := <-learned; err != nil {
		t.Fatal(err)
	}
	if got := ns.Name(bob); got != "bob" {
		t.Errorf("the approved contact reads %q again once an older read of the lists ended, want bob", got)
	}
	if p, err := ns.Resolve("bob"); err != nil || p != bob {
		t.Errorf("bob resolves to %v, %v once an older read of the lists ended, want %s", p, err, bob)
	}
}
