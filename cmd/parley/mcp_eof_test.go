package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Regression: `parley mcp` ended at the end of its input with the requests
// it had read unanswered, so `printf … | parley mcp` got no answer, or
// initialize's alone. It now answers every request it read before it ends.
func TestMCPFinishesWhatItReadBeforeEndOfInput(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	}, "\n") + "\n"
	cmd := exec.Command(parleyBin, "--home", home, "mcp", "--no-start", "--session", "eof", "--client", "test")
	cmd.Stdin = strings.NewReader(in)
	out, errs, code := runPrepared(t, cmd)
	if code != 0 {
		t.Fatalf("parley mcp: exit %d: %s", code, errs)
	}
	for _, id := range []string{`"id":1`, `"id":2`} {
		if !strings.Contains(out, id) {
			t.Errorf("the request with %s, read before end of input, got no answer; stdout %q", id, out)
		}
	}
}
