package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// The page shows a damaged audit log's error in red above the audit table
// (the panel's error, #audit-error). Before, the panel was a bare list and
// the page drew an empty table; now it reads the panel's entries and says
// why there are none.
func TestDashboardShowsTheDamagedAuditLogInRed(t *testing.T) {
	nt := nodetest.Start(t, 1)
	damageAuditLog(t, nt.Home(0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c0 := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c0.Close()
	info, err := c0.UI(ctx)
	if err != nil || info.URL == "" {
		t.Fatalf("ui: %+v %v", info, err)
	}
	b := browser(t)
	run(t, b, "open the dashboard", chromedp.Navigate(info.URL))
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent === "live" && !document.getElementById("audit-error").hidden`, "the audit panel's error on the page")
	text := eval[string](t, b, `document.getElementById("audit-error").textContent`)
	color := eval[string](t, b, `getComputedStyle(document.getElementById("audit-error")).color`)
	if !strings.Contains(text, "audit verify") || color != "rgb(187, 0, 0)" {
		t.Fatalf("the audit panel's error reads %q in %s; want `parley audit verify` named, in red", text, color)
	}
}
