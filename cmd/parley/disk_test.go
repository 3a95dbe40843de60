//go:build linux

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fillDisk writes a file of zeros in dir until the disk has at most leave
// bytes free (leave 0: until it is full).
func fillDisk(t *testing.T, dir, name string, leave int64) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			t.Fatal(err)
		}
		free := int64(st.Bavail) * int64(st.Bsize)
		if free <= leave {
			return
		}
		n := min(int64(len(buf)), free-leave)
		if _, err := f.Write(buf[:n]); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}

// A node whose home sits on a small disk never crashes when the disk
// fills: below the floor it refuses writes with a clear error and keeps
// serving reads, it stops and starts again while the disk is full, and
// writes resume once space is freed. (Badger maps its logs over sparse
// files; without the floor and the reserve the node died with SIGBUS.)
func TestCLIFullDiskRefusesWritesKeepsReads(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a 20 MB tmpfs (mount -t tmpfs -o size=20m); the floor itself is tested in internal/store")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s); the floor itself is tested in internal/store", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", mnt, err, out)
		}
	})
	home := filepath.Join(mnt, "home")
	const floor = "4MiB"
	d := up(t, home, "--listen", loopback, "--min-free-disk", floor)
	var room struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &room, "--home", home, "room", "create", "disk")
	text := strings.Repeat("x", 8000)
	say := func() (string, int) {
		_, errs, code := run(t, "--home", home, "room", "say", room.RoomID, text)
		return errs, code
	}
	for range 3 {
		if errs, code := say(); code != 0 {
			t.Fatalf("say on an empty disk: %s", errs)
		}
	}
	refused := func(errs string, code int) bool {
		return code != 0 && strings.Contains(errs, "disk nearly full") && strings.Contains(errs, "free some space") &&
			strings.Count(strings.TrimSpace(errs), "\n") == 0
	}

	// Leave the node a little more than its floor: its own says cross it.
	fillDisk(t, mnt, "filler1", 4<<20+100<<10)
	n := 0
	for ; n < 200; n++ {
		errs, code := say()
		if code == 0 {
			continue
		}
		if !refused(errs, code) {
			t.Fatalf("say %d near the floor failed without saying the disk is full: %s", n, errs)
		}
		break
	}
	if n == 0 || n == 200 {
		t.Fatalf("%d says taken before the floor", n)
	}
	// Another program takes the rest of the disk.
	fillDisk(t, mnt, "filler2", 0)
	if errs, code := say(); !refused(errs, code) {
		t.Fatalf("say on a full disk: exit %d: %s", code, errs)
	}
	out, errs, code := run(t, "--home", home, "status")
	if code != 0 {
		t.Fatalf("the node is gone after the disk filled: %s\n%s", errs, d.stderr)
	}
	if !strings.Contains(out, "STORE REFUSING WRITES") || !strings.Contains(out, "free some space") {
		t.Fatalf("status on a full disk does not say writes are refused:\n%s", out)
	}
	if got := len(roomLog(t, home, room.RoomID)); got != 1+3+n {
		t.Fatalf("log on a full disk: %d events, want %d", got, 1+3+n)
	}
	stop(t, home, d)
	if strings.Contains(d.stderr.String(), "SIGBUS") {
		t.Fatalf("the node crashed stopping on a full disk:\n%s", d.stderr)
	}

	// Restart while the disk is full: reads work, writes are refused.
	d = up(t, home, "--listen", loopback, "--min-free-disk", floor)
	if got := len(roomLog(t, home, room.RoomID)); got != 1+3+n {
		t.Fatalf("log after a restart on a full disk: %d events, want %d", got, 1+3+n)
	}
	if errs, code := say(); !refused(errs, code) {
		t.Fatalf("say after a restart on a full disk: exit %d: %s", code, errs)
	}
	must(t, os.Remove(filepath.Join(mnt, "filler1")))
	must(t, os.Remove(filepath.Join(mnt, "filler2")))
	if errs, code := say(); code != 0 {
		t.Fatalf("say once space is freed: %s", errs)
	}
	if out, _, _ := run(t, "--home", home, "status"); strings.Contains(out, "REFUSING") {
		t.Fatalf("status once space is freed still says writes are refused:\n%s", out)
	}
	stop(t, home, d)
	if strings.Contains(d.stderr.String(), "SIGBUS") {
		t.Fatalf("the node crashed:\n%s", d.stderr)
	}
}

// TestCLIInboxOnAFullDisk: the human takes its inbox while the disk is
// below the floor. The take cannot save what it handed out, and hands it
// out all the same: before, the take failed, and every later one saw the
// ask as handed out and showed a reminder only, until a restart.
func TestCLIInboxOnAFullDisk(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a 20 MB tmpfs (mount -t tmpfs -o size=20m)")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", mnt, err, out)
		}
	})
	home := filepath.Join(mnt, "home")
	up(t, home, "--listen", loopback, "--min-free-disk", "4MiB")
	if _, errs, code := run(t, "--home", home, "agent", "register", "bot"); code != 0 {
		t.Fatalf("register: %s", errs)
	}
	if _, errs, code := run(t, "--home", home, "room", "create", "disk", "--member", "bot"); code != 0 {
		t.Fatalf("room create: %s", errs)
	}
	if _, errs, code := run(t, "--home", home, "room", "ask", "disk", "may I drop the old API?", "--as", "bot", "--to", "human", "--wait", "0s"); code != 0 {
		t.Fatalf("the ask: %s", errs)
	}
	fillDisk(t, mnt, "filler", 2<<20)
	out, errs, code := run(t, "--home", home, "inbox", "--take")
	if code != 0 || !strings.Contains(out, "may I drop the old API?") {
		t.Fatalf("the take on a full disk: exit %d\n%s%s", code, out, errs)
	}
	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	// The ask is still owed: it is listed until answered.
	if out, _, _ := run(t, "--home", home, "inbox"); !strings.Contains(out, "may I drop the old API?") {
		t.Fatalf("the inbox after the disk was freed:\n%s", out)
	}
}
