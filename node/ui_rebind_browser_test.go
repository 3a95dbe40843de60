package node_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-mesh/parley/internal/ui"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A site whose name comes to resolve to 127.0.0.1 (DNS rebinding) runs its
// script in the origin http://NAME:PORT, the dashboard's port: whatever it
// asks from there, with or without a token, it reads nothing of the node
// (401 with an empty body, 403 for the proof).
func TestDashboardGivesARebindingSiteNothing(t *testing.T) {
	nt := nodetest.Start(t, 1)
	base, tok := uiBase(t, nt, 0)
	port := base[strings.LastIndex(base, ":")+1:]
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath(t)), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("host-resolver-rules", "MAP rebind.test 127.0.0.1"))
	defer cancelAlloc()
	b, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if err := chromedp.Do(b); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	// The site's document, in the dashboard port's origin under its name
	// (a 403 with a body: an empty 401 gives the browser's error page,
	// whose origin is none).
	ctx, cancel := context.WithTimeout(b, 30*time.Second)
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse("http://rebind.test:"+port+"/ui/proof?n="+strings.Repeat("cd", 16)))
	cancel()
	if err != nil || resp.Status != 403 {
		t.Fatalf("the site's document: %v %v", resp, err)
	}
	if origin := eval[string](t, b, `location.origin`); origin != "http://rebind.test:"+port {
		t.Fatalf("the site's document is at %s", origin)
	}
	got := eval[string](t, b, `(async () => {
  const out = [];
  const ask = async (p, h) => { const r = await fetch(p, {headers: h || {}}); out.push(p + " " + r.status + " " + JSON.stringify(await r.text())); };
  await ask("/");
  await ask("/?t=`+tok+`");
  await ask("`+ui.PagePath+`");
  await ask("/ui/state");
  await ask("/ui/state", {"Authorization": "Bearer `+tok+`"});
  await ask("/ui/proof?n=`+strings.Repeat("ab", 16)+`");
  return out.join("\n");
})()`)
	want := strings.Join([]string{
		`/ 401 ""`,
		`/?t=` + tok + ` 403 "wrong Host\n"`, // with the token: refused all the same
		ui.PagePath + ` 403 "wrong Host\n"`,
		`/ui/state 401 ""`,
		`/ui/state 403 "wrong Host\n"`,
		`/ui/proof?n=` + strings.Repeat("ab", 16) + ` 403 "wrong Host\n"`,
	}, "\n")
	if got != want {
		t.Fatalf("the rebinding site read:\n%s\nwant:\n%s", strings.ReplaceAll(got, tok, "TOKEN"), strings.ReplaceAll(want, tok, "TOKEN"))
	}
}
