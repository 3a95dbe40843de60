package install

import (
	"os"
	"path/filepath"
	"testing"
)

// TestInstallCutShortBeforeItsRecordIsUndoneInFull: Apply renames the
// files first and writes the record last. A process killed in between
// (Ctrl-C, a crash, power loss) leaves Parley's entries with no record of
// what they replaced or created; the backup copy is on disk but no record
// names it. The state is made here as such a crash leaves it (the record
// removed right after Apply). Running install again then records the
// files as found, and install + uninstall no longer gives the user's
// files back: ~/.claude/settings.json, which Parley created, stays behind
// as "{}", and an empty "mcpServers" of the user's is taken out.
func TestInstallCutShortBeforeItsRecordIsUndoneInFull(t *testing.T) {
	t.Skip("finding: the record is written after the renames; a crash in between leaves edits no record (and no uninstall) can undo byte for byte")
	env := testEnv(t)
	claudeJSON := filepath.Join(env.Home, ".claude.json")
	const orig = "{\n  \"mcpServers\": {}\n}\n"
	writeFile(t, claudeJSON, orig)
	settings := filepath.Join(env.Home, ".claude", "settings.json")
	p, err := Install(env, opts(Claude, User))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(); err != nil {
		t.Fatal(err)
	}
	// The crash: the files are renamed, the record is not there.
	if err := os.Remove(recordPath(env, Claude, User)); err != nil {
		t.Fatal(err)
	}
	mustInstall(t, env, opts(Claude, User)) // the user runs it again
	mustUninstall(t, env, Claude, User)
	if got := string(mustRead(t, claudeJSON)); got != orig {
		t.Errorf("%s after install and uninstall: %q, want %q", claudeJSON, got, orig)
	}
	if b, err := os.ReadFile(settings); err == nil {
		t.Errorf("%s, which Parley created, is still there: %q", settings, b)
	}
}
