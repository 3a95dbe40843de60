package install

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReviewProjectUninstallFromTheLinkedPathFindsTheRecord: the record of a
// project install is named by the project folder's path as given
// (recordPath hashes env.ProjectDir), not by the folder. The same project
// reached through a symbolic link (~/src -> /Volumes/work/src; /tmp ->
// /private/tmp on macOS; the CLI takes the working folder as $PWD gives it)
// has no record: the uninstall leaves the .mcp.json Parley created, and the
// user's "mcpServers": {} is taken out with Parley's entry.
func TestReviewProjectUninstallFromTheLinkedPathFindsTheRecord(t *testing.T) {
	env := testEnv(t)
	link := filepath.Join(filepath.Dir(env.ProjectDir), "project-link")
	if err := os.Symlink(env.ProjectDir, link); err != nil {
		t.Fatal(err)
	}
	gemini := filepath.Join(env.ProjectDir, ".gemini", "settings.json")
	origGemini := "{\n  \"mcpServers\": {}\n}\n"
	writeFile(t, gemini, origGemini)
	mcp := filepath.Join(env.ProjectDir, ".mcp.json")

	viaLink := env
	viaLink.ProjectDir = link
	mustInstall(t, viaLink, opts(Claude, Project))
	mustInstall(t, viaLink, opts(Gemini, Project))
	if _, err := os.Stat(mcp); err != nil {
		t.Fatalf("install made no %s: %v", mcp, err)
	}

	mustUninstall(t, env, Claude, Project)
	mustUninstall(t, env, Gemini, Project)
	if b, err := os.ReadFile(mcp); err == nil {
		t.Errorf("%s, which Parley created, is left after the uninstall: %q", mcp, b)
	}
	if got := string(mustRead(t, gemini)); got != origGemini {
		t.Errorf("%s after install and uninstall: %q, want %q", gemini, got, origGemini)
	}
}
