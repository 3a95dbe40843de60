package node_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/parley-mesh/parley/internal/ui"
	"github.com/parley-mesh/parley/node/nodetest"
)

// Every answer of the dashboard, with the token or without, is kept out of
// caches, out of frames and out of Referer headers, and is never sniffed;
// the page runs only its own script and style, connects to its own origin
// only, and may not be framed.
func TestDashboardAnswersAreNeitherCachedNorFramed(t *testing.T) {
	nt := nodetest.Start(t, 1)
	base, tok := uiBase(t, nt, 0)
	jsonCT := map[string]string{"Content-Type": "application/json"}
	for _, tc := range []struct {
		method, path, token string
		hdr                 map[string]string
		want                int
	}{
		{"GET", "/?t=" + tok, "", nil, 200},
		{"GET", ui.PagePath, "", nil, 200}, // the page reloaded, without its token
		{"GET", "/", "", nil, 401},
		{"GET", "/ui/state", tok, nil, 200},
		{"HEAD", "/ui/stream", tok, nil, 200},
		{"GET", "/ui/proof?n=" + strings.Repeat("ab", 16), "", nil, 200},
		{"GET", "/ui/state", tok, map[string]string{"Origin": "http://evil.example"}, 403},
		{"POST", "/v1/agents/human/say", tok, jsonCT, 400},
		{"GET", "/v1/rooms/no-such-room/log", tok, nil, 404},
	} {
		resp, _ := uiRequest(t, tc.method, base+tc.path, tc.token, tc.hdr, "{}")
		what := tc.method + " " + strings.ReplaceAll(tc.path, tok, "TOKEN")
		if resp.StatusCode != tc.want {
			t.Fatalf("%s: %d, want %d", what, resp.StatusCode, tc.want)
		}
		for k, v := range map[string]string{
			"Cache-Control": "no-store", "X-Frame-Options": "DENY",
			"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
		} {
			if got := resp.Header.Get(k); got != v {
				t.Fatalf("%s: %s %q, want %q", what, k, got, v)
			}
		}
		if resp.Header.Get("Set-Cookie") != "" || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("%s: a cookie or a CORS grant: %v", what, resp.Header)
		}
		if tc.path == "/?t="+tok || tc.path == ui.PagePath {
			csp := resp.Header.Get("Content-Security-Policy")
			for _, d := range []string{"default-src 'none'", "frame-ancestors 'none'", "connect-src 'self'", "base-uri 'none'", "form-action 'none'"} {
				if !strings.Contains(csp, d) {
					t.Fatalf("the page's CSP %q lacks %q", csp, d)
				}
			}
			if strings.Contains(csp, "unsafe-") || strings.Contains(csp, "*") || strings.Contains(csp, "http:") {
				t.Fatalf("the page's CSP allows more than its own: %q", csp)
			}
		}
	}
}

// A page of another site (here another port of 127.0.0.1) that frames the
// dashboard, token and all, gets the browser's error in the frame, not the
// dashboard: no click on the page can be lured through it.
func TestDashboardIsNotFramedByAnotherSite(t *testing.T) {
	nt := nodetest.Start(t, 1)
	base, tok := uiBase(t, nt, 0)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(`<!doctype html><title>other</title><iframe id="f" src="` + base + `/?t=` + tok + `"></iframe>`))
	}))
	defer evil.Close()
	b := browser(t)
	run(t, b, "open the other site", chromedp.Navigate(evil.URL))
	var frames []string
	ok := nodetest.Poll(30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(b, 10*time.Second)
		defer cancel()
		tree, err := chromedp.Run(ctx, chromedp.Action[*page.FrameTree](func(ctx context.Context, tg *chromedp.Target) (*page.FrameTree, error) {
			res, err := cdp.Call(ctx, tg, page.GetFrameTree, cdp.Empty{})
			return res.FrameTree, err
		}))
		if err != nil || tree == nil || len(tree.ChildFrames) == 0 {
			return false
		}
		frames = frames[:0]
		for _, c := range tree.ChildFrames {
			frames = append(frames, c.Frame.URL+" unreachable="+c.Frame.UnreachableURL)
		}
		f := tree.ChildFrames[0].Frame
		return f.URL != "about:blank" && f.URL != ""
	})
	if !ok {
		t.Fatalf("the frame did not load anything: %v", frames)
	}
	if f := frames[0]; strings.HasPrefix(f, base) {
		t.Fatalf("the dashboard shows in another site's frame: %s", strings.ReplaceAll(f, tok, "TOKEN"))
	}
	t.Logf("the frame: %s", strings.ReplaceAll(frames[0], tok, "TOKEN"))
}
