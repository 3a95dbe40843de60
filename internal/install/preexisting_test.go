package install

import (
	"os"
	"path/filepath"
	"testing"
)

// TestUninstallLeavesAnEntryTheInstallFoundInPlace: a project's .mcp.json
// that a teammate committed already holds Parley's entry, exactly as
// Parley writes it. The install changes nothing ("unchanged"); the
// uninstall, which "takes out exactly what install added", should then
// change nothing either. It takes the teammate's entry out of the shared
// file (and the "mcpServers" object around it), so install then uninstall
// is not the identity.
func TestUninstallLeavesAnEntryTheInstallFoundInPlace(t *testing.T) {
	t.Skip("finding: an entry identical to Parley's that was there before the install is removed by the uninstall (install records no undo for it), with its emptied parent; install then uninstall is not the identity")
	env := testEnv(t)
	p := filepath.Join(env.ProjectDir, ".mcp.json")
	orig := "{\n  \"mcpServers\": {\n    \"parley\": {\n      \"type\": \"stdio\",\n      \"command\": \"parley\",\n      \"args\": [\"mcp\", \"--client\", \"claude-code\"]\n    }\n  }\n}\n"
	writeFile(t, p, orig)
	ip := mustInstall(t, env, opts(Claude, Project))
	for _, c := range ip.Changes {
		if c.Path == p {
			t.Fatalf("install changed %s:\n%s", p, c.Diff)
		}
	}
	mustUninstall(t, env, Claude, Project)
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != orig {
		t.Errorf("install then uninstall changed the committed .mcp.json:\nbefore: %q\nafter:  %q", orig, got)
	}
}
