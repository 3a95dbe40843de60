package moderation_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/moderation"
	"github.com/parley-mesh/parley/internal/store"
)

func newLimited(t *testing.T, clk *clock) *moderation.Service {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "data"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	m, err := moderation.New(moderation.Config{Self: newPeer(t), Store: db, Now: clk.now}) // the default limit, 120 a minute
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPostLimitsOfIdleNamesAreDropped: the inbox asks CheckPost first thing
// in an ask (inbox.Ask, before it checks whom it asks), for any agent name
// the local API is called with, and the service used to keep a post limit
// for every name it was asked about, for good. A limit full again is the
// same as a new one, so the service now drops those (once a minute, or when
// the map has doubled): the names of a burst are let go a minute later.
func TestPostLimitsOfIdleNamesAreDropped(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)}
	m := newLimited(t, clk)
	const n = 5000
	for i := range n {
		if err := m.CheckPost(identity.AgentName(fmt.Sprintf("name-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := moderation.Limits(m); got != n {
		t.Fatalf("within the minute, %d post limits kept for %d names posting once", got, n)
	}
	clk.add(time.Minute)
	if err := m.CheckPost("later"); err != nil {
		t.Fatal(err)
	}
	if got := moderation.Limits(m); got != 1 {
		t.Fatalf("a minute after one post check each of %d names, the service keeps %d post limits in memory, want 1", n, got)
	}
}

// TestPostLimitsDroppingKeepsTheirBehaviour: a limit that is not full again
// survives a pass: an agent that used up its posts gets back only what a
// minute's rate gives, and others' checks do not reset it.
func TestPostLimitsDroppingKeepsTheirBehaviour(t *testing.T) {
	clk := &clock{t: time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)}
	m := newLimited(t, clk)
	if err := m.CheckPost("first"); err != nil { // the first pass is at the first check
		t.Fatal(err)
	}
	clk.add(30 * time.Second)
	for i := range moderation.DefaultPostLimit {
		if err := m.CheckPost("busy"); err != nil {
			t.Fatalf("post %d: %v", i+1, err)
		}
	}
	if err := m.CheckPost("busy"); !errors.Is(err, moderation.ErrRateLimited) {
		t.Fatalf("over the limit: %v", err)
	}
	clk.add(31 * time.Second) // a pass is due; busy has 31 s of its rate back: 62 posts
	if err := m.CheckPost("other"); err != nil {
		t.Fatal(err)
	}
	if got := moderation.Limits(m); got != 2 {
		t.Fatalf("after the pass: %d post limits, want busy's and other's", got)
	}
	for i := range 62 {
		if err := m.CheckPost("busy"); err != nil {
			t.Fatalf("post %d after 31 s: %v", i+1, err)
		}
	}
	if err := m.CheckPost("busy"); !errors.Is(err, moderation.ErrRateLimited) {
		t.Fatalf("post 63 after 31 s: %v", err)
	}
}
