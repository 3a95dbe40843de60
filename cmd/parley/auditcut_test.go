package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `parley audit` refuses a log whose entry was changed ("the audit log is
// damaged … run parley audit verify"), and so refuses one cut short at
// its end too: its signed head says how many entries the node wrote, and
// `audit verify` finds the cut. It listed the entries left, exit 0, as if
// the log were whole: the last decisions (a contact approved, a member
// invited) gone without a word. Before, it listed them, exit 0; now List
// compares the last entry with the head and refuses the log as damaged.
func TestCLIAuditListCutLog(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	d := up(t, home, "--listen", loopback)
	for _, name := range []string{"r1", "r2", "r3"} {
		if _, errs, code := run(t, "--home", home, "room", "create", name); code != 0 {
			t.Fatalf("room create %s: %s", name, errs)
		}
	}
	if _, errs, code := run(t, "--home", home, "down"); code != 0 {
		t.Fatalf("down: %s", errs)
	}
	select {
	case <-d.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the node did not stop")
	}
	path := filepath.Join(home, "audit.log")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
	if len(lines) < 3 {
		t.Fatalf("audit log of %d lines: %s", len(lines), raw)
	}
	cut := bytes.Join(lines[:len(lines)-1], nil) // the last entry taken away
	if err := os.WriteFile(path, cut, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := run(t, "--home", home, "audit", "verify"); code == 0 {
		t.Fatalf("audit verify of a cut log: exit 0, %q", errs)
	}
	out, errs, code := run(t, "--home", home, "audit")
	if code == 0 || !strings.Contains(errs, "damaged") {
		t.Fatalf("audit of a log cut short at its end: exit %d, stderr %q, listing\n%s\nwant it refused as a changed entry is", code, errs, out)
	}
}
