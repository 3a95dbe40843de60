package main

import (
	"strings"
	"testing"
)

// TestClaimRightAfterRestartWithTheBoardOffline: a node restarted while
// the other member of its board room is down claims a path at once. The
// room's first post after a start waits up to 10 s for the node's own
// events and then goes ahead (README, "When the node will not start"); the
// claim is made, so the command says so and exits 0. Found in a README
// walk-through: it exited 1 after 10 s saying "the node did not answer
// within 30s", though the board then showed the claim: localapi's
// Client.Claim gave the call a deadline of its wait + 10 s (blocking,
// internal/localapi/edge.go), shorter than the CLI's --timeout, which the
// node's start-up wait for its own events (10 s) and the post exceed.
func TestClaimRightAfterRestartWithTheBoardOffline(t *testing.T) {
	t.Parallel()
	repoA, _, homeA, homeB := boardPair(t)
	if _, errs, code := runIn(t, repoA, "--home", homeA, "claim", "src/a.go", "--note", "first"); code != 0 {
		t.Fatalf("claim on A: %s", errs)
	}
	if _, errs, code := runIn(t, repoA, "--home", homeA, "release", "src/a.go"); code != 0 {
		t.Fatalf("release on A: %s", errs)
	}
	for _, h := range []string{homeB, homeA} {
		if _, errs, code := run(t, "--home", h, "down"); code != 0 {
			t.Fatalf("down %s: %s", h, errs)
		}
	}
	up(t, homeA, "--listen", loopback)
	out, errs, code := runIn(t, repoA, "--home", homeA, "claim", "src/a.go", "--note", "after the restart")
	if code != 0 || strings.Contains(errs, "did not answer within") {
		board, _, _ := runIn(t, repoA, "--home", homeA, "board")
		t.Fatalf("claim right after the restart: exit %d, stdout %q, stderr %q; the board then:\n%s", code, out, errs, board)
	}
}
