package store

import (
	"crypto/rand"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// TestPiecesAreReclaimed: records of ~4.9 KB written over and over in
// pieces (schema.SetPieces), the oldest deleted as a capped book does, stay
// in the tables, which compaction keeps near what is live; the value logs
// stay empty.
func TestPiecesAreReclaimed(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	const live, writes, size = 100, 3000, 4900
	key := func(i int) []byte { return schema.Contact([]byte(fmt.Sprintf("stranger-%06d", i))) }
	for i := range writes {
		v := make([]byte, size)
		_, _ = rand.Read(v)
		v[0] = 0xa5
		ops, err := schema.SetPieces(key(i), v)
		if err != nil {
			t.Fatal(err)
		}
		if i >= live {
			ops = append(ops, schema.DeletePieces(key(i-live))...)
		}
		if err := db.Apply(ops, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	sum := func(ext string) int64 {
		n := int64(0)
		for name, size := range sizes(t, dir) {
			if filepath.Ext(name) == ext {
				n += size
			}
		}
		return n
	}
	vlog, sst := sum(".vlog"), sum(".sst")
	t.Logf("%d records of %d bytes written, %d live (%d bytes): value logs %d bytes, tables %d bytes", writes, size, live, live*size, vlog, sst)
	if vlog > 1<<10 {
		t.Errorf("the value logs hold %d bytes", vlog)
	}
	// Two memtables and a few tables not yet compacted: 3.4 MB after
	// 3,000 writes, 2.4 MB after 9,000 (44 MB written).
	if bound := int64(6 << 20); sst > bound {
		t.Errorf("the tables hold %d bytes of %d written, %d live (bound %d)", sst, writes*size, live*size, bound)
	}
	db = openDB(t, dir)
	defer db.Close()
	j := schema.NewJoiner(schema.ContactPrefix())
	if err := db.Scan(schema.ContactPrefix(), func(k, v []byte) bool { j.Add(k, v); return true }); err != nil {
		t.Fatal(err)
	}
	if recs, damaged := j.Done(); len(recs) != live || len(damaged) > 0 {
		t.Fatalf("%d records read back, damaged: %v", len(recs), damaged)
	}
}
