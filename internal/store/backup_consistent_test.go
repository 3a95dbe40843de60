package store

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// A backup taken while writes go on is the database as one read sees it:
// two keys written together, at either end of a database large enough to
// be copied in several ranges, are in the copy at the same write.
func TestBackupIsOneRead(t *testing.T) {
	db, err := Open(t.TempDir(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Apply([]schema.Op{{Key: schema.KeyNode(), Val: []byte("node-a")}}, false); err != nil {
		t.Fatal(err)
	}
	for b := range 8 {
		var ops []schema.Op
		for i := range 5000 {
			ops = append(ops, schema.Op{Key: []byte(fmt.Sprintf("m/%06d", b*5000+i)), Val: []byte("x")})
		}
		if err := db.Apply(ops, false); err != nil {
			t.Fatal(err)
		}
	}
	first, last := []byte("0/pair"), []byte("z/pair")
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			v := []byte(strconv.Itoa(i))
			if err := db.Apply([]schema.Op{{Key: first, Val: v}, {Key: last, Val: v}}, false); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()
	for range 8 {
		var copy bytes.Buffer
		if err := db.Backup(&copy); err != nil {
			t.Fatal(err)
		}
		dst := t.TempDir()
		if err := Restore(dst, &copy, []byte("node-a")); err != nil {
			t.Fatal(err)
		}
		got, err := Open(dst, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		a, errA := got.Get(first)
		z, errZ := got.Get(last)
		got.Close()
		if (errA != nil) != (errZ != nil) || !bytes.Equal(a, z) {
			t.Fatalf("a backup holds two keys written together at different writes: %q (%v) and %q (%v)", a, errA, z, errZ)
		}
	}
}
