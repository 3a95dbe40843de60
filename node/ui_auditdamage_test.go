package node_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A damaged audit log (one line that does not parse, as a crash or a hand
// that edited it leaves) is said on the dashboard: its audit panel must not
// read as an empty log. The node's own reader refuses it
// (audit.ErrDamaged, "run `parley audit verify`"); the page is the user's
// view of that log, and an empty table there reads as "nothing happened".
func TestDashboardSaysTheAuditLogIsDamaged(t *testing.T) {
	nt := nodetest.Start(t, 1)
	base, tok := uiBase(t, nt, 0)
	path := filepath.Join(nt.Home(0), audit.FileName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("this line is not an audit entry\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
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
