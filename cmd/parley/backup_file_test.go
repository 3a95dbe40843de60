package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A backup's FILE is checked before the node is asked: a FILE in a folder
// that does not exist names that folder (not the copy's temporary name),
// and a FILE that is a link, even one to nothing, exists (--force replaces
// it).
func TestCLIBackupFileChecked(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	home := filepath.Join(base, "h")
	missing := filepath.Join(base, "nope")
	_, errs, code := run(t, "--home", home, "backup", filepath.Join(missing, "node.backup"))
	if code == 0 || !strings.Contains(errs, missing) || strings.Contains(errs, "partial") {
		t.Fatalf("a backup into a missing folder: exit %d, %q; want the folder named", code, errs)
	}
	link := filepath.Join(base, "link.backup")
	must(t, os.Symlink(filepath.Join(base, "nothing"), link))
	_, errs, code = run(t, "--home", home, "backup", link)
	if code == 0 || !strings.Contains(errs, "exists") || !strings.Contains(errs, "--force") {
		t.Fatalf("a backup over a link to nothing: exit %d, %q; want it refused as existing", code, errs)
	}
}
