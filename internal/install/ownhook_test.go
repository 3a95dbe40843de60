package install

import (
	"path/filepath"
	"testing"
)

// TestInstallWithoutAnEventKeepsTheUsersOwnParleyHook: before, a hook the
// user wrote by hand that runs `parley hook claude SessionStart`, in a group
// of theirs, was taken out with no record of it by an install that left
// SessionStart out, so install then uninstall did not give the file back;
// now an install takes out only the hooks the record says Parley wrote, and
// an uninstall with a record of the file only those of the events the
// record names.
func TestInstallWithoutAnEventKeepsTheUsersOwnParleyHook(t *testing.T) {
	env := testEnv(t)
	p := filepath.Join(env.Home, ".claude", "settings.json")
	orig := "{\n  \"hooks\": {\n    \"SessionStart\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"echo hi\"}, {\"type\": \"command\", \"command\": \"parley hook claude SessionStart\"}]}\n    ]\n  }\n}\n"
	writeFile(t, p, orig)
	mustInstall(t, env, Options{Client: Claude, Scope: User, Command: testBin, Hooks: []string{"Stop"}})
	mustUninstall(t, env, Claude, User)
	if got := string(mustRead(t, p)); got != orig {
		t.Errorf("install then uninstall changed %s:\nwant %s\ngot  %s", p, orig, got)
	}
}
