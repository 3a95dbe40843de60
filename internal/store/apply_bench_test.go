package store

import (
	"fmt"
	"testing"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// BenchmarkApplyEvent measures the write of one room event's keys (a value
// of about 1.3 KiB and three small index keys), not fsynced: what a
// receiving node pays before an event is visible.
func BenchmarkApplyEvent(b *testing.B) {
	db, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	val := make([]byte, 1300)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := fmt.Appendf(nil, "e/%016d", i)
		ops := []schema.Op{{Key: k, Val: val}, {Key: append(k, 'a'), Val: []byte("x")}, {Key: append(k, 'b'), Val: []byte("y")}}
		if err := db.Apply(ops, false); err != nil {
			b.Fatal(err)
		}
	}
}
