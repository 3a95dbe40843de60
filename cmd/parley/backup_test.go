package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// `parley backup` copies a running node (key, config, audit log, database)
// into one file of mode 0600, and `parley restore` makes a new home of it:
// the node starts there with its identity and the room as it was at the
// backup. A restore never writes into a home that holds anything, and a
// backup cut short is refused, leaving nothing behind.
func TestCLIBackupAndRestore(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	home := filepath.Join(base, "h")
	d := up(t, home, "--listen", loopback)
	id := peerID(t, home)
	var r struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &r, "--home", home, "room", "create", "notes")
	if _, errs, code := run(t, "--home", home, "room", "say", r.RoomID, "in the backup"); code != 0 {
		t.Fatalf("say: %s", errs)
	}
	file := filepath.Join(base, "node.backup")
	out, errs, code := run(t, "--home", home, "backup", file)
	if code != 0 || !strings.Contains(out, "private key") {
		t.Fatalf("backup: exit %d, %q %q", code, out, errs)
	}
	if st, err := os.Stat(file); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the backup file: %v, mode %v; want 0600", err, st.Mode())
	}
	if _, errs, code := run(t, "--home", home, "backup", file); code == 0 || !strings.Contains(errs, "--force") {
		t.Fatalf("a backup over an existing file: exit %d, %q", code, errs)
	}
	if _, errs, code := run(t, "--home", home, "room", "say", r.RoomID, "after the backup"); code != 0 {
		t.Fatalf("say: %s", errs)
	}

	// Into the running node's home: refused. And into its home once the
	// node is stopped: refused, nothing changed (while it runs, the node
	// writes its own files whenever it likes: recovery.json, the journal).
	if _, errs, code := run(t, "--home", home, "restore", file); code == 0 || !strings.Contains(errs, "not empty") {
		t.Fatalf("restore into a home that holds a running node: exit %d, %q", code, errs)
	}
	stop(t, home, d)
	before := files(t, home)
	if _, errs, code := run(t, "--home", home, "restore", file); code == 0 || !strings.Contains(errs, "not empty") {
		t.Fatalf("restore into a home that holds a node: exit %d, %q", code, errs)
	}
	if after := files(t, home); !slices.Equal(before, after) {
		t.Fatalf("the refused restore changed the home:\nbefore %v\nafter  %v", before, after)
	}

	// A backup cut short: refused, and no home (nor part of one) is left.
	raw, err := os.ReadFile(file)
	must(t, err)
	short := filepath.Join(base, "short.backup")
	must(t, os.WriteFile(short, raw[:len(raw)/2], 0o600))
	cut := filepath.Join(base, "cut")
	if _, errs, code := run(t, "--home", cut, "restore", short); code == 0 || !strings.Contains(errs, "not a whole Parley backup") {
		t.Fatalf("restore of a backup cut short: exit %d, %q", code, errs)
	}
	if left, _ := filepath.Glob(filepath.Join(base, "cut*")); len(left) != 0 {
		t.Fatalf("a failed restore left %v", left)
	}

	// Into a new home: the node as it was at the backup.
	home2 := filepath.Join(base, "restored")
	out, errs, code = run(t, "--home", home2, "restore", file)
	if code != 0 || !strings.Contains(out, id) {
		t.Fatalf("restore: exit %d, %q %q", code, out, errs)
	}
	// Mutes and kills are rules in the store: those made since the copy
	// are gone, and nothing else keeps them (the audit log ends at the
	// copy too), so the user is told to make them again.
	if !strings.Contains(out, "muted or killed since") {
		t.Fatalf("restore does not say that mutes and kills since the copy are forgotten: %q", out)
	}
	for _, name := range []string{"identity.key", "config", "audit.log"} {
		if st, err := os.Stat(filepath.Join(home2, name)); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("restored %s: %v; want mode 0600", name, err)
		}
	}
	up(t, home2, "--listen", loopback)
	if got := peerID(t, home2); got != id {
		t.Fatalf("the restored node is %s, want %s", got, id)
	}
	if !logHas(t, home2, r.RoomID, "in the backup") {
		t.Fatal("the restored room lacks the message posted before the backup")
	}
	if logHas(t, home2, r.RoomID, "after the backup") {
		t.Fatal("the restored room holds a message posted after the backup")
	}
	if out, errs, code := run(t, "--home", home2, "audit", "verify"); code != 0 || !strings.Contains(out, "chain intact") {
		t.Fatalf("audit verify of the restored home: exit %d, %q %q", code, out, errs)
	}
	if _, errs, code := run(t, "--home", home2, "room", "say", r.RoomID, "from the restored node"); code != 0 {
		t.Fatalf("say on the restored node: %s", errs)
	}
}

// A backup of a node that last ran with --loopback (reachable from this
// machine only) restores a home that is started so too: restore's and
// status's hints say --loopback. Found in a README walk-through: the
// restored home said `up`, which listens on every interface, announces
// the node over mDNS and asks the router for a port.
func TestCLIRestoreOfALoopbackNodeStartsItOnLoopback(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	home := filepath.Join(base, "h")
	d := up(t, home, "--loopback")
	file := filepath.Join(base, "node.backup")
	if _, errs, code := run(t, "--home", home, "backup", file); code != 0 {
		t.Fatalf("backup: %s", errs)
	}
	stop(t, home, d)
	home2 := filepath.Join(base, "restored")
	out, errs, code := run(t, "--home", home2, "restore", file)
	if code != 0 || !strings.Contains(out, "Start it with: parley --home "+home2+" up --loopback\n") {
		t.Fatalf("restore: exit %d, %q %q", code, out, errs)
	}
	if _, errs, _ := run(t, "--home", home2, "status"); !strings.Contains(errs, "--loopback") {
		t.Fatalf("status of the restored home, no node running: %q, want a hint with --loopback", errs)
	}
	up(t, home2, "--loopback")
	var st struct {
		Addrs []string `json:"addrs"`
	}
	runJSON(t, &st, "--home", home2, "status")
	if len(st.Addrs) == 0 {
		t.Fatal("the restored node's status names no address")
	}
	for _, a := range st.Addrs {
		if !strings.HasPrefix(a, "/ip4/127.0.0.1/") {
			t.Fatalf("the restored node listens on %s", a)
		}
	}
}
