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
// walk-through: it exits 1 after 10 s saying "the node did not answer
// within 30s", though the board then shows the claim. The cause:
// localapi's Client.Claim gives the call a deadline of its wait + 10 s
// (blocking, internal/localapi/edge.go), which the node's start-up wait for
// its own events (rooms.Config.OwnEventsWait, 10 s) and the post exceed; and
// the CLI's timedOut names --timeout (30s), not the deadline that ended it.
func TestClaimRightAfterRestartWithTheBoardOffline(t *testing.T) {
	t.Skip("known bug: the first claim after a restart with the board's other member offline fails after 10 s as a 30 s timeout, though it is made (see the test's comment)")
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
