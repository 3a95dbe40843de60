package node

import (
	"archive/zip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// writeTestBackup writes a backup of a one-key database for a new key, as
// WriteBackup lays it out, and returns its path.
func writeTestBackup(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	keyPath := filepath.Join(dir, KeyFileName)
	priv, err := identity.LoadOrCreate(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	id, err := identity.PeerID(priv)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(dir, "db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Apply([]schema.Op{{Key: schema.KeyNode(), Val: []byte(id)}}, true); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "node.backup")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	man, _ := json.Marshal(backupManifest{Format: backupFormat, Peer: id.String(), Schema: schema.Version, Made: time.Now()})
	key, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{backupManifestName: man, KeyFileName: key} {
		w, _ := zw.Create(name)
		w.Write(b) //nolint:errcheck // a buffer's
	}
	w, _ := zw.Create(backupDataName)
	if err := db.Backup(w); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

// A restore onto a disk without room for the backup is refused before it
// writes anything: no home, no half-made one beside it.
func TestRestoreRefusesADiskWithoutRoom(t *testing.T) {
	backup := writeTestBackup(t)
	parent := t.TempDir()
	home := filepath.Join(parent, "h")
	defer func(f func(string) (int64, error)) { restoreFree = f }(restoreFree)
	restoreFree = func(string) (int64, error) { return 10 << 20, nil }
	_, err := Restore(home, backup)
	if err == nil || !strings.Contains(err.Error(), "10 MiB free") {
		t.Fatalf("a restore onto a disk with 10 MiB free: %v", err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Fatalf("the refused restore left %v", ents)
	}
	restoreFree = func(string) (int64, error) { return 1 << 40, nil }
	if _, err := Restore(home, backup); err != nil {
		t.Fatalf("a restore with room: %v", err)
	}
}

// TestRestoreRemovesWhatAKilledRestoreLeft: a restore killed before it
// renamed its half-made home into place left it beside the home, holding
// a copy of the node's private key, for good; the next restore to that
// home removes it.
func TestRestoreRemovesWhatAKilledRestoreLeft(t *testing.T) {
	backup := writeTestBackup(t)
	parent := t.TempDir()
	home := filepath.Join(parent, "h")
	left := filepath.Join(parent, "h.restoring-123456")
	if err := os.MkdirAll(left, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, KeyFileName), []byte("a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(home, backup); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); err == nil {
		t.Fatalf("%s, left by a killed restore with a copy of the key, is still there after the next restore", left)
	}
}
