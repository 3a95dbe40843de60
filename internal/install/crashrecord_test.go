package install

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// crash stands for the process being killed (Ctrl-C, a crash, power
// loss): a panic from beforeReplace unwinds Apply with no rollback and no
// further write of its own.
type crash struct{}

// crashAt makes Apply stop dead right before its n-th rename (from 0).
func crashAt(t *testing.T, n int) {
	t.Helper()
	i := 0
	beforeReplace = func(string) {
		if i == n {
			panic(crash{})
		}
		i++
	}
	t.Cleanup(func() { beforeReplace = nil })
}

func applyCrashing(t *testing.T, p *Plan) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crash); !ok {
				panic(r)
			}
		}
		beforeReplace = nil
	}()
	if err := p.Apply(); err != nil {
		t.Fatal(err)
	}
	t.Fatal("Apply ended although it was cut short")
}

// TestInstallCutShortBeforeItsRecordIsUndoneInFull: an install killed
// between its renames (before the first, or after the first of two)
// leaves no edit that its record does not name. Before, Apply renamed the
// files first and wrote the record last: a process killed in between left
// Parley's entries with no record of what they replaced or created, and
// install + uninstall no longer gave the user's files back:
// ~/.claude/settings.json, which Parley created, stayed behind as "{}",
// and an empty "mcpServers" of the user's was taken out.
func TestInstallCutShortBeforeItsRecordIsUndoneInFull(t *testing.T) {
	for _, tc := range []struct {
		n         int
		reinstall bool // the user runs the install again before uninstalling
	}{{0, true}, {1, true}, {0, false}, {1, false}} {
		n := tc.n
		env := testEnv(t)
		claudeJSON := filepath.Join(env.Home, ".claude.json")
		const orig = "{\n  \"mcpServers\": {}\n}\n"
		writeFile(t, claudeJSON, orig)
		settings := filepath.Join(env.Home, ".claude", "settings.json")
		p, err := Install(env, opts(Claude, User))
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Changes) != 2 {
			t.Fatalf("changes: %+v", p.Changes)
		}
		crashAt(t, n)
		applyCrashing(t, p)
		if tc.reinstall {
			mustInstall(t, env, opts(Claude, User))
		}
		mustUninstall(t, env, Claude, User)
		if got := string(mustRead(t, claudeJSON)); got != orig {
			t.Errorf("cut short at rename %d: %s after install and uninstall: %q, want %q", n, claudeJSON, got, orig)
		}
		if b, err := os.ReadFile(settings); err == nil {
			t.Errorf("cut short at rename %d: %s, which Parley created, is still there: %q", n, settings, b)
		}
		if _, err := os.Stat(filepath.Dir(settings)); err == nil {
			t.Errorf("cut short at rename %d: %s, which Parley created, is still there", n, filepath.Dir(settings))
		}
		if _, err := os.Stat(recordPath(env, Claude, User)); err == nil {
			t.Errorf("cut short at rename %d: the record is still there after the uninstall", n)
		}
	}
}

// TestFailedApplyPutsTheRecordBack: an install whose Apply stops cleanly
// (ErrRaced at its second file) after it wrote its record puts an earlier
// install's record back byte for byte (with none before, see
// TestInstallPutsBackTheFilesItWroteWhenALaterOneRaced).
func TestFailedApplyPutsTheRecordBack(t *testing.T) {
	// With an earlier install's record: it is put back byte for byte.
	env := testEnv(t)
	realistic(t, env, Claude)
	o := opts(Claude, User)
	o.Hooks = nil
	mustInstall(t, env, o)
	rp := recordPath(env, Claude, User)
	before := mustRead(t, rp)
	second := filepath.Join(env.Home, ".claude", "settings.json")
	clientWritesAt(t, second, startups)
	p, err := Install(env, opts(Claude, User))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) == 0 {
		t.Fatal("the second install changes nothing")
	}
	if err := p.Apply(); !errors.Is(err, ErrRaced) {
		t.Fatalf("apply: %v, want ErrRaced", err)
	}
	if got := mustRead(t, rp); !bytes.Equal(got, before) {
		t.Errorf("the record after a failed Apply:\n%s\nwant\n%s", got, before)
	}
}
