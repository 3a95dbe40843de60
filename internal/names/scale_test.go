package names_test

import (
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/internal/names"
)

// TestTableBuiltOutsideTheLock: the display table is built outside the
// service's lock, one build at a time (before, the whole build ran under
// it, so a slow build of many nodes held up Learn, CardSeq and every
// reader). While a build waits on the contacts' hints, a card is taken
// and a reader of a table only old reads that table; once a card came in,
// the next reader waits for a table that shows it.
func TestTableBuiltOutsideTheLock(t *testing.T) {
	h, priv := hostAndKey(t)
	var mu sync.Mutex
	now := time.Now()
	var hold chan struct{} // set: Hints waits for it to close
	entered := make(chan struct{}, 1)
	ns, err := names.New(names.Config{Host: h, Key: priv, Handle: "alice",
		Hints: func() map[peer.ID]string {
			mu.Lock()
			c := hold
			mu.Unlock()
			if c != nil {
				entered <- struct{}{}
				<-c
			}
			return nil
		},
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	if err != nil {
		t.Fatal(err)
	}
	bob, bobWire := card(t, "bob")
	carol, carolWire := card(t, "carol")
	if err := ns.Learn(bob, bobWire); err != nil {
		t.Fatal(err)
	}
	if got := ns.Name(bob); got != "bob" {
		t.Fatalf("bob shows as %q", got)
	}
	release := make(chan struct{})
	mu.Lock()
	now, hold = now.Add(2*time.Second), release
	mu.Unlock()
	built := make(chan []names.Entry)
	go func() { built <- ns.All() }()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no build asked for the hints")
	}
	mu.Lock()
	hold = nil
	mu.Unlock()
	within := func(what string, fn func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { fn(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			close(release)
			t.Fatalf("%s waited for the table's build", what)
		}
	}
	within("Name of a table only old", func() {
		if got := ns.Name(bob); got != "bob" {
			t.Errorf("bob shows as %q during a build", got)
		}
	})
	within("Learn", func() {
		if err := ns.Learn(carol, carolWire); err != nil {
			t.Error(err)
		}
	})
	within("CardSeq", func() {
		if _, ok := ns.CardSeq(carol); !ok {
			t.Error("carol's card is not kept")
		}
	})
	close(release)
	<-built
	if got := ns.Name(carol); got != "carol" {
		t.Errorf("carol, whose card came in during a build, shows as %q after it", got)
	}
}
