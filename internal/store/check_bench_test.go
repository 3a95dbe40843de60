package store

import (
	"fmt"
	"testing"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// BenchmarkCheck measures the check Open runs before Badger opens a
// database: every table of a database of 200,000 events of 300 bytes
// (small values live in the tables) is read and its blocks verified.
func BenchmarkCheck(b *testing.B) {
	dir := b.TempDir()
	db, err := OpenConfig(Config{Dir: dir, MinFree: -1})
	if err != nil {
		b.Fatal(err)
	}
	val := make([]byte, 300)
	for i := 0; i < 200_000; i += 1000 {
		ops := make([]schema.Op, 0, 1000)
		for j := i; j < i+1000; j++ {
			ops = append(ops, schema.Op{Key: []byte(fmt.Sprintf("r/room/e/%08d", j)), Val: val})
		}
		if err := db.Apply(ops, false); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	c, err := Inspect(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d tables", len(c.Tables))
	b.ResetTimer()
	for range b.N {
		if err := Check(dir); err != nil {
			b.Fatal(err)
		}
	}
}
