package inbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/inbox"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// diskFloor is a real free-space floor for a node: a gibibyte under what
// the disk has free now, so the node starts writable and a file of 1.5 GiB
// takes the disk below it (fill), until the file goes (the returned func).
type diskFloor struct {
	dir   string
	floor int64
}

func newDiskFloor(t *testing.T) *diskFloor {
	t.Helper()
	dir := t.TempDir()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Skipf("statfs: %v", err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if free < 4<<30 {
		t.Skipf("%d bytes free: too few for a real floor", free)
	}
	return &diskFloor{dir: dir, floor: free - 1<<30}
}

// fill takes the disk of the test's folders below the floor; the returned
// func frees it again.
func (d *diskFloor) fill(t *testing.T) func() {
	t.Helper()
	path := filepath.Join(d.dir, "ballast")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, 3<<29); err != nil {
		f.Close()
		t.Skipf("fallocate: %v", err)
	}
	f.Close()
	freed := false
	free := func() {
		if !freed {
			freed = true
			os.Remove(path)
		}
	}
	t.Cleanup(free)
	return free
}

// TestReviewReadOnAFullDiskLosesMessages: an agent's parley_read while the
// disk is below the node's free-space floor fails (its read cursor cannot
// be saved), but the read cursor has moved in memory all the same: once the
// disk has room again, the messages that failed read are never shown, by a
// read or a take, until the node restarts. (Take keeps what it hands out,
// by design, see takeLocked; Read and Wait do not.)
func TestReviewReadOnAFullDiskLosesMessages(t *testing.T) {
	d := newDiskFloor(t)
	nt := start(t, 1, func(c *node.Config) { c.MinFreeDisk = d.floor })
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	beta := register(t, nt, 0, "beta")
	res, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "work", Members: []string{beta}})
	if err != nil {
		t.Fatal(err)
	}
	// alpha has seen the room's start.
	if _, err := ib(nt, 0).Read(ctx, "alpha", localapi.ReadRequest{Room: res.RoomID}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"one", "two", "three"} {
		if _, err := ib(nt, 0).Say(ctx, "beta", localapi.SayRequest{Room: res.RoomID, Text: s}); err != nil {
			t.Fatal(err)
		}
	}
	free := d.fill(t)
	r, err := ib(nt, 0).Read(ctx, "alpha", localapi.ReadRequest{Room: res.RoomID})
	if err == nil {
		t.Logf("read on a full disk did not fail (%d messages): nothing to show here", len(r.Messages))
		free()
		return
	}
	t.Logf("read on a full disk: %v", err)
	free()
	nodetest.WaitFor(t, 10*time.Second, func() bool {
		_, err := ib(nt, 0).Say(ctx, "beta", localapi.SayRequest{Room: res.RoomID, Text: "disk is back"})
		return err == nil
	}, "writes to be taken again")
	r, err = ib(nt, 0).Read(ctx, "alpha", localapi.ReadRequest{Room: res.RoomID})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range r.Messages {
		texts = append(texts, m.Text)
	}
	if len(texts) < 4 || texts[0] != "one" {
		t.Fatalf("after the disk has room again, alpha reads %q: the messages the failed read did not show (one, two, three) are lost until a restart", texts)
	}
}

// TestReviewWaitOnAFullDiskLosesItems: parley_wait (Wait with take) while the
// disk is below the floor hands the agent's items out in memory, then fails
// on saving that, so the agent gets an error and never sees them.
func TestReviewWaitOnAFullDiskLosesItems(t *testing.T) {
	d := newDiskFloor(t)
	nt := start(t, 1, func(c *node.Config) { c.MinFreeDisk = d.floor })
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	beta := register(t, nt, 0, "beta")
	res, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "work", Members: []string{beta}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ib(nt, 0).Take(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	if _, err := ib(nt, 0).Read(ctx, "alpha", localapi.ReadRequest{Room: res.RoomID}); err != nil {
		t.Fatal(err)
	}
	if _, err := ib(nt, 0).Say(ctx, "beta", localapi.SayRequest{Room: res.RoomID, Text: "look at this"}); err != nil {
		t.Fatal(err)
	}
	free := d.fill(t)
	p, err := ib(nt, 0).Wait(ctx, "alpha", localapi.WaitRequest{Seconds: 1, Take: true})
	if err == nil {
		t.Logf("wait on a full disk did not fail (%d items): nothing to show here", len(p.Items))
		free()
		return
	}
	t.Logf("wait on a full disk: %v (the local API answers only this error)", err)
	free()
	var got []string
	nodetest.WaitFor(t, 10*time.Second, func() bool {
		p, err := ib(nt, 0).Take(ctx, "alpha")
		if err != nil {
			return false
		}
		for _, it := range p.Items {
			got = append(got, it.Text)
		}
		return true
	}, "a take once the disk has room")
	r, err := ib(nt, 0).Read(ctx, "alpha", localapi.ReadRequest{Room: res.RoomID})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range r.Messages {
		got = append(got, m.Text)
	}
	for _, s := range got {
		if s == "look at this" {
			return
		}
	}
	t.Fatalf("after the disk has room again alpha's take and read show %q: the message the failed wait handed out is lost until a restart", got)
}

// TestReviewCallsForUnknownAgentsAreKeptForGood: a call of the local API
// for an agent name no agent holds (a peek, a take, a wait: a typo, a
// script that loops over names, an agent that renames itself each run)
// leaves that name's state in the inbox's memory for good: it is never
// dropped, unregistered or not.
func TestReviewCallsForUnknownAgentsAreKeptForGood(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	const n = 5000
	for i := range n {
		if _, err := ib(nt, 0).Peek(ctx, fmt.Sprintf("nobody-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := inbox.States(ib(nt, 0)); got >= n {
		t.Fatalf("after peeks for %d names no agent holds, the inbox keeps %d agents' states in memory", n, got)
	}
}

// TestReviewOwedAsksHoldTheirTextsInMemory: a member of a room asks the
// room (no addressee: every member agent owes it) over and over, each ask
// of the largest text an event carries. Each local agent in the room holds
// every such ask, text and all, in its in-memory state (state.owed) and in
// a store record of its own, for an hour (AskTTL), however many there are:
// the node's memory grows with what a remote member posts, once per local
// agent in the room.
func TestReviewOwedAsksHoldTheirTextsInMemory(t *testing.T) {
	nt := start(t, 2)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	beta := register(t, nt, 0, "beta")
	mallory := register(t, nt, 1, "mallory")
	res, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "work", Members: []string{beta, mallory}})
	if err != nil || len(res.Failed) != 0 {
		t.Fatalf("open: %+v %v", res, err)
	}
	nt.WaitFor(30*time.Second, func() bool {
		_, err := ib(nt, 1).Get(ctx, res.RoomID)
		return err == nil
	}, "node 1 to hold the room")
	text := strings.Repeat("x", 60<<10)
	const n = 64
	for i := range n {
		if _, err := ib(nt, 1).Ask(ctx, "mallory", localapi.AskRequest{Room: res.RoomID, Text: fmt.Sprintf("%d %s", i, text)}); err != nil {
			t.Fatalf("ask %d: %v", i, err)
		}
	}
	total := 0
	for _, a := range []string{"alpha", "beta"} {
		nt.WaitFor(30*time.Second, func() bool {
			if _, err := ib(nt, 0).Peek(ctx, a); err != nil {
				t.Fatal(err)
			}
			k, _ := inbox.OwedTextBytes(ib(nt, 0), a)
			return k == n
		}, "%s to owe the %d asks", a, n)
		_, held := inbox.OwedTextBytes(ib(nt, 0), a)
		total += held
	}
	t.Logf("alpha and beta hold %d bytes of ask texts in memory", total)
	if total > 1<<20 {
		t.Fatalf("after %d asks of a remote member, node 0's inbox holds %.1f MiB of their texts in memory (a copy per local agent in the room), for an hour, with no bound on their number", n, float64(total)/(1<<20))
	}
}

// TestReviewDismissOnAFullDiskFailsYetDismisses: a dismiss while the disk
// is below the floor answers an error, yet the ask is dropped in memory:
// the agent, told it failed, tries again and is told it owes no such ask;
// after a restart the ask is owed again.
func TestReviewDismissOnAFullDiskFailsYetDismisses(t *testing.T) {
	d := newDiskFloor(t)
	nt := start(t, 1, func(c *node.Config) { c.MinFreeDisk = d.floor })
	ctx := context.Background()
	alpha := register(t, nt, 0, "alpha")
	register(t, nt, 0, "beta")
	res, err := ib(nt, 0).OpenRoom(ctx, "beta", localapi.OpenRoomRequest{Name: "work", Members: []string{alpha}})
	if err != nil {
		t.Fatal(err)
	}
	ask, err := ib(nt, 0).Ask(ctx, "beta", localapi.AskRequest{Room: res.RoomID, To: alpha, Text: "please review"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ib(nt, 0).Take(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	free := d.fill(t)
	_, err = ib(nt, 0).Dismiss(ctx, "alpha", localapi.DismissRequest{AskID: ask.AskID})
	if err == nil {
		t.Log("the dismiss on a full disk did not fail: nothing to show here")
		return
	}
	t.Logf("dismiss on a full disk: %v", err)
	free()
	owed, err := ib(nt, 0).Owed(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if len(owed) != 1 {
		t.Fatalf("the dismiss failed, yet alpha owes %d asks: the ask was dropped in memory (a restart brings it back)", len(owed))
	}
}
