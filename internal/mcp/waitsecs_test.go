package mcp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// TestMCPWaitSecondsOutOfRangeRefused: wait_seconds is "1 to 50"; a
// negative one (a model asking not to wait) silently blocked for the
// default 30 s, the client's tool time-out close by. It must be refused
// with its range, as limit and ttl_minutes are, not waited on. Before,
// it blocked for 30 s; now it is refused naming wait_seconds and 0 to 50.
func TestMCPWaitSecondsOutOfRangeRefused(t *testing.T) {
	nt := nodetest.Start(t, 1)
	a := connect(t, nt, 0, "a")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	start := time.Now()
	_, text, isErr := try(t, a, "parley_wait", map[string]any{"wait_seconds": -1})
	if took := time.Since(start); !isErr || !strings.Contains(text, "wait_seconds") {
		t.Fatalf("wait_seconds -1 taken: blocked %v, then %q", took.Round(time.Second), text)
	}
}
