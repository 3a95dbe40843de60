package install

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestInstallKeepsTheFilesOwner: before, a config file owned by another
// user (an install run with sudo, or by an admin for a user) was replaced by
// a copy owned by the runner, which the client that owns it could no longer
// read; now the new text gets the file's owner and group before the rename.
func TestInstallKeepsTheFilesOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the file another owner")
	}
	env := testEnv(t)
	p := filepath.Join(env.Home, ".claude.json")
	writeFile(t, p, "{\n  \"theme\": \"dark\"\n}\n")
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	owner := func() (uint32, uint32) {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		s := st.Sys().(*syscall.Stat_t)
		return s.Uid, s.Gid
	}
	mustInstall(t, env, Options{Client: Claude, Scope: User, Command: testBin})
	if uid, gid := owner(); uid != 1000 || gid != 1000 {
		t.Errorf("after install %s is owned by %d:%d, want 1000:1000", p, uid, gid)
	}
	mustUninstall(t, env, Claude, User)
	if uid, gid := owner(); uid != 1000 || gid != 1000 {
		t.Errorf("after uninstall %s is owned by %d:%d, want 1000:1000", p, uid, gid)
	}
}

// TestInstallKeepsTheFilesGroup: before, a project file shared through a
// group (chgrp dev .mcp.json) got the user's primary group from the rename;
// now it keeps its group.
func TestInstallKeepsTheFilesGroup(t *testing.T) {
	groups, err := os.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	other := -1
	for _, g := range groups {
		if g != os.Getegid() {
			other = g
			break
		}
	}
	if other < 0 {
		if os.Geteuid() != 0 {
			t.Skip("no second group to give the file")
		}
		other = 1000
	}
	env := testEnv(t)
	p := filepath.Join(env.ProjectDir, ".mcp.json")
	writeFile(t, p, "{\n  \"mcpServers\": {}\n}\n")
	if err := os.Chown(p, -1, other); err != nil {
		t.Fatal(err)
	}
	mustInstall(t, env, opts(Claude, Project))
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if gid := st.Sys().(*syscall.Stat_t).Gid; int(gid) != other {
		t.Errorf("after install %s has group %d, want %d", p, gid, other)
	}
}

// TestApplyPutsTheFilesBackWhenTheRecordCannotBeWritten: before, when the
// record could not be written (a full disk, the last write of Apply), Apply
// reported the install failed but left Parley's entries in the user's files
// with no record of what they replaced or created, so the uninstall that
// followed took the user's empty "mcpServers": {} with Parley's entry and
// left the settings file Parley created; now Apply puts each file back as it
// was (and removes the files it created) when the record cannot be written.
func TestApplyPutsTheFilesBackWhenTheRecordCannotBeWritten(t *testing.T) {
	env := testEnv(t)
	p := filepath.Join(env.Home, ".claude.json")
	orig := "{\n  \"mcpServers\": {}\n}\n"
	writeFile(t, p, orig)
	settings := filepath.Join(env.Home, ".claude", "settings.json")
	plan, err := Install(env, Options{Client: Claude, Scope: User, Command: testBin, Hooks: HookEvents[Claude]})
	if err != nil {
		t.Fatal(err)
	}
	// The record cannot be written: its name is taken by a folder.
	if err := os.MkdirAll(plan.recPath, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := plan.Apply(); err == nil {
		t.Fatal("Apply succeeded although the record could not be written")
	}
	if got := string(mustRead(t, p)); got != orig {
		t.Errorf("Apply failed, yet %s was changed and left so:\n%s", p, got)
	}
	if _, err := os.Stat(settings); err == nil {
		t.Errorf("Apply failed, yet %s was created and left", settings)
	}
	// The user then uninstalls to be rid of it.
	if err := os.RemoveAll(plan.recPath); err != nil {
		t.Fatal(err)
	}
	mustUninstall(t, env, Claude, User)
	if got := string(mustRead(t, p)); got != orig {
		t.Errorf("after the uninstall %s is %q, want %q", p, got, orig)
	}
	if _, err := os.Stat(settings); err == nil {
		t.Errorf("after the uninstall %s, which Parley created, is still there", settings)
	}
}
