package install

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitGuard: the hook goes into a new or an existing pre-commit file, a
// second install changes nothing, and uninstall gives back the bytes that
// were there (or no file), also when the user changed the file meanwhile.
func TestGitGuard(t *testing.T) {
	for _, c := range []struct {
		name, before string
		exists       bool
		edit         func([]byte) []byte // the user's change after the install
	}{
		{name: "new"},
		{name: "existing", before: "#!/bin/bash\nset -e\nmake lint\n", exists: true},
		{name: "no shebang", before: "make lint\n", exists: true},
		{name: "edited", before: "#!/bin/sh\r\nmake lint\r\n", exists: true,
			edit: func(b []byte) []byte { return append(b, "make test\r\n"...) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			env := Env{Home: base, ProjectDir: filepath.Join(base, "repo"), ParleyHome: filepath.Join(base, "parley")}
			hooks := filepath.Join(base, "repo", ".git", "hooks")
			path := filepath.Join(hooks, "pre-commit")
			if c.exists {
				if err := os.MkdirAll(hooks, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(c.before), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			p, err := InstallGitGuard(env, hooks, "/usr/bin/parley", []string{"--home", "/h"})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Apply(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil || !strings.Contains(string(got), "/usr/bin/parley --home /h guard || exit 1") {
				t.Fatalf("hook: %q, %v", got, err)
			}
			if c.exists && !strings.HasSuffix(string(got), strings.SplitN(c.before, "\n", 2)[1]) && strings.HasPrefix(c.before, "#!") {
				t.Fatalf("the user's lines moved: %q", got)
			}
			if st, _ := os.Stat(path); st.Mode().Perm()&0o100 == 0 {
				t.Fatalf("hook not executable: %v", st.Mode())
			}
			again, err := InstallGitGuard(env, hooks, "/usr/bin/parley", []string{"--home", "/h"})
			if err != nil || again.Changed() {
				t.Fatalf("second install: %+v, %v", again, err)
			}
			want := []byte(c.before)
			if c.edit != nil {
				edited := c.edit(got)
				if err := os.WriteFile(path, edited, 0o700); err != nil {
					t.Fatal(err)
				}
				want = c.edit([]byte(c.before))
			}
			u, err := UninstallGitGuard(env, hooks)
			if err != nil {
				t.Fatal(err)
			}
			if err := u.Apply(); err != nil {
				t.Fatal(err)
			}
			after, err := os.ReadFile(path)
			if !c.exists {
				if !os.IsNotExist(err) {
					t.Fatalf("the hook Parley made is still there: %q %v", after, err)
				}
				if _, err := os.Stat(hooks); !os.IsNotExist(err) {
					t.Fatalf("the folders Parley made are still there: %v", err)
				}
				return
			}
			if !bytes.Equal(after, want) {
				t.Fatalf("after uninstall %q, want %q", after, want)
			}
		})
	}
}
