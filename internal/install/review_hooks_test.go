package install

import (
	"path/filepath"
	"testing"
)

// TestReviewInstallWithoutAnEventKeepsTheUsersOwnParleyHook: a hook the user
// wrote by hand that runs `parley hook claude SessionStart`, in a group of
// theirs, is replaced (its text recorded, and put back by uninstall) when the
// install registers SessionStart; but an install that leaves SessionStart out
// takes the user's hook out with no record of it, so install then uninstall
// does not give the file back.
func TestReviewInstallWithoutAnEventKeepsTheUsersOwnParleyHook(t *testing.T) {
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
