package node_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-mesh/parley/node/nodetest"
)

// A request without the dashboard's token, or with a wrong one, is answered
// 401 with a short plain text that says how to open the dashboard (the
// address `parley ui` prints, or `parley ui --open`): before, the body was
// empty, and a browser showed its own error page, which says nothing of
// Parley. The text holds no token, the connection is still closed with the
// body unread, and a request whose Host is not the dashboard's (a DNS
// rebinding page) gets an empty body.
func TestDashboardWithoutTheTokenSaysHowToOpenIt(t *testing.T) {
	nt := nodetest.Start(t, 1)
	base, tok := uiBase(t, nt, 0)
	port := base[strings.LastIndex(base, ":")+1:]
	get := func(path, token, host string) (*http.Response, string) {
		t.Helper()
		var hdr map[string]string
		if host != "" {
			hdr = map[string]string{"Host": host}
		}
		return uiRequest(t, "GET", base+path, token, hdr, "")
	}
	for _, tc := range []struct{ path, token string }{
		{"/", ""},
		{"/?t=" + strings.Repeat("0", 64), ""},
		{"/ui/state", "wrong"},
	} {
		resp, body := get(tc.path, tc.token, "")
		if resp.StatusCode != 401 || !resp.Close {
			t.Fatalf("GET %s (token %q): %d, Connection %q", tc.path, tc.token, resp.StatusCode, resp.Header.Get("Connection"))
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
			t.Fatalf("GET %s (token %q): Content-Type %q, want plain text", tc.path, tc.token, ct)
		}
		if !strings.Contains(body, "parley ui") || strings.Contains(body, tok) || len(body) > 1024 {
			t.Fatalf("GET %s (token %q) says:\n%s\nwant a short text naming `parley ui`, without the token", tc.path, tc.token, body)
		}
	}
	// Another Host (a page of another site resolved to 127.0.0.1): 401 and
	// nothing to read.
	if resp, body := get("/", "", "rebind.example:"+port); resp.StatusCode != 401 || body != "" {
		t.Fatalf("GET / for Host rebind.example: %d %q, want 401 and an empty body", resp.StatusCode, body)
	}
}

// The browser opening the dashboard with a wrong token, or none, shows the
// node's text that says how to open it, not the browser's error page.
func TestDashboardWithoutTheTokenShowsHowToOpenItInBrowser(t *testing.T) {
	nt := nodetest.Start(t, 1)
	base, _ := uiBase(t, nt, 0)
	b := browser(t)
	for _, u := range []string{base + "/?t=" + strings.Repeat("0", 64), base + "/"} {
		ctx, cancel := context.WithTimeout(b, 30*time.Second)
		resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(u))
		cancel()
		if err != nil || resp.Status != 401 {
			t.Fatalf("open %s: %v %v, want the node's 401 page", u, resp, err)
		}
		if text := eval[string](t, b, `document.body ? document.body.innerText : ""`); !strings.Contains(text, "parley ui") {
			t.Fatalf("the page at %s says:\n%s\nwant how to open the dashboard", u, text)
		}
	}
}

// The dashboard's token does not stay in the address the browser shows and
// keeps (the address bar, the tab's history, restored tabs, synced history):
// once the page has it, the address reads without it.
func TestDashboardTokenStaysOutOfTheAddressBar(t *testing.T) {
	t.Skip("known gap: the token stays in the page's address (see \"The dashboard's token is in its address\" in docs/ARCHITECTURE.md)")
	nt := nodetest.Start(t, 1)
	base, tok := uiBase(t, nt, 0)
	b := browser(t)
	run(t, b, "open the dashboard", chromedp.Navigate(base+"/?t="+tok))
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent === "live"`, "the stream")
	if href := eval[string](t, b, `location.href`); strings.Contains(href, tok) {
		t.Fatalf("the page's address holds the token: %s", href)
	}
}
