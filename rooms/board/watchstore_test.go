package board_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/store/schema"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms/board"
)

// memStore is a board.Store in memory; it fails the test on a value over
// 1 KiB.
type memStore struct {
	t  testing.TB
	mu sync.Mutex
	kv map[string][]byte
}

func newMemStore(t testing.TB) *memStore { return &memStore{t: t, kv: map[string][]byte{}} }

func (m *memStore) ScanFrom(prefix, start []byte, reverse bool, fn func(key, val []byte) bool) error {
	m.mu.Lock()
	keys := slices.Sorted(maps.Keys(m.kv))
	kv := maps.Clone(m.kv)
	m.mu.Unlock()
	for _, k := range keys {
		if strings.HasPrefix(k, string(prefix)) && (start == nil || k >= string(start)) && !fn([]byte(k), kv[k]) {
			break
		}
	}
	return nil
}

func (m *memStore) Apply(ops []schema.Op, _ bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, op := range ops {
		if op.Delete {
			delete(m.kv, string(op.Key))
			continue
		}
		if len(op.Val) >= 1<<10 {
			m.t.Errorf("a value of %d bytes at %q", len(op.Val), op.Key)
		}
		m.kv[string(op.Key)] = bytes.Clone(op.Val)
	}
	return nil
}

// watchKeys counts the store's keys of board watches.
func (m *memStore) watchKeys() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k := range m.kv {
		if strings.HasPrefix(k, string(schema.BoardWatchPrefix())) {
			n++
		}
	}
	return n
}

func (m *memStore) clone() *memStore {
	m.mu.Lock()
	defer m.mu.Unlock()
	return &memStore{t: m.t, kv: maps.Clone(m.kv)}
}

// watchFixture is a node's rooms with board services made on them over
// one store and one clock.
type watchFixture struct {
	t     *testing.T
	nt    *nodetest.Net
	ctx   context.Context
	mu    sync.Mutex
	ahead time.Duration
}

func newWatchFixture(t *testing.T) *watchFixture {
	f := &watchFixture{t: t, nt: nodetest.Start(t, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	f.ctx = ctx
	return f
}

func (f *watchFixture) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return time.Now().Add(f.ahead)
}

func (f *watchFixture) set(d time.Duration) { f.mu.Lock(); f.ahead = d; f.mu.Unlock() }

// service starts a board service on st (a node's start).
func (f *watchFixture) service(st board.Store) *board.Service {
	f.t.Helper()
	s, err := board.New(board.Config{Rooms: f.nt.Node(0).Rooms(), Self: f.nt.ID(0), Now: f.now, Store: st})
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

func (f *watchFixture) claim(s *board.Service, agent string, paths ...string) error {
	_, err := s.Claim(f.ctx, agentName(agent), board.ClaimRequest{Project: project, Paths: paths, Note: agent + "'s work", TTL: time.Hour})
	return err
}

func (f *watchFixture) refused(s *board.Service, agent string, paths ...string) {
	f.t.Helper()
	if err := f.claim(s, agent, paths...); !errors.Is(err, board.ErrConflict) {
		f.t.Fatalf("%s's claim on %v: %v, want a conflict", agent, paths, err)
	}
}

func freeNotices(s *board.Service, agent string, take bool) []board.Notice {
	var out []board.Notice
	for _, n := range s.Notices(agentName(agent), take) {
		if n.Kind == board.NoticeFree {
			out = append(out, n)
		}
	}
	return out
}

// TestBoardWatchesStoredBoundedAndSmall: a refused claim's watch is kept
// in the store, every value under 1 KiB (a claim of 64 paths of 500 bytes
// and a long note in pieces), at most 32 for one agent (the oldest
// dropped, from the store too), and a node started on that store watches
// the same ones. Before, nothing of them was stored.
func TestBoardWatchesStoredBoundedAndSmall(t *testing.T) {
	f := newWatchFixture(t)
	st := newMemStore(t)
	s := f.service(st)
	if err := f.claim(s, "alice", "x/**"); err != nil {
		t.Fatal(err)
	}
	long := make([]string, board.MaxPaths)
	for i := range long {
		long[i] = fmt.Sprintf("x/%03d/%s.go", i, strings.Repeat("é", 240))
	}
	f.refused(s, "bob", long...)
	if st.watchKeys() < 2 {
		t.Fatalf("a long refused claim kept in %d keys", st.watchKeys())
	}
	for i := range 100 {
		f.refused(s, "bob", fmt.Sprintf("x/f%d.go", i))
	}
	if w := board.Watches(s); w != 32 {
		t.Fatalf("%d watches of bob, want 32", w)
	}
	if n := st.watchKeys(); n != 32 {
		t.Fatalf("%d keys stored for 32 watches of one key each", n)
	}
	s2 := f.service(st)
	if w := board.Watches(s2); w != 32 {
		t.Fatalf("a node started on the store watches %d, want 32", w)
	}
	if _, err := s2.Release(f.ctx, agentName("alice"), project, nil); err != nil {
		t.Fatal(err)
	}
	ns := freeNotices(s2, "bob", true)
	if len(ns) != 32 || ns[0].Paths[0] != "x/f68.go" {
		t.Fatalf("bob told %d free, the first %v", len(ns), ns[0].Paths)
	}
	if n := st.watchKeys(); n != 0 || board.Watches(s2) != 0 {
		t.Fatalf("after they were told %d keys stored, %d watched", n, board.Watches(s2))
	}
}

// TestBoardWatchesExpireInTheStore: a watch is kept for its hour; a node
// started after that drops it from the store and tells nothing of it;
// so does a running node at its next look at the agent's notices.
func TestBoardWatchesExpireInTheStore(t *testing.T) {
	f := newWatchFixture(t)
	st := newMemStore(t)
	s := f.service(st)
	if err := f.claim(s, "alice", "a.go", "b.go"); err != nil {
		t.Fatal(err)
	}
	f.refused(s, "bob", "a.go")
	f.refused(s, "carol", "b.go")
	if st.watchKeys() != 2 {
		t.Fatalf("%d keys stored for two watches", st.watchKeys())
	}
	f.set(time.Hour + time.Minute)
	if ns := freeNotices(s, "bob", false); len(ns) != 0 {
		t.Fatalf("an expired watch told: %+v", ns)
	}
	if st.watchKeys() != 1 {
		t.Fatalf("%d keys stored after bob's watch expired", st.watchKeys())
	}
	s2 := f.service(st)
	if w := board.Watches(s2); w != 0 || st.watchKeys() != 0 {
		t.Fatalf("a node started after the watches expired watches %d, stores %d keys", w, st.watchKeys())
	}
}

// TestBoardWatchOfAKilledAgentIsForgotten: an agent killed is told
// nothing more: its watches go from memory and from the store.
func TestBoardWatchOfAKilledAgentIsForgotten(t *testing.T) {
	f := newWatchFixture(t)
	st := newMemStore(t)
	s := f.service(st)
	if err := f.claim(s, "alice", "a.go"); err != nil {
		t.Fatal(err)
	}
	f.refused(s, "bob", "a.go")
	f.refused(s, "carol", "a.go")
	s.Forget(agentName("bob"))
	if w := board.Watches(s); w != 1 || st.watchKeys() != 1 {
		t.Fatalf("after bob was forgotten %d watches, %d keys", w, st.watchKeys())
	}
	if w := board.Watches(f.service(st)); w != 1 {
		t.Fatalf("a node started on the store watches %d", w)
	}
}

// TestBoardWatchesDamagedDropped: a record of a watch that cannot be read
// (a piece missing, a garbled value, a key of no watch) is dropped at
// start; the others are watched.
func TestBoardWatchesDamagedDropped(t *testing.T) {
	f := newWatchFixture(t)
	st := newMemStore(t)
	s := f.service(st)
	if err := f.claim(s, "alice", "x/**"); err != nil {
		t.Fatal(err)
	}
	f.refused(s, "bob", "x/a.go")
	f.refused(s, "bob", "x/b.go")
	st.kv[string(schema.BoardWatch("bob", 1, 0))] = []byte{1, '{'}
	st.kv[string(schema.BoardWatch("carol", 9, 1))] = []byte("}")
	st.kv["b/w/junk"] = []byte("x")
	s2 := f.service(st)
	if w := board.Watches(s2); w != 1 || st.watchKeys() != 1 {
		t.Fatalf("%d watched, %d keys, want 1 and 1", w, st.watchKeys())
	}
	if _, err := s2.Release(f.ctx, agentName("alice"), project, nil); err != nil {
		t.Fatal(err)
	}
	if ns := freeNotices(s2, "bob", true); len(ns) != 1 || ns[0].Paths[0] != "x/b.go" {
		t.Fatalf("bob told %+v", ns)
	}
}

// TestBoardWatchesOfAStoreRestoredFromAnOlderCopy: a store restored from
// a copy made after bob's first refusal and before his second: the first
// watch is there and the second is not (made after the copy: lost). Told
// already after the copy was made, the first is told once more, and once
// only (the copy does not know it was told): what ARCHITECTURE.md says of
// a restore.
func TestBoardWatchesOfAStoreRestoredFromAnOlderCopy(t *testing.T) {
	f := newWatchFixture(t)
	st := newMemStore(t)
	s := f.service(st)
	if err := f.claim(s, "alice", "a.go", "b.go"); err != nil {
		t.Fatal(err)
	}
	f.refused(s, "bob", "a.go")
	old := st.clone()
	f.refused(s, "bob", "b.go")
	if _, err := s.Release(f.ctx, agentName("alice"), project, nil); err != nil {
		t.Fatal(err)
	}
	if ns := freeNotices(s, "bob", true); len(ns) != 2 {
		t.Fatalf("bob told %d free, want 2", len(ns))
	}
	r := f.service(old)
	ns := freeNotices(r, "bob", true)
	if len(ns) != 1 || ns[0].Paths[0] != "a.go" {
		t.Fatalf("after the restore bob told %+v, want a.go once more", ns)
	}
	if ns := freeNotices(f.service(old), "bob", true); len(ns) != 0 || old.watchKeys() != 0 {
		t.Fatalf("told again after another start: %+v (%d keys)", ns, old.watchKeys())
	}
}
