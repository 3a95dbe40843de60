package names_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/internal/names"
)

// TestContactApprovedKeepsItsHandleAtOnce: two nodes named bob ask to be
// contacts, so both show with their tails; once the user approves one,
// it shows as bare "bob" and resolves by it as soon as the node says its
// lists changed, not only when the lists' cache runs out (the clock here
// never moves, so a cache would hold for good). Found when the CLI's
// calls got faster: a contact approved a moment before read as bob~SUFFIX
// for up to its tick.
func TestContactApprovedKeepsItsHandleAtOnce(t *testing.T) {
	h, priv := hostAndKey(t)
	l := &lists{}
	now := time.Now()
	ns, err := names.New(names.Config{Host: h, Key: priv, Wanted: l.get(&l.wanted), Contacts: l.get(&l.contacts),
		Requesters: l.get(&l.asking), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	bob, bobCard := card(t, "bob")
	other, otherCard := card(t, "bob")
	l.setAll(nil, nil, []peer.ID{bob, other})
	if err := ns.Learn(bob, bobCard); err != nil {
		t.Fatal(err)
	}
	if err := ns.Learn(other, otherCard); err != nil {
		t.Fatal(err)
	}
	if a, b := ns.Name(bob), ns.Name(other); !strings.HasPrefix(a, "bob~") || !strings.HasPrefix(b, "bob~") {
		t.Fatalf("two requesters named bob show as %q and %q, want both with their tails", a, b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ns.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	l.setAll([]peer.ID{bob}, []peer.ID{bob}, []peer.ID{other}) // the user approves bob
	ns.ListsChanged()
	waitFor(t, 10*time.Second, "the approved contact to read bob", func() bool {
		p, err := ns.Resolve("bob")
		return ns.Name(bob) == "bob" && err == nil && p == bob
	})
	if got := ns.Name(other); !strings.HasPrefix(got, "bob~") || !strings.HasSuffix(other.String(), got[4:]) {
		t.Fatalf("the other requester shows as %q, want bob~ and its tail", got)
	}
}
