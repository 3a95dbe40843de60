package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// Regression: a hook's text is cut to what Claude Code keeps (maxContext),
// and the items past the cut were handed out and confirmed with the rest:
// lost (the messages read, the invitation dropped), though the text said
// parley_read showed them. The hook now confirms only the items its text
// shows; the node offers the others again at once (the hand wait is ten
// minutes here), and the next hook shows them. Ten long messages and an
// invitation do not fit in one text: each is shown once, none is lost.
func TestHookOutputCutHandsTheRestAgain(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback, "--hand-wait", "10m")
	proj := filepath.Join(t.TempDir(), "shop")
	in := func(event, extra string) string {
		return `{"session_id":"sess-cut","cwd":"` + proj + `","hook_event_name":"` + event + `"` + extra + `}`
	}
	if _, errs, code := runStdin(t, in("SessionStart", `,"source":"startup"`), "--home", home, "hook", "claude", "SessionStart"); code != 0 {
		t.Fatalf("SessionStart: %s", errs)
	}
	if _, errs, code := run(t, "--home", home, "room", "create", "release", "--member", "claude-code-shop"); code != 0 {
		t.Fatalf("room create: %s", errs)
	}
	const n = 10
	marks := map[string]string{"invitation": `invited you`}
	for i := range n {
		tag := fmt.Sprintf("m%02d", i)
		marks[tag] = "</" + tag + ">"
		text := "<" + tag + ">" + strings.Repeat("y", 1400) + marks[tag]
		if _, errs, code := run(t, "--home", home, "room", "say", "release", text); code != 0 {
			t.Fatalf("room say: %s", errs)
		}
	}
	post := in("PostToolUse", `,"tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"stdout":"a"},"tool_use_id":"t1"`)
	seen := map[string]int{}
	var texts []string
	hookRun := func() {
		out, errs, code := runStdin(t, post, "--home", home, "hook", "claude", "PostToolUse")
		if code != 0 {
			t.Fatalf("PostToolUse: exit %d: %s", code, errs)
		}
		if out == "" {
			return
		}
		text := decodeHook(t, out).HookSpecificOutput.AdditionalContext
		if l := len([]rune(text)); l > maxContext {
			t.Fatalf("a hook text of %d characters, over %d", l, maxContext)
		}
		texts = append(texts, text)
		for what, mark := range marks {
			if c := strings.Count(text, mark); c > 0 {
				seen[what] += c
			}
		}
	}
	hookRun()
	if len(texts) == 0 || !strings.Contains(texts[0], "more items") || len(seen) == len(marks) {
		t.Fatalf("the first hook's text is not cut (the test needs it cut): %q", texts)
	}
	if !strings.Contains(texts[0], "more items did not fit here: they come again with your next tool result.") ||
		strings.Contains(texts[0], "parley_read shows them") {
		t.Errorf("the first hook's text does not say what comes of what it left out:\n…%s", texts[0][max(0, len(texts[0])-300):])
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		hookRun()
		return len(seen) == len(marks)
	}, "the next hooks to show the items the first one left out (seen %v in %d texts)", seen, len(texts))
	// Nothing is shown twice: not now, and not after more hooks.
	nodetest.Poll(2*time.Second, func() bool { hookRun(); return false })
	for what := range marks {
		if seen[what] != 1 {
			t.Errorf("%s shown %d times, want once", what, seen[what])
		}
	}
}
