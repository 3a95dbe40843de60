package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// `parley connect` takes the ready line's addrs= as it is (several
// addresses of one node, separated by commas), as --bootstrap and contact
// request do; a bare peer ID is refused saying it is no address and where
// the addresses are found.
func TestCLIConnectTakesTheAddressListAndNamesAPeerIDNoAddress(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeB := filepath.Join(base, "a"), filepath.Join(base, "b")
	a := up(t, homeA, "--listen", loopback)
	up(t, homeB, "--listen", loopback)
	addr := a.addr()
	id := addr[strings.LastIndex(addr, "/")+1:]
	if _, errs, code := run(t, "--home", homeB, "connect", id); code == 0 || !strings.Contains(errs, "is a peer ID, not an address") || !strings.Contains(errs, "parley id") {
		t.Fatalf("connect to a peer ID: exit %d: %s", code, errs)
	}
	if _, errs, code := run(t, "--home", homeB, "connect", ","); code == 0 || !strings.Contains(errs, "holds no address") {
		t.Fatalf("connect to a comma: exit %d: %s", code, errs)
	}
	out, errs, code := run(t, "--home", homeB, "connect", addr+","+addr)
	if code != 0 || !strings.HasPrefix(out, "connected to "+id) {
		t.Fatalf("connect to a list of addresses: exit %d: %q %s", code, out, errs)
	}
}
