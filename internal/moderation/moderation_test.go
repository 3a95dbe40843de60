package moderation_test

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/moderation"
	"github.com/parley-mesh/parley/internal/store"
)

func newPeer(t *testing.T) peer.ID {
	t.Helper()
	_, pub, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Rules survive a restart, a timed mute ends by itself, the limit refills,
// and every decision reaches the audit hook.
func TestRulesLimitsAndAudit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	db, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	self, other := newPeer(t), newPeer(t)
	clk := &clock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	var recs []audit.Record
	cfg := moderation.Config{Self: self, Store: db, PostLimit: 3, Now: clk.now, Audit: func(r audit.Record) { recs = append(recs, r) }}
	m, err := moderation.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bob := "bob@" + other.String()
	if _, err := m.Mute(bob, 0, "human"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Mute("alice", 10*time.Minute, "human"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Kill("zed", "human"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Kill(bob, "human"); !errors.Is(err, moderation.ErrBadInput) {
		t.Fatalf("kill of another node's agent: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg.Store = db
	m, err = moderation.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Hidden(bob) || m.Hidden("carol@"+other.String()) {
		t.Fatal("bob's mute did not survive a restart")
	}
	if err := m.CheckPost("alice"); !errors.Is(err, moderation.ErrMuted) {
		t.Fatalf("muted alice posts: %v", err)
	}
	if err := m.CheckPost("zed"); !errors.Is(err, moderation.ErrKilled) || !m.Killed("zed") {
		t.Fatalf("killed zed posts: %v", err)
	}
	clk.add(10 * time.Minute)
	for i := range 3 {
		if err := m.CheckPost("alice"); err != nil {
			t.Fatalf("post %d after the mute ran out: %v", i+1, err)
		}
	}
	if err := m.CheckPost("alice"); !errors.Is(err, moderation.ErrRateLimited) {
		t.Fatalf("fourth post within a minute: %v", err)
	}
	if err := m.CheckPost(identity.AgentName("other")); err != nil {
		t.Fatalf("the limit is per agent: %v", err)
	}
	clk.add(20 * time.Second) // one post's worth at 3 a minute
	if err := m.CheckPost("alice"); err != nil {
		t.Fatalf("a post after the limit refilled: %v", err)
	}
	if _, err := m.Revive("zed", "human"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Unmute(bob, "human"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Unmute(bob, "human"); !errors.Is(err, moderation.ErrNotFound) {
		t.Fatalf("a second unmute: %v", err)
	}
	if rs := m.List(); len(rs) != 0 {
		t.Fatalf("rules left: %+v", rs)
	}
	want := []string{"agent.mute " + bob, "agent.mute alice@" + self.String(), "agent.kill zed@" + self.String(),
		"agent.revive zed@" + self.String(), "agent.unmute " + bob}
	if len(recs) != len(want) {
		t.Fatalf("audit records: %+v", recs)
	}
	for i, r := range recs {
		if r.Action+" "+r.Subject != want[i] || r.Actor != "human" {
			t.Errorf("audit record %d: %+v, want %s", i, r, want[i])
		}
	}
}

// The user's own agent, human, cannot be muted or killed: that would shut
// the user out of every room. Another node's human can be muted.
func TestTheUserCannotBeShutOut(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "data"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	self, other := newPeer(t), newPeer(t)
	m, err := moderation.New(moderation.Config{Self: self, Store: db})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"human", "human@" + self.String()} {
		if _, err := m.Kill(name, "human"); !errors.Is(err, moderation.ErrBadInput) {
			t.Fatalf("kill %s: %v", name, err)
		}
		if _, err := m.Mute(name, 0, "human"); !errors.Is(err, moderation.ErrBadInput) {
			t.Fatalf("mute %s: %v", name, err)
		}
	}
	if err := m.CheckPost(identity.HumanAgent); err != nil {
		t.Fatalf("the user's post after the refused rules: %v", err)
	}
	if _, err := m.Mute("human@"+other.String(), 0, "human"); err != nil {
		t.Fatalf("mute another node's human: %v", err)
	}
}
