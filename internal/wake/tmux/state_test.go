package tmux

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The program in the foreground of a pane may have any name, a tab in it
// too (tmux prints #{pane_current_command} as it is): the pane is still
// there and must still be read, not taken for an error (which a terminal
// route ends on, letting its agent go). Before, parseState split the
// line at every tab and refused it; now it splits it into its 13 fields,
// the command, last, keeping its tabs.
func TestWakeInspectAPaneWhoseProgramNameHasATab(t *testing.T) {
	s := newServer(t)
	ctx := testCtx(t, 20*time.Second)
	dir := t.TempDir()
	bin := filepath.Join(dir, "ag\tent")
	raw, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Skip("no /bin/sleep to copy")
	}
	if err := os.WriteFile(bin, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := s.Start(ctx, StartOptions{Command: []string{bin, "600"}})
	if err != nil {
		// The program runs all the same, in a pane nobody knows of.
		t.Fatalf("start of a program named %q: %v", filepath.Base(bin), err)
	}
	t.Cleanup(func() { endProcess(t, s, p) })
	var last error
	ok := func() bool {
		st, err := s.Inspect(ctx, p.ID)
		last = err
		return err == nil && st.ID == p.ID && !st.Dead
	}
	waitFor(t, 10*time.Second, "the pane to be read", func() bool {
		if ok() {
			return true
		}
		return last != nil
	})
	if last != nil {
		t.Fatalf("a live pane whose program is named %q is not read: %v", filepath.Base(bin), last)
	}
}
