package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// TestCLIUpBootstrapTakesTheReadyLinesAddrs: a user gives --bootstrap the
// ready line's addrs= as it is, several addresses of one node separated by
// commas. Before, it was refused as one multiaddr with a parse error that
// did not say why; now each address is taken, as one peer to dial.
func TestCLIUpBootstrapTakesTheReadyLinesAddrs(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeB := filepath.Join(base, "a"), filepath.Join(base, "b")
	a := up(t, homeA, "--listen", loopback, "--listen", "/ip4/127.0.0.1/udp/0/quic-v1", "--handle", "alice")
	all := addrsRe.FindStringSubmatch(a.ready)[1]
	if !strings.Contains(all, ",") {
		t.Fatalf("A's ready line lists one address (%s): the test needs several", all)
	}
	up(t, homeB, "--listen", loopback, "--bootstrap", all, "--handle", "bob")
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		var peers []struct {
			PeerID string `json:"peer_id"`
		}
		runJSON(t, &peers, "--home", homeB, "peers")
		return len(peers) == 1
	}, "B to connect to A through the addresses it was given")
}
