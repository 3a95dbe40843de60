package store

import (
	"encoding/binary"
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

// BenchmarkApply: what one write costs, by the number of keys it holds. A
// room event as rooms stores it (one live event per batch, the usual case
// at a receiver) is 8 keys: the event (1.3 KiB, in the value log), its
// place in display order, head added and removed, author's seq, version
// vector, arrival and the agent's record. Reports µs and allocations per
// key besides the totals.
func BenchmarkApply(b *testing.B) {
	for _, keys := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			db, err := OpenConfig(Config{Dir: b.TempDir(), MinFree: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			wire := make([]byte, 1300)
			ops := make([]schema.Op, keys)
			b.ReportAllocs()
			n := uint64(0)
			for b.Loop() {
				for k := range ops {
					n++
					key := binary.BigEndian.AppendUint64([]byte("r/0123456789abcdefghijklmnop/x/"), n)
					val := schema.BE8(n)
					if k == 0 {
						val = wire
					}
					ops[k] = schema.Op{Key: key, Val: val}
				}
				if err := db.Apply(ops, false); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*keys), "µs/key")
		})
	}
}
