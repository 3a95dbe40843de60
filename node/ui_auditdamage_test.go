package node_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A damaged audit log (one line that does not parse, as a crash or a hand
// that edited it leaves) is said on the dashboard: its audit panel must not
// read as an empty log. The node's own reader refuses it
// (audit.ErrDamaged, "run `parley audit verify`"); the page is the user's
// view of that log, and an empty table there reads as "nothing happened".
// Before, the audit panel was an empty list; now it is {"entries":[],
// "error":"… run `parley audit verify`"}, and the page shows the error in
// red (TestDashboardShowsTheDamagedAuditLogInRed).
func TestDashboardSaysTheAuditLogIsDamaged(t *testing.T) {
	nt := nodetest.Start(t, 1)
	base, tok := uiBase(t, nt, 0)
	damageAuditLog(t, nt.Home(0))
	if _, err := audit.List(nt.Home(0), time.Time{}, 50); err == nil {
		t.Fatal("the audit log reads whole after a bad line: the test damaged nothing")
	}
	code, body := uiDo(t, http.MethodGet, base+"/ui/state", tok, nil, "")
	if code != http.StatusOK {
		t.Fatalf("GET /ui/state: %d %s", code, body)
	}
	if !strings.Contains(body, "audit verify") && !strings.Contains(strings.ToLower(body), "damaged") {
		t.Fatalf("the dashboard's panels say nothing of the damaged audit log (its audit panel reads as an empty log):\n%.2000s", body)
	}
}

// damageAuditLog appends a line that is no audit entry to home's audit log.
func damageAuditLog(t *testing.T, home string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(home, audit.FileName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("this line is not an audit entry\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// countWarns is a slog handler that counts the records whose message is msg.
type countWarns struct {
	msg string
	n   *atomic.Int64
}

func (h countWarns) Enabled(context.Context, slog.Level) bool { return true }
func (h countWarns) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	return nil
}
func (h countWarns) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countWarns) WithGroup(string) slog.Handler      { return h }

// A damaged audit log is logged once, not once a second for each open
// page: uiPanels reads the audit log at every panel tick of every stream
// and warns each time it fails, so one open tab writes a line to the
// node's log every second for as long as the log stays damaged. Before, it
// warned at every read; now it warns when the failure begins or changes
// (warnOnce, shared by every page of the node).
func TestDashboardDamagedAuditLogIsLoggedOnce(t *testing.T) {
	var warns atomic.Int64
	nt := nodetest.Start(t, 1, nodetest.WithConfig(func(_ int, c *node.Config) {
		c.Logger = slog.New(countWarns{msg: "dashboard: audit log", n: &warns})
	}))
	base, tok := uiBase(t, nt, 0)
	damageAuditLog(t, nt.Home(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	uiStream(ctx, t, base, tok, 1024) // one open page
	// One open page for up to 6 s: a warning a second would give 5 or more.
	if nodetest.Poll(6*time.Second, func() bool { return warns.Load() >= 4 }) {
		t.Fatalf("one open page logged %q %d times within 6 s: once a second, for as long as the audit log stays damaged", "dashboard: audit log", warns.Load())
	}
}
