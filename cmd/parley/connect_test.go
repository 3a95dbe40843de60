package main

import (
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/node/nodetest"
	"time"
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

// A --loopback node takes the ports it had again when they are free, so
// two loopback nodes that both restarted find each other at the addresses
// they remember; a port taken meanwhile gives way to one the system
// chooses.
func TestLoopbackKeepsItsPorts(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	first := up(t, home, "--loopback")
	tcp := func(d *daemon) string {
		m := regexp.MustCompile(`/ip4/127\.0\.0\.1/tcp/(\d+)/`).FindStringSubmatch(d.ready)
		if m == nil {
			t.Fatalf("no loopback TCP address in %q", d.ready)
		}
		return m[1]
	}
	port := tcp(first)
	if _, errs, code := run(t, "--home", home, "down"); code != 0 {
		t.Fatal(errs)
	}
	free := func() bool {
		ln, err := net.Listen("tcp4", "127.0.0.1:"+port)
		if err == nil {
			ln.Close()
		}
		return err == nil
	}
	nodetest.WaitFor(t, 15*time.Second, free, "the node's port to be free")
	if again := tcp(up(t, home, "--loopback")); again != port {
		t.Fatalf("after a restart the node listens on TCP %s, not %s", again, port)
	}
	if _, errs, code := run(t, "--home", home, "down"); code != 0 {
		t.Fatal(errs)
	}
	// The port is taken meanwhile: the node starts on another.
	nodetest.WaitFor(t, 15*time.Second, free, "the node's port to be free")
	ln, err := net.Listen("tcp4", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if other := tcp(up(t, home, "--loopback")); other == port {
		t.Fatalf("the node listens on TCP %s, which another program holds", port)
	}
}
