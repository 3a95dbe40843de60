package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A home whose parley.sock would be too long for a unix socket can never
// run a node. `up` refuses it before it writes anything (README: flags are
// checked before anything is written, so a refused up creates no home):
// it left a new identity, config and database behind. And a command run
// on such a home says why it cannot reach a node, not the transport's
// "connect: invalid argument". Before, up wrote the home and then failed;
// now the socket path's length is checked first, and by every client.
func TestCLILongHomeRefusedBeforeWriting(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	home := filepath.Join(base, strings.Repeat("h", 110-len(base)))
	_, errs, code := run(t, "--home", home, "up", "--no-mdns", "--listen", loopback)
	if code == 0 || !strings.Contains(errs, "too long") {
		t.Fatalf("up on a home too long for its socket: exit %d, stderr %q", code, errs)
	}
	if ents, err := os.ReadDir(home); err == nil {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the refused up left a home behind: %s holds %v", home, names)
	}
	_, errs, code = run(t, "--home", home, "status")
	if code == 0 || strings.Contains(errs, "invalid argument") || !(strings.Contains(errs, "too long") || strings.Contains(errs, "no node is running")) {
		t.Errorf("status on a home too long for its socket: exit %d, stderr %q; want it to say the path is too long (or that no node runs)", code, errs)
	}
}
