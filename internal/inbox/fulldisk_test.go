package inbox_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

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

// TestReadOnAFullDiskKeepsMessages checks that parley_read while the disk
// is below the node's free-space floor, so that the read cursor cannot be
// saved, still answers with the unread messages rather than an error: the
// read cursor moves in memory, so an error would have lost them until a
// restart. Once the disk has room again they are not shown a second time.
func TestReadOnAFullDiskKeepsMessages(t *testing.T) {
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
	if _, err := ib(nt, 0).Say(ctx, "beta", localapi.SayRequest{Room: res.RoomID, Text: "refused"}); err == nil {
		t.Fatal("a say on a full disk was taken: the disk is not below the floor")
	}
	r, err := ib(nt, 0).Read(ctx, "alpha", localapi.ReadRequest{Room: res.RoomID})
	if err != nil {
		t.Fatalf("read on a full disk: %v (the messages it marked read are lost until a restart)", err)
	}
	if got := texts(r.Messages); len(got) != 3 || got[0] != "one" || got[2] != "three" {
		t.Fatalf("read on a full disk shows %q, want one, two, three", got)
	}
	free()
	nodetest.WaitFor(t, 10*time.Second, func() bool {
		_, err := ib(nt, 0).Say(ctx, "beta", localapi.SayRequest{Room: res.RoomID, Text: "disk is back"})
		return err == nil
	}, "writes to be taken again")
	r, err = ib(nt, 0).Read(ctx, "alpha", localapi.ReadRequest{Room: res.RoomID})
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(r.Messages); len(got) != 1 || got[0] != "disk is back" {
		t.Fatalf("after the disk has room again alpha reads %q, want only the new message", got)
	}
}

// TestWaitOnAFullDiskHandsOutItems checks that parley_wait with take while
// the disk is below the floor answers with the items it hands out (marked
// handed out in memory) rather than failing on saving that: an error
// there left the agent with nothing, and later takes and reads saw the
// items as handed out.
func TestWaitOnAFullDiskHandsOutItems(t *testing.T) {
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
	d.fill(t)
	if _, err := ib(nt, 0).Say(ctx, "beta", localapi.SayRequest{Room: res.RoomID, Text: "refused"}); err == nil {
		t.Fatal("a say on a full disk was taken: the disk is not below the floor")
	}
	p, err := ib(nt, 0).Wait(ctx, "alpha", localapi.WaitRequest{Seconds: 1, Take: true})
	if err != nil {
		t.Fatalf("wait on a full disk: %v (the items it handed out are lost until a restart)", err)
	}
	if got := texts(p.Items); len(got) != 1 || got[0] != "look at this" {
		t.Fatalf("wait on a full disk hands out %q, want the message", got)
	}
}

// TestDismissOnAFullDiskKeepsTheAsk checks that a dismiss while the disk is
// below the floor, which answers an error, leaves the ask owed in memory
// too: once the disk has room the agent still owes it, and a second
// dismiss takes. (It was dropped in memory, so the agent, told the dismiss
// failed, was told on trying again that it owed no such ask.)
func TestDismissOnAFullDiskKeepsTheAsk(t *testing.T) {
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
	if _, err := ib(nt, 0).Dismiss(ctx, "alpha", localapi.DismissRequest{AskID: ask.AskID}); err == nil {
		t.Fatal("a dismiss on a full disk did not fail: the disk is not below the floor")
	}
	free()
	owed, err := ib(nt, 0).Owed(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if len(owed) != 1 || owed[0].ID != ask.AskID {
		t.Fatalf("the dismiss failed, yet alpha owes %d asks: the ask was dropped in memory", len(owed))
	}
	nodetest.WaitFor(t, 10*time.Second, func() bool {
		_, err := ib(nt, 0).Dismiss(ctx, "alpha", localapi.DismissRequest{AskID: ask.AskID})
		return err == nil
	}, "a dismiss once the disk has room")
	if owed, err := ib(nt, 0).Owed(ctx, "alpha"); err != nil || len(owed) != 0 {
		t.Fatalf("after the dismiss alpha owes %d asks (%v)", len(owed), err)
	}
}

// texts lists the items' texts.
func texts(items []localapi.Item) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.Text)
	}
	return out
}
