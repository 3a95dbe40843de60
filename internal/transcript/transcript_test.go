package transcript

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func claudeLine(id, req string, in, out, cw, cr int64) string {
	return `{"type":"assistant","uuid":"u-` + id + `","requestId":"` + req + `","message":{"id":"` + id + `","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":` +
		itoa(in) + `,"cache_creation_input_tokens":` + itoa(cw) + `,"cache_read_input_tokens":` + itoa(cr) + `,"output_tokens":` + itoa(out) + `,"service_tier":"standard"}}}` + "\n"
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func collect(t *testing.T, c *Cursors, f Format, path string) *Read {
	t.Helper()
	r, err := c.Collect(f, path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if err := r.Commit(); err != nil {
		t.Fatal(err)
	}
	return r
}

// Claude Code: each response counted once, whatever the repeats and
// snapshots, across reads and across a resumed session's copy; a half
// written line waits; bad lines and a cut-short file are notes.
func TestClaudeCountedOnce(t *testing.T) {
	dir := t.TempDir()
	c := &Cursors{Path: filepath.Join(dir, "cursors.json")}
	tr := filepath.Join(dir, "s1.jsonl")
	appendFile(t, tr, `{"type":"user","message":{"role":"user","content":"hi"}}`+"\n"+
		claudeLine("msg_1", "req_1", 3, 2, 100, 1000)+ // a snapshot while streaming
		claudeLine("msg_1", "req_1", 3, 40, 100, 1000)+ // the final one
		claudeLine("msg_1", "req_1", 3, 40, 100, 1000)+ // another content block
		"not json\n"+
		`{"type":"assistant","costUSD":0.25,"message":{"id":"msg_2","usage":{"input_tokens":10,"output_tokens":5}}}`+"\n"+
		claudeLine("msg_3", "req_3", 1, 1, 0, 0)[:40]) // written half
	r := collect(t, c, Claude, tr)
	want := Spent{In: 3 + 100 + 1000 + 10, Out: 45, CacheRead: 1000, CacheWrite: 100, CostUSD: 0.25, HasCost: true, Records: 3}
	if r.Spent != want {
		t.Fatalf("first read %+v, want %+v", r.Spent, want)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "1 lines that are not JSON") {
		t.Fatalf("notes %q", r.Notes)
	}
	// Nothing new: nothing counted.
	if r := collect(t, c, Claude, tr); !r.Spent.Zero() || len(r.Notes) != 0 {
		t.Fatalf("second read %+v %q", r.Spent, r.Notes)
	}
	// The half line ends; a repeat of msg_1 adds nothing.
	appendFile(t, tr, claudeLine("msg_3", "req_3", 1, 1, 0, 0)[40:]+claudeLine("msg_1", "req_1", 3, 40, 100, 1000))
	if r := collect(t, c, Claude, tr); r.Spent != (Spent{In: 1, Out: 1, Records: 1}) {
		t.Fatalf("third read %+v", r.Spent)
	}
	// A resumed session's transcript copies the history: not counted again.
	tr2 := filepath.Join(dir, "s2.jsonl")
	appendFile(t, tr2, claudeLine("msg_1", "req_1", 3, 40, 100, 1000)+claudeLine("msg_4", "req_4", 7, 7, 0, 0))
	if r := collect(t, c, Claude, tr2); r.Spent != (Spent{In: 7, Out: 7, Records: 1}) {
		t.Fatalf("resumed %+v", r.Spent)
	}
	// Cut short and written again: read from the start, known messages
	// not counted again.
	if err := os.WriteFile(tr2, []byte(claudeLine("msg_4", "req_4", 7, 7, 0, 0)), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := collect(t, c, Claude, tr2); !r.Spent.Zero() || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "cut short") {
		t.Fatalf("cut short %+v %q", r.Spent, r.Notes)
	}
	// Missing, relative, not a regular file: notes, nothing counted.
	for _, p := range []string{filepath.Join(dir, "gone.jsonl"), "rel.jsonl", dir} {
		if r := collect(t, c, Claude, p); !r.Spent.Zero() || len(r.Notes) != 1 {
			t.Fatalf("%s: %+v %q", p, r.Spent, r.Notes)
		}
	}
}

// A session started on a transcript with history counts from there on.
func TestSkipHistory(t *testing.T) {
	dir := t.TempDir()
	c := &Cursors{Path: filepath.Join(dir, "cursors.json")}
	tr := filepath.Join(dir, "s.jsonl")
	appendFile(t, tr, claudeLine("old", "r", 5, 5, 0, 0))
	r, err := c.Skip(Claude, tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(); err != nil {
		t.Fatal(err)
	}
	r.Release()
	appendFile(t, tr, claudeLine("new", "r2", 2, 3, 0, 0))
	if r := collect(t, c, Claude, tr); r.Spent != (Spent{In: 2, Out: 3, Records: 1}) {
		t.Fatalf("%+v", r.Spent)
	}
	// A damaged cursor file: a note, and counting goes on from the end.
	if err := os.WriteFile(c.Path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	appendFile(t, tr, claudeLine("newer", "r3", 1, 1, 0, 0))
	if r := collect(t, c, Claude, tr); !r.Spent.Zero() || len(r.Notes) != 1 {
		t.Fatalf("damaged cursors: %+v %q", r.Spent, r.Notes)
	}
}

// Codex: running totals, counted by what grew.
func TestCodexTotals(t *testing.T) {
	dir := t.TempDir()
	c := &Cursors{Path: filepath.Join(dir, "cursors.json")}
	tr := filepath.Join(dir, "rollout.jsonl")
	tc := func(in, cached, out int64) string {
		return `{"timestamp":"2026-01-01T00:00:00Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":` +
			itoa(in) + `,"cached_input_tokens":` + itoa(cached) + `,"output_tokens":` + itoa(out) + `,"reasoning_output_tokens":3,"total_tokens":1},"last_token_usage":{"input_tokens":1}},"rate_limits":null}}` + "\n"
	}
	appendFile(t, tr, `{"type":"session_meta","payload":{"id":"x"}}`+"\n"+
		`{"type":"event_msg","payload":{"type":"token_count","info":null}}`+"\n"+tc(1000, 800, 50)+tc(1000, 800, 50)+tc(2500, 1800, 90))
	if r := collect(t, c, Codex, tr); r.Spent != (Spent{In: 2500, Out: 90, CacheRead: 1800, Records: 2}) {
		t.Fatalf("%+v", r.Spent)
	}
	appendFile(t, tr, tc(3000, 2000, 100))
	if r := collect(t, c, Codex, tr); r.Spent != (Spent{In: 500, Out: 10, CacheRead: 200, Records: 1}) || r.Spent.HasCost {
		t.Fatalf("%+v", r.Spent)
	}
}

// A line over MaxLine is skipped with a note and the next one is read.
func TestLongLine(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 32 MiB")
	}
	dir := t.TempDir()
	c := &Cursors{Path: filepath.Join(dir, "cursors.json")}
	tr := filepath.Join(dir, "s.jsonl")
	appendFile(t, tr, `{"type":"user","x":"`+strings.Repeat("a", MaxLine)+`"}`+"\n"+claudeLine("m", "r", 1, 2, 0, 0))
	r := collect(t, c, Claude, tr)
	if r.Spent != (Spent{In: 1, Out: 2, Records: 1}) || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "over") {
		t.Fatalf("%+v %q", r.Spent, r.Notes)
	}
}

func FuzzTranscript(f *testing.F) {
	f.Add([]byte(claudeLine("m", "r", 1, 2, 3, 4)), true)
	f.Add([]byte(`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":-5,"cached_input_tokens":9}}}}`+"\n"), false)
	f.Add([]byte("{\n\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, claude bool) {
		dir := t.TempDir()
		tr := filepath.Join(dir, "t.jsonl")
		if err := os.WriteFile(tr, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c := &Cursors{Path: filepath.Join(dir, "c.json")}
		format := Codex
		if claude {
			format = Claude
		}
		r1 := collect(t, c, format, tr)
		if r1.Spent.In < 0 || r1.Spent.Out < 0 || r1.Spent.CacheRead < 0 || r1.Spent.CacheWrite < 0 || r1.Spent.CostUSD < 0 ||
			r1.Spent.CacheRead+r1.Spent.CacheWrite > r1.Spent.In {
			t.Fatalf("spent %+v", r1.Spent)
		}
		if r2 := collect(t, c, format, tr); !r2.Spent.Zero() {
			t.Fatalf("counted twice: %+v", r2.Spent)
		}
	})
}
