package install

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Before, with the home folder as the project folder (a new terminal's
// working folder, outside any repository), the project scope's files
// there (.claude/settings.json, .codex/, .gemini/settings.json) were read
// as a project install although they are the user's own: a clean user
// install read as a broken project install (`FAIL claude (project):
// ~/.mcp.json is missing`, doctor exiting 1), with a warning about a
// project to trust (Codex's twice); now the project scope there is no
// project: Check finds no install in it and says nothing, and Install
// and Uninstall refuse it (ErrHomeProject) and change nothing, the home
// folder reached directly or through a link.
func TestCheckProjectScopeInTheHomeFolderIsNotTheUserInstall(t *testing.T) {
	for _, c := range Clients {
		t.Run(string(c), func(t *testing.T) {
			env := testEnv(t)
			bin := fakeBinary(t)
			o := opts(c, User)
			o.Command = bin
			env.ProjectDir = env.Home
			mustInstall(t, env, o)
			if installed, fs := Check(env, c, User, HookEvents[c]); !installed || len(levels(fs)[Fail]) > 0 {
				t.Fatalf("user install: %v %v", installed, fs)
			}
			link := filepath.Join(t.TempDir(), "home-link")
			if err := os.Symlink(env.Home, link); err != nil {
				t.Fatal(err)
			}
			for _, dir := range []string{env.Home, link} {
				penv := env
				penv.ProjectDir = dir
				if installed, fs := Check(penv, c, Project, HookEvents[c]); installed || len(fs) > 0 {
					t.Errorf("no project install was made, but the project check (project folder %s = home) says: installed=%v %v", dir, installed, fs)
				}
				if _, err := Install(penv, opts(c, Project)); !errors.Is(err, ErrHomeProject) {
					t.Errorf("install --project in %s: %v, want ErrHomeProject", dir, err)
				}
				if _, err := Uninstall(penv, c, Project); !errors.Is(err, ErrHomeProject) {
					t.Errorf("uninstall --project in %s: %v, want ErrHomeProject", dir, err)
				}
			}
			if installed, fs := Check(env, c, User, HookEvents[c]); !installed || len(levels(fs)[Fail]) > 0 {
				t.Fatalf("user install after the refusals: %v %v", installed, fs)
			}
		})
	}
}

// Before, a project whose .codex folder is CODEX_HOME took the user's
// Codex config for the project's (and checked it twice, each warning
// said twice); now its Codex project scope is refused like the home
// folder's, and the other clients' project scopes there stay a project's.
func TestProjectWhoseCodexFolderIsCodexHomeIsNoCodexProject(t *testing.T) {
	env := testEnv(t)
	env.CodexHome = filepath.Join(env.ProjectDir, ".codex")
	if _, err := Install(env, opts(Codex, Project)); !errors.Is(err, ErrHomeProject) {
		t.Errorf("install codex --project: %v, want ErrHomeProject", err)
	}
	if installed, fs := Check(env, Codex, Project, HookEvents[Codex]); installed || len(fs) > 0 {
		t.Errorf("codex project check: installed=%v %v", installed, fs)
	}
	mustInstall(t, env, opts(Claude, Project))
}
