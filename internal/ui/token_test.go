package ui

import (
	"os"
	"path/filepath"
	"testing"
)

// A home's token is made once and kept; a token file that other users may
// read is replaced by a new one, kept to its owner.
func TestLoadTokenReplacesAnOpenFile(t *testing.T) {
	home := t.TempDir()
	tok, replaced, err := LoadToken(home)
	if err != nil || replaced || len(tok) != 64 {
		t.Fatalf("a new token: %q %v %v", tok, replaced, err)
	}
	again, replaced, err := LoadToken(home)
	if err != nil || replaced || again != tok {
		t.Fatalf("the token again: %q %v %v (was %q)", again, replaced, err, tok)
	}
	path := filepath.Join(home, TokenFileName)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	fresh, replaced, err := LoadToken(home)
	if err != nil || !replaced || fresh == tok || len(fresh) != 64 {
		t.Fatalf("a token file open to others: %q replaced=%v %v (was %q)", fresh, replaced, err, tok)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the new token file: %v %v", fi.Mode(), err)
	}
}
