package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// An agent's parley_ask whose wait the node cuts short (the node stops:
// its user runs `parley down` to restart it) was posted already: the
// result names the ask, so the agent waits for it with parley_wait once
// the node is back instead of asking again. It got only "the node is
// stopping: it ended this request", with no ask_id, and an agent that
// asked again posted the ask twice.
func TestMCPAskCutOffByNodeStopNamesTheAsk(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	if _, errs, code := run(t, "--home", home, "agent", "register", "helper"); code != 0 {
		t.Fatalf("agent register: %s", errs)
	}
	cs := mcpClient(t, home, "asker")
	type result struct {
		r   toolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := tryTool(cs, "parley_ask", map[string]any{"to": "helper", "text": "is the tag v2.0.0?", "wait_seconds": 40})
		done <- result{r, err}
	}()
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, _, _ := run(t, "--home", home, "inbox", "--as", "helper")
		return strings.Contains(out, "is the tag v2.0.0?")
	}, "the ask to reach helper")
	if _, errs, code := run(t, "--home", home, "down"); code != 0 {
		t.Fatalf("down: %s", errs)
	}
	var got result
	select {
	case got = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("parley_ask did not return after the node stopped")
	}
	r := got.r
	if r.Out == nil {
		t.Fatalf("parley_ask: %v", got.err)
	}
	id := r.str("ask_id")
	if !r.Err || id == "" {
		t.Fatalf("parley_ask cut short by the node stopping: error %v, ask_id %q; want an error naming the ask posted: %s", r.Err, id, r.Text)
	}
	for _, want := range []string{id, "parley_wait", "posted"} {
		if !strings.Contains(r.Text, want) {
			t.Errorf("parley_ask cut short: the text lacks %q: %s", want, r.Text)
		}
	}
}
