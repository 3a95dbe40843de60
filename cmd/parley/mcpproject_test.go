package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// An agent whose working folder is in no git repository is told to name
// the project in its call: the tool's argument `project`. It was told
// "--project KEY" too, a flag of the CLI's board commands; `parley mcp
// --project` takes a folder, not a key, so an agent (or its user) that
// followed it named the project as a folder that does not exist.
func TestMCPBoardOutsideARepositoryNamesTheToolArgument(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	cs := mcpClient(t, home, "norepo") // its project folder, /src/norepo, is no repository
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"parley_board", map[string]any{}},
		{"parley_claim", map[string]any{"paths": []string{"a.go"}, "note": "editing a.go"}},
	} {
		r := callTool(t, cs, call.tool, call.args)
		if !r.Err {
			t.Fatalf("%s outside a repository: no error: %s", call.tool, r.Text)
		}
		if strings.Contains(r.Text, "--project") || !strings.Contains(r.Text, `"project"`) {
			t.Errorf("%s outside a repository: %q; want it to name the tool's \"project\" argument, not a flag", call.tool, r.Text)
		}
	}
}
