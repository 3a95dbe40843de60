package audit

import (
	"os"
	"testing"
	"time"
)

// TestReviewListOfTheLastEntriesReadsTheWholeLog: the dashboard lists the
// audit log's last 50 entries once a second for each open page
// (node.uiPanels, auditShown), and List parses and verifies the signature
// of every line of the log to give them, so its cost grows with the log
// without bound. Other nodes add to it: each member of a room records up
// to RoomAudits (20) lines a minute about third nodes (28,800 a day), and
// strangers' contact requests and held invites add theirs.
func TestReviewListOfTheLastEntriesReadsTheWholeLog(t *testing.T) {
	dir := t.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "parley-audit-")
		if err == nil {
			dir = d
			t.Cleanup(func() { os.RemoveAll(d) })
		}
	}
	l, _ := newLog(t, dir)
	const n = 30000 // about a day of one member's decisions at RoomAudits
	appendN(t, l, n)
	start := time.Now()
	es, err := List(dir, time.Time{}, 50)
	took := time.Since(start)
	if err != nil || len(es) != 50 {
		t.Fatalf("list: %d entries, %v", len(es), err)
	}
	t.Logf("the last 50 of %d entries listed in %v", n, took)
	if took > 100*time.Millisecond {
		t.Fatalf("listing the last 50 of %d entries took %v: the dashboard does this every second per open page", n, took)
	}
}
