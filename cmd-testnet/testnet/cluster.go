package testnet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// entry is one event of a room log, as the scenarios compare them.
type entry struct {
	ID     string
	Text   string
	Author string // the author node's peer ID
	Seq    uint64 // the author's seq
}

// cluster is a set of nodes the scenarios drive, whatever runs them.
// Methods taking a node index fail if that node is not running.
type cluster interface {
	Len() int
	Running(i int) bool
	// PeerID is node i's peer ID, running or not.
	PeerID(i int) string
	// OpenRoom creates a room on node 0, invites every other running node
	// and waits until each one knows it is a member.
	OpenRoom(ctx context.Context, name string) (string, error)
	// OpenRoomOf creates a room on node creator, invites the listed
	// members and waits until each one knows it is a member.
	OpenRoomOf(ctx context.Context, name string, creator int, members []int) (string, error)
	// CreateRoom creates a room on node i alone.
	CreateRoom(ctx context.Context, i int, name string) (string, error)
	Say(ctx context.Context, i int, room, text string) error
	// Subscribe calls fn with the text of every event node i stores from
	// now on, until stop is called or the node stops. fn runs on one
	// goroutine per subscription.
	Subscribe(i int, room string, fn func(text string, at time.Time)) (stop func(), err error)
	Count(ctx context.Context, i int, room string) (uint64, error)
	// VV returns node i's version vector of room: for each author node
	// (peer ID), the highest seq it holds, with every seq below it.
	VV(ctx context.Context, i int, room string) (map[string]uint64, error)
	// Log returns node i's whole log of room in display order.
	Log(ctx context.Context, i int, room string) ([]entry, error)
	// Tail returns node i's last n events of room.
	Tail(ctx context.Context, i int, room string, n int) ([]entry, error)
	Crash(i int) error
	// Restart reopens a crashed node from its home.
	Restart(ctx context.Context, i int) error
	// Partition splits the nodes into groups that cannot reach each other;
	// Heal joins them again.
	Partition(groups ...[]int) error
	Heal(ctx context.Context) error
	Close() error
}

// discoverer is a cluster whose nodes' DHTs the discovery scenario can use.
type discoverer interface {
	// Provide announces key from node i; Find looks it up from node j and
	// reports whether node i was found as a provider.
	Provide(ctx context.Context, i int, key string) error
	Find(ctx context.Context, j int, key string, provider int) (bool, error)
	// Lookup walks the DHT from node j towards key (GetClosestPeers) and
	// returns how many peers it found.
	Lookup(ctx context.Context, j int, key string) (int, error)
	// RoutingTable is the size of node i's DHT routing table.
	RoutingTable(i int) int
}

// tb lets node/nodetest run outside of tests: Fatalf panics with a
// fatalError that the calling method recovers into an error.
type tb struct {
	dir     string
	logf    func(format string, args ...any)
	mu      sync.Mutex // protects cleanup, n
	cleanup []func()
	n       int
}

type fatalError struct{ msg string }

func (e fatalError) Error() string { return e.msg }

func newTB(dir string, logf func(string, ...any)) *tb { return &tb{dir: dir, logf: logf} }

func (t *tb) Helper() {}

func (t *tb) Fatalf(format string, args ...any) { panic(fatalError{fmt.Sprintf(format, args...)}) }

func (t *tb) Logf(format string, args ...any) {
	if t.logf != nil {
		t.logf(format, args...)
	}
}

func (t *tb) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanup = append(t.cleanup, f)
}

func (t *tb) TempDir() string {
	t.mu.Lock()
	t.n++
	d := filepath.Join(t.dir, fmt.Sprintf("tmp%03d", t.n))
	t.mu.Unlock()
	if err := os.MkdirAll(d, 0o700); err != nil {
		panic(fatalError{fmt.Sprintf("testnet: %v", err)})
	}
	return d
}

// close runs the cleanups, last registered first.
func (t *tb) close() {
	t.mu.Lock()
	fs := t.cleanup
	t.cleanup = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// catch turns a fatalError panic into *err.
func catch(err *error) {
	if r := recover(); r != nil {
		fe, ok := r.(fatalError)
		if !ok {
			panic(r)
		}
		*err = fe
	}
}
