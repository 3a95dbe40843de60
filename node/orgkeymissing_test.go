package node_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/node"
)

// An organisation key file that is not there (a path mistyped, or a key
// not made yet) is named, with the command that makes one; the error is
// still fs.ErrNotExist for callers.
func TestOrgKeyMissingSaysHowToMakeOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "acme.orgkey")
	_, err := node.LoadOrgKey(path)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "parley org init NAME --key "+path) {
		t.Fatalf("a missing key: %v", err)
	}
}
