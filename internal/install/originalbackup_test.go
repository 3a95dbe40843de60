package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecondInstallKeepsTheOriginalBackup: before, the copy of a file as it
// was before Parley first wrote it was written over by a later install that
// found no record of the first (a damaged record, which Parley's own message
// says to move away; or a record write that failed), with the file as it
// was then, Parley's entries in it, and the one copy of the user's file from
// before Parley was gone; now an original copy already there is kept, and
// the new one goes under a name with the time, which a note names.
func TestSecondInstallKeepsTheOriginalBackup(t *testing.T) {
	env := testEnv(t)
	p := filepath.Join(env.Home, ".claude.json")
	orig := "{\n  \"theme\": \"dark\"\n}\n"
	writeFile(t, p, orig)
	o := Options{Client: Claude, Scope: User, Command: "/opt/parley/1.0/bin/parley"}
	first := mustInstall(t, env, o)
	var backup string
	for _, b := range first.Backups {
		if strings.HasSuffix(b, ".claude.json.original") {
			backup = b
		}
	}
	if backup == "" {
		t.Fatalf("no original backup of %s in %v", p, first.Backups)
	}
	// The record is damaged; the install says to move it away.
	rec := recordPath(env, Claude, User)
	writeFile(t, rec, "{\"client\": ")
	if _, err := Install(env, o); err == nil || !strings.Contains(err.Error(), "move it away") {
		t.Fatalf("install with a damaged record: %v", err)
	}
	if err := os.Rename(rec, rec+".damaged"); err != nil {
		t.Fatal(err)
	}
	// Parley was upgraded: its path changed.
	o.Command = "/opt/parley/1.1/bin/parley"
	mustInstall(t, env, o)
	if got := string(mustRead(t, backup)); got != orig {
		t.Errorf("the backup of the original %s now holds:\n%s\nwant the original:\n%s", p, got, orig)
	}
}
