package install

import "testing"

// A user who installs for themselves and runs `parley doctor` from their
// home folder (a new terminal's working folder, outside any repository)
// has the home folder as the project folder. The project scope's files
// there (.claude/settings.json, .codex/, .gemini/settings.json) are the
// user's own files: the user install must not read as a broken project
// install (`FAIL claude (project): ~/.mcp.json is missing: run `parley
// install claude --project` again`, doctor exiting 1), nor warn about a
// project to trust.
func TestCheckProjectScopeInTheHomeFolderIsNotTheUserInstall(t *testing.T) {
	for _, c := range Clients {
		t.Run(string(c), func(t *testing.T) {
			env := testEnv(t)
			env.ProjectDir = env.Home
			bin := fakeBinary(t)
			o := opts(c, User)
			o.Command = bin
			mustInstall(t, env, o)
			if installed, fs := Check(env, c, User, HookEvents[c]); !installed || len(levels(fs)[Fail]) > 0 {
				t.Fatalf("user install: %v %v", installed, fs)
			}
			installed, fs := Check(env, c, Project, HookEvents[c])
			if l := levels(fs); len(l[Fail]) > 0 || len(l[Warn]) > 0 {
				t.Errorf("no project install was made, but the project check (project folder = home) says: installed=%v %v", installed, fs)
			}
		})
	}
}
