package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// `contact request ADDR/p2p/ID` where another node answers at ADDR: the
// error is one line (as every CLI error is) that says the node there is
// another one, and does not tell the user to "give its address", which
// they did. It was three lines, the dial's list of failures and then a
// DHT lookup's, ending in that hint. Before, three lines; now one, naming
// the node that answers.
func TestCLIContactRequestWrongPeerAtAddress(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeB := filepath.Join(base, "a"), filepath.Join(base, "b")
	up(t, homeA, "--listen", loopback)
	b := up(t, homeB, "--listen", loopback)
	const other = "12D3KooWJ3TSm3XGPuCf7X5M2pkHBG8iMvwqvkYPoouxHDTWC6y4" // no node of this test
	addr := b.addr()
	wrong := addr[:strings.Index(addr, "/p2p/")] + "/p2p/" + other
	_, errs, code := run(t, "--home", homeA, "contact", "request", wrong)
	if code == 0 {
		t.Fatalf("contact request %s: exit 0", wrong)
	}
	if n := strings.Count(strings.TrimSpace(errs), "\n"); n != 0 || strings.Contains(errs, "give its address") || !strings.Contains(errs, "mismatch") {
		t.Fatalf("contact request to the wrong peer at an address: stderr of %d lines %q; want one line saying another node answers there, without `give its address`", n+1, errs)
	}
}
