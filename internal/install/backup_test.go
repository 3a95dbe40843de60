package install

import (
	"os"
	"testing"
)

// Regression: an uninstall that removed the files Parley had created, as
// it wrote them, kept copies of them, and the CLI said "copies of the files
// as they were are in …" of copies of Parley's own text. It keeps none now
// (Backups is empty, so the CLI says nothing of copies).
func TestUninstallKeepsNoCopyOfAFileParleyCreated(t *testing.T) {
	for _, c := range Clients {
		t.Run(string(c), func(t *testing.T) {
			env := testEnv(t)
			if p := mustInstall(t, env, opts(c, User)); len(p.Backups) != 0 {
				t.Fatalf("install into an empty home made copies: %v", p.Backups)
			}
			p := mustUninstall(t, env, c, User)
			if len(p.Backups) != 0 {
				t.Errorf("uninstall of the files Parley created made copies: %v", p.Backups)
			}
			if ents, err := os.ReadDir(BackupDir(env, c, User)); len(ents) != 0 {
				t.Errorf("backups of files that held Parley's text alone: %v %v", ents, err)
			}
		})
	}
}
