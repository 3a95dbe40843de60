package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `parley audit` shows each detail as key=value; a value is text others
// choose (a room's name, a stranger's contact note or handle) and may hold
// spaces and "=", so it could show a key the entry does not have: a room
// named `team expires=2099-01-01T00:00:00Z` listed as an entry with an
// expiry. Before, values were joined as they are; now a value that holds a
// space, "=", a quote or nothing is quoted.
func TestCLIAuditDetailValuesForgeNoKeys(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	d := up(t, home, "--listen", loopback)
	defer func() {
		run(t, "--home", home, "down")
		select {
		case <-d.done:
		case <-time.After(20 * time.Second):
			t.Error("the node did not stop")
		}
	}()
	name := "team expires=2099-01-01T00:00:00Z"
	if _, errs, code := run(t, "--home", home, "room", "create", name); code != 0 {
		t.Fatalf("room create: %s", errs)
	}
	out, errs, code := run(t, "--home", home, "audit")
	if code != 0 {
		t.Fatalf("audit: exit %d, %s", code, errs)
	}
	if !strings.Contains(out, "room.create") {
		t.Fatalf("no room.create in the listing:\n%s", out)
	}
	if strings.Contains(out, "name=team ") || !strings.Contains(out, `name="team expires=2099-01-01T00:00:00Z"`) {
		t.Fatalf("a room's name shows as a detail key of its own:\n%s", out)
	}
}
