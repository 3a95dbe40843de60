package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A config file saved with a UTF-8 byte order mark (as some Windows editors
// save JSON) is refused with "line 1, column 2: not valid JSON: invalid
// character 'ï' looking for beginning of value": the 'ï' is the first byte
// of the mark read as Latin-1, and the user sees no such character in the
// file. The refusal should name the byte order mark (or the mark be kept
// and the file edited after it).
func TestInstallNamesAByteOrderMark(t *testing.T) {
	env := testEnv(t)
	settings := filepath.Join(env.Home, ".claude", "settings.json")
	writeFile(t, settings, "\ufeff{\n  \"model\": \"opus\"\n}\n")
	p, err := Install(env, opts(Claude, User))
	if err == nil {
		err = p.Apply()
		if err == nil {
			b, rerr := os.ReadFile(settings)
			if rerr != nil || !strings.HasPrefix(string(b), "\ufeff{") || !strings.Contains(string(b), `"model": "opus"`) {
				t.Fatalf("installed, but the file is now %q (%v)", b, rerr)
			}
			return
		}
	}
	if strings.Contains(err.Error(), "ï") || !strings.Contains(strings.ToLower(err.Error()), "byte order mark") {
		t.Fatalf("install over a settings file with a byte order mark: %v; want it named", err)
	}
}
