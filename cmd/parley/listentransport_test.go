package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `up --listen` with a multiaddr no transport of the node serves
// (/udp/0 without quic-v1, /tcp/0/ws, /ip4/127.0.0.1 alone) can never
// listen: up refuses the flag before it writes anything (README: flags are
// checked before anything is written, so a refused up creates no home),
// saying which transports it serves, not "is another program using the
// port?", which sends the user hunting for a program that is not there.
// Before, up wrote the home and blamed another program; now it checks the
// address against its transports first.
func TestCLIListenWithoutTransportRefusedUpFront(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for i, addr := range []string{"/ip4/127.0.0.1/udp/0", "/ip4/127.0.0.1/tcp/0/ws", "/ip4/127.0.0.1"} {
		home := filepath.Join(base, string(rune('a'+i)))
		_, errs, code := run(t, "--home", home, "up", "--no-mdns", "--listen", addr)
		if code == 0 {
			t.Errorf("up --listen %s: exit 0", addr)
			continue
		}
		if strings.Contains(errs, "another program using the port") {
			t.Errorf("up --listen %s: stderr %q blames another program for an address no transport serves", addr, errs)
		}
		if ents, err := os.ReadDir(home); err == nil {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("up --listen %s, refused, left a new home behind: %v", addr, names)
		}
	}
}
