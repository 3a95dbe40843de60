package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// parley ui prints the dashboard's address on the port of the config; the
// page answers with its token and 401 without.
func TestCLIUI(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := fmt.Sprintf("handle = tester\nlisten = /ip4/127.0.0.1/tcp/0\nmdns = false\nui_port = %d\n", port)
	if err := os.WriteFile(filepath.Join(home, "config"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	up(t, home)
	out, errs, code := run(t, "--home", home, "ui")
	url := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(url, fmt.Sprintf("http://127.0.0.1:%d/?t=", port)) {
		t.Fatalf("parley ui: exit %d %q %s", code, out, errs)
	}
	get := func(u string) (int, string) {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	if c, body := get(url); c != 200 || !strings.Contains(body, "<title>Parley</title>") {
		t.Fatalf("the page: %d", c)
	}
	if c, body := get(strings.Split(url, "?")[0]); c != 401 || body != "" {
		t.Fatalf("without the token: %d %q", c, body)
	}
}
