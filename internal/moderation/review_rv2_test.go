package moderation_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/moderation"
	"github.com/parley-mesh/parley/internal/store"
)

// TestReviewPostLimitsOfEveryNameAreKeptForGood: the inbox asks CheckPost
// first thing in an ask (inbox.Ask, before it checks whom it asks), for
// any agent name the local API is called with; the service keeps a post
// limit for every name it was asked about, for good, also once that
// limit is full again (a bucket untouched for a minute is the same as a
// new one).
func TestReviewPostLimitsOfEveryNameAreKeptForGood(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "data"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	m, err := moderation.New(moderation.Config{Self: newPeer(t), Store: db})
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	for i := range n {
		if err := m.CheckPost(identity.AgentName(fmt.Sprintf("name-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := moderation.Limits(m); got >= n {
		t.Fatalf("after one post check each of %d names, the service keeps %d post limits in memory", n, got)
	}
}
