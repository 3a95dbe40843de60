package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// A --timeout that is not positive cannot be waited: the command is
// refused naming the flag, as `--ttl -1h` or `--for -10m` are, and never
// reads "the node did not answer within -5s" (the node was never given
// the chance), which sends the user looking at a healthy node. Before,
// the request ran with a spent deadline; now the value is refused.
func TestCLINegativeTimeoutRefused(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	for _, v := range []string{"-5s", "0"} {
		_, errs, code := run(t, "--home", home, "--timeout", v, "status")
		if code == 0 || strings.Contains(errs, "did not answer") || !strings.Contains(errs, "--timeout") {
			t.Errorf("--timeout %s status: exit %d, stderr %q; want a refusal of the value naming --timeout, not a node that did not answer", v, code, errs)
		}
	}
}

// `up --wake-limit` and `--hand-wait` take a duration the node waits: a
// value of 0 or below is refused before anything starts, as the other
// duration flags refuse one, not started on silently with the default in
// its place (the user believes the limit they gave is in force). Before,
// the node started with the default; now up refuses the value.
func TestCLIUpRefusesNonPositiveWaits(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for i, args := range [][]string{
		{"--wake-limit", "-1s"},
		{"--wake-limit", "0"},
		{"--hand-wait", "-1s"},
		{"--hand-wait", "0"},
		{"--handle", ""}, // before, taken as no flag: the old handle stayed, unsaid
	} {
		home := filepath.Join(base, string(rune('a'+i)))
		_, errs, code := run(t, append([]string{"--home", home, "up", "-d", "--loopback"}, args...)...)
		if code == 0 {
			run(t, "--home", home, "down")
			t.Errorf("up %v: exit 0 (the node started with the default in place of the value); stderr %q", args, errs)
			continue
		}
		if !strings.Contains(errs, args[0]) {
			t.Errorf("up %v: exit %d, stderr %q; want the refusal to name %s", args, code, errs, args[0])
		}
	}
}

// `audit --limit N` is the last N entries, 0 for all: a negative N is
// refused naming the flag, as `room log --limit 0` is, not read as "all".
// Before, it listed every entry; now it is refused.
func TestCLIAuditNegativeLimitRefused(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	if _, errs, code := run(t, "--home", home, "room", "create", "r1"); code != 0 {
		t.Fatalf("room create: %s", errs)
	}
	out, errs, code := run(t, "--home", home, "audit", "--limit", "-1")
	if code == 0 || !strings.Contains(errs, "--limit") {
		t.Fatalf("audit --limit -1: exit %d, stderr %q, stdout\n%s\nwant a refusal naming --limit", code, errs, out)
	}
}
