package nodetest

import (
	"os"
	"path/filepath"

	"github.com/parley-mesh/parley/node"
)

// CopyData copies node i's database folder (the node is stopped: Crash it
// first) and returns where the copy is: an older copy of the node's home,
// for RestoreData to put back later.
func (nt *Net) CopyData(i int) string {
	nt.t.Helper()
	if nt.Node(i) != nil {
		nt.t.Fatalf("nodetest: node %d is running; Crash it before copying its data", i)
	}
	dst := filepath.Join(nt.t.TempDir(), "data")
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(nt.Home(i), node.DataDirName))); err != nil {
		nt.t.Fatalf("nodetest: copy node %d's data: %v", i, err)
	}
	return dst
}

// RestoreData puts a copy made by CopyData back in place of node i's
// database folder (the node is stopped), as a user who restores a home from
// a backup does.
func (nt *Net) RestoreData(i int, copied string) {
	nt.t.Helper()
	if nt.Node(i) != nil {
		nt.t.Fatalf("nodetest: node %d is running; Crash it before restoring its data", i)
	}
	data := filepath.Join(nt.Home(i), node.DataDirName)
	if err := os.RemoveAll(data); err != nil {
		nt.t.Fatalf("nodetest: remove node %d's data: %v", i, err)
	}
	if err := os.CopyFS(data, os.DirFS(copied)); err != nil {
		nt.t.Fatalf("nodetest: restore node %d's data: %v", i, err)
	}
}
