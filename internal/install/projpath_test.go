package install

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// TestProjectUninstallFromTheLinkedPathFindsTheRecord: before, the record
// of a project install was named by the project folder's path as given
// (recordPath hashed env.ProjectDir), not by the folder, so the same project
// reached through a symbolic link (~/src -> /Volumes/work/src; /tmp ->
// /private/tmp on macOS; the CLI takes the working folder as $PWD gives it)
// had no record: the uninstall left the .mcp.json Parley created, and took
// the user's "mcpServers": {} with Parley's entry; now the project folder is
// resolved, for the record's name and the files' paths.
func TestProjectUninstallFromTheLinkedPathFindsTheRecord(t *testing.T) {
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

// TestProjectRecordNamedByTheLinkedPathIsStillFound: a record an earlier
// Parley named by the project folder as given, through a link, with the
// files' paths through the link too, is still found and used by an
// uninstall through that link.
func TestProjectRecordNamedByTheLinkedPathIsStillFound(t *testing.T) {
	env := testEnv(t)
	link := filepath.Join(filepath.Dir(env.ProjectDir), "project-link")
	if err := os.Symlink(env.ProjectDir, link); err != nil {
		t.Fatal(err)
	}
	gemini := filepath.Join(env.ProjectDir, ".gemini", "settings.json")
	orig := "{\n  \"mcpServers\": {}\n}\n"
	writeFile(t, gemini, orig)
	mustInstall(t, env, opts(Gemini, Project))
	// Make the record as an earlier Parley wrote it through the link.
	rp := recordPath(env, Gemini, Project)
	rec, err := loadRecord(rp)
	if err != nil || rec == nil {
		t.Fatalf("no record: %v", err)
	}
	for i := range rec.Files {
		rel, _ := filepath.Rel(env.ProjectDir, rec.Files[i].Path)
		rec.Files[i].Path = filepath.Join(link, rel)
	}
	rec.Project = link
	h := sha256.Sum256([]byte(link))
	old := filepath.Join(env.ParleyHome, "install", "gemini-project-"+hex.EncodeToString(h[:6])+".json")
	if err := saveRecord(old, rec); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(rp); err != nil {
		t.Fatal(err)
	}
	viaLink := env
	viaLink.ProjectDir = link
	mustUninstall(t, viaLink, Gemini, Project)
	if got := string(mustRead(t, gemini)); got != orig {
		t.Errorf("%s after install and uninstall: %q, want %q", gemini, got, orig)
	}
	if _, err := os.Stat(old); err == nil {
		t.Errorf("the record %s is left after the uninstall", old)
	}
}
