package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// `parley connect` dials a peer; to a peer it is connected to already it
// dials nothing and says so, naming the connection it has, so a wrong
// address does not pass for a good one.
func TestCLIConnect(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeB := filepath.Join(base, "a"), filepath.Join(base, "b")
	a := up(t, homeA, "--listen", loopback)
	up(t, homeB, "--listen", loopback)
	addr := a.addr()
	out, errs, code := run(t, "--home", homeB, "connect", addr)
	if code != 0 || !strings.HasPrefix(out, "connected to ") {
		t.Fatalf("connect: exit %d: %q %s", code, out, errs)
	}
	wrong := regexp.MustCompile(`/tcp/\d+/`).ReplaceAllString(addr, "/tcp/9/")
	out, errs, code = run(t, "--home", homeB, "connect", wrong)
	if code != 0 || !strings.Contains(out, "already connected") || !strings.Contains(out, wrong+" was not dialled") {
		t.Fatalf("connect to a wrong port of a connected peer: exit %d: %q %s", code, out, errs)
	}
	if _, errs, code := run(t, "--home", homeB, "connect", "/ip4/127.0.0.1/tcp/9"); code == 0 || !strings.Contains(errs, "/p2p/") {
		t.Fatalf("connect without a peer ID: exit %d: %s", code, errs)
	}
}
