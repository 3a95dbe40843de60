package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-mesh/parley/node/nodetest"
)

// headless starts headless Chromium (skipping the test where there is none,
// except in CI, where .ci/run installs it) and returns a context for
// chromedp.
func headless(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no Chromium: .ci/run installs it")
		}
		t.Skip("no Chromium on this machine (apt-get install chromium)")
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(path),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()))
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return bctx
}

// parley ui --open in a real browser: the page in the home, opened as the
// opener opens it (a file: URL), sends the browser on to the dashboard,
// which shows and goes live, its address without the token, and is live
// again after a reload. (Chromium marks that navigation cross-site.)
func TestCLIUIOpenInBrowser(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config"), []byte("handle = tester\nlisten = /ip4/127.0.0.1/tcp/0\nmdns = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	up(t, home)
	bin := t.TempDir()
	argv := filepath.Join(bin, "argv")
	opener := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + argv + ".tmp && mv " + argv + ".tmp " + argv + "\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(opener), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(parleyBin, "--home", home, "ui", "--open")
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("parley ui --open: %v %s", err, b)
	}
	var args []byte
	nodetest.WaitFor(t, 10*time.Second, func() bool {
		var err error
		args, err = os.ReadFile(argv)
		return err == nil
	}, "the opener to run")
	page := strings.TrimSpace(string(args))
	if !strings.HasPrefix(page, "file://") {
		t.Fatalf("the opener got %q, want a file: URL", page)
	}

	b := headless(t)
	ctx, cancel := context.WithTimeout(b, 30*time.Second)
	err := chromedp.Do(ctx, chromedp.Navigate(page))
	cancel()
	if err != nil {
		t.Fatalf("open %s: %v", page, err)
	}
	var said string
	ok := nodetest.Poll(30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(b, 10*time.Second)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.protocol + " " + (document.getElementById("status") ? document.getElementById("status").textContent : document.body.innerText)`))
		said = fmt.Sprint(v, err)
		return err == nil && v == "http: live"
	})
	if !ok {
		t.Fatalf("the page %s opened, and the browser shows %q, not the live dashboard", page, said)
	}
	// The dashboard keeps its token out of its address, and a reload of
	// the tab (which the browser may mark cross-site, as it did the first
	// opening) finds it live again.
	ctx, cancel = context.WithTimeout(b, 30*time.Second)
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
	cancel()
	if err != nil || !strings.HasSuffix(href, "/ui/page") || strings.Contains(href, "?t=") {
		t.Fatalf("the dashboard's address is %q (%v), want one ending /ui/page, without its token", href, err)
	}
	ctx, cancel = context.WithTimeout(b, 30*time.Second)
	err = chromedp.Do(ctx, chromedp.Reload())
	cancel()
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	ok = nodetest.Poll(30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(b, 10*time.Second)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname + " " + (document.getElementById("status") ? document.getElementById("status").textContent : document.body.innerText)`))
		said = fmt.Sprint(v, err)
		return err == nil && v == "/ui/page live"
	})
	if !ok {
		t.Fatalf("after a reload the browser shows %q, not the live dashboard", said)
	}
}
