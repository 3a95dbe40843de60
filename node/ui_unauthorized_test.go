package node_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/ui"
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
// keeps (the address bar, the tab's history, restored tabs): once the page
// has it, it keeps it in its tab's sessionStorage and its address reads
// /ui/page, in the tab's history too. The page works, a reload of the tab
// works, and the same address opened in a new tab shows how to open the
// dashboard and sends nothing.
func TestDashboardTokenStaysOutOfTheAddressBar(t *testing.T) {
	nt, ctx, c0, room, info := opsDashboard(t, 3*time.Minute)
	base, code, ok := strings.Cut(info.URL, "/?c=")
	if !ok || len(code) < 32 {
		t.Fatalf("the dashboard's address %q has no one-time code", info.URL)
	}
	tok := uiToken(t, nt.Home(0))
	if strings.Contains(info.URL, tok) {
		t.Fatalf("the dashboard's address %q carries its token", info.URL)
	}
	b := browser(t)
	// clean checks that the tab shows and keeps no token: its address,
	// and each entry of its history as the browser holds it (the page
	// itself sees only history.length).
	clean := func(when string) {
		t.Helper()
		if href := eval[string](t, b, `location.href`); href != base+ui.PagePath {
			t.Fatalf("%s the page's address is %s, want %s", when, strings.ReplaceAll(href, tok, "TOKEN"), base+ui.PagePath)
		}
		cctx, cancel := context.WithTimeout(b, 10*time.Second)
		h, err := chromedp.Run(cctx, chromedp.NavigationEntries())
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range h.Entries {
			if strings.Contains(e.URL, code) || strings.Contains(e.UserTypedURL, code) {
				t.Fatalf("%s the tab's history holds the address's code: entry %d of %d: %q", when, e.ID, len(h.Entries), e.URL)
			}
			if strings.Contains(e.URL, tok) || strings.Contains(e.UserTypedURL, tok) {
				t.Fatalf("%s the tab's history holds the token: entry %d of %d: %q (typed %q)", when, e.ID, len(h.Entries), strings.ReplaceAll(e.URL, tok, "TOKEN"), strings.ReplaceAll(e.UserTypedURL, tok, "TOKEN"))
			}
		}
		if n := eval[int](t, b, `history.length`); n != len(h.Entries) {
			t.Fatalf("%s the page counts %d entries in its history, the browser %d", when, n, len(h.Entries))
		}
		t.Logf("%s the tab's history: %d entries, at %d", when, len(h.Entries), h.CurrentIndex)
	}
	live := func(what string) {
		t.Helper()
		waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent === "live"`, what)
		waitJS(t, b, 30*time.Second, fmt.Sprintf(`!!document.querySelector(%q)`, fmt.Sprintf(`#rooms li[data-room=%q]`, room.RoomID)), what+": the room listed")
	}
	posted := func(text string) {
		t.Helper()
		clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, room.RoomID))
		waitJS(t, b, 30*time.Second, `document.getElementById("roomname").textContent.includes("ops")`, "the room open")
		eval[bool](t, b, fmt.Sprintf(`(() => { document.getElementById("text").value = %q; document.getElementById("send").click(); return true })()`, text))
		nt.WaitFor(30*time.Second, func() bool {
			es, err := c0.Log(ctx, room.RoomID, 0, "")
			return err == nil && slices.ContainsFunc(es, func(e localapi.Event) bool { return e.Text == text })
		}, "the post "+text+" in the room")
	}

	run(t, b, "open the dashboard", chromedp.Navigate(info.URL))
	live("the stream")
	clean("once open,")
	posted("posted from the page")

	run(t, b, "reload the tab", chromedp.Reload())
	live("the stream after a reload")
	clean("after a reload,")
	posted("posted after a reload")

	// The address the tab shows, opened in a new tab: the page without its
	// token says how to open the dashboard, and asks the node nothing.
	nb, cancel := chromedp.NewContext(b)
	defer cancel()
	if err := chromedp.Do(nb); err != nil { // opens the tab
		t.Fatal(err)
	}
	run(t, nb, "open the address bar's address in a new tab", chromedp.Navigate(base+ui.PagePath))
	if text := eval[string](t, nb, `document.body.innerText`); !strings.Contains(text, "parley ui") || strings.Contains(text, "live") {
		t.Fatalf("a new tab at %s says:\n%s\nwant how to open the dashboard", ui.PagePath, text)
	}
	if rs := pageRequests(t, nb); len(rs) != 0 {
		t.Fatalf("a new tab at %s without the token sent %d requests: %q", ui.PagePath, len(rs), rs)
	}
	if href := eval[string](t, nb, `location.href`); href != base+ui.PagePath {
		t.Fatalf("the new tab is at %s", href)
	}

	// The address `parley ui` printed, opened again (from the browser's
	// history, a bookmark, a link someone copied): its code is used up, so
	// it opens nothing and says to get a new address.
	run(t, nb, "open the printed address again", chromedp.Navigate(info.URL))
	if text := eval[string](t, nb, `document.body.innerText`); !strings.Contains(text, "opened the dashboard already") || !strings.Contains(text, "parley ui") {
		t.Fatalf("the printed address opened again says:\n%s\nwant that it was used", text)
	}
	if rs := pageRequests(t, nb); len(rs) != 0 {
		t.Fatalf("the used address sent %d requests: %q", len(rs), rs)
	}
}

// pageRequests are the addresses the page in b fetched, as its resource
// timing lists them, but the browser's own look for an icon (which the
// page does not make, and which comes or not as the browser likes).
func pageRequests(t *testing.T, b context.Context) []string {
	t.Helper()
	return eval[[]string](t, b, `performance.getEntriesByType("resource").map(e => e.name).filter(n => new URL(n).pathname !== "/favicon.ico")`)
}

// A dashboard tab whose token was replaced since it was opened (HOME/ui.token
// deleted, the node restarted on the same port), reloaded, holds the old
// token: it sends it nowhere, and says that the program on the port does
// not know its token and to run `parley ui` for the address.
func TestDashboardReloadedWithAnOldTokenSaysToRunParleyUI(t *testing.T) {
	nt := nodetest.Start(t, 1)
	base, tok := uiBase(t, nt, 0)
	b := browser(t)
	run(t, b, "open the dashboard", chromedp.Navigate(base+"/?t="+tok))
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent === "live"`, "the stream")
	nt.Crash(0)
	if err := os.Remove(filepath.Join(nt.Home(0), ui.TokenFileName)); err != nil {
		t.Fatal(err)
	}
	nt.Restart(0)
	again, tok2 := uiBase(t, nt, 0)
	if again != base || tok2 == tok {
		t.Fatalf("after the restart the dashboard is at %s (was %s), its token new: %v", again, base, tok2 != tok)
	}
	run(t, b, "reload the tab", chromedp.Reload())
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent.includes("does not know this page's token: another program, or the node since given a new token") &&
		document.getElementById("status").textContent.includes("parley ui")`, "the page to say its token is not the node's")
}
