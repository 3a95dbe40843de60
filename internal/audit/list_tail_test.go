package audit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// countCost counts, until the test ends, the lines parsed (each with its
// signature checked) and the bytes a backward scan reads.
func countCost(t *testing.T) (parsed, read *int) {
	parsed, read = new(int), new(int)
	testHookParse = func() { *parsed++ }
	testHookRead = func(n int) { *read += n }
	t.Cleanup(func() { testHookParse, testHookRead = nil, nil })
	return parsed, read
}

// TestListOfTheLastEntriesCostsOnlyThoseEntries: the dashboard lists the
// audit log's last 50 entries once a second for each open page, and the log
// grows without bound (other nodes' decisions add to it). List used to parse
// and verify the signature of every line of the log to give the last 50, so
// a day of a busy room made each refresh cost seconds. List with a limit now
// reads the log backwards from its end and stops once it has the entries
// asked for: the test counts the lines it parses and the bytes it reads
// through test hooks (no clock), and checks that the entries are those a
// whole read gives.
func TestListOfTheLastEntriesCostsOnlyThoseEntries(t *testing.T) {
	dir := t.TempDir()
	l, _ := newLog(t, dir)
	const n, limit = 600, 50
	appendN(t, l, n)
	all, err := List(dir, time.Time{}, 0)
	if err != nil || len(all) != n {
		t.Fatalf("list all: %d entries, %v", len(all), err)
	}
	st, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	parsed, read := countCost(t)
	es, err := List(dir, time.Time{}, limit)
	if err != nil || len(es) != limit {
		t.Fatalf("list: %d entries, %v", len(es), err)
	}
	t.Logf("the last %d of %d entries (%d bytes): %d lines parsed, %d bytes read", limit, n, st.Size(), *parsed, *read)
	if *parsed != limit {
		t.Fatalf("listing the last %d of %d entries parsed and verified %d lines, want %d", limit, n, *parsed, limit)
	}
	lineLen := st.Size() / n
	if max := int(limit+1)*int(lineLen) + backChunk; *read > max {
		t.Fatalf("listing the last %d entries read %d bytes of %d, want at most %d", limit, *read, st.Size(), max)
	}
	same := func(a, b Listed) bool { return a.N == b.N && a.Hash == b.Hash }
	if !slices.EqualFunc(es, all[n-limit:], same) {
		t.Fatalf("the last %d differ from the end of the whole list", limit)
	}
	// more than one backward read, lines across their bounds
	for _, k := range []int{200, n - 1, n, n + 1} {
		es, err := List(dir, time.Time{}, k)
		if err != nil || !slices.EqualFunc(es, all[max(0, n-k):], same) {
			t.Fatalf("the last %d: %d entries, %v; not the end of the whole list", k, len(es), err)
		}
	}
}

// TestListOfTheLastEntriesChecksWhatItReturns: reading the log backwards, List
// checks each entry it returns (a damaged one among them is an error naming
// ErrDamaged), skips an incomplete last line as a crash's leftover, and
// leaves older damage to Verify; with since it keeps reading past older
// entries until it has enough newer ones.
func TestListOfTheLastEntriesChecksWhatItReturns(t *testing.T) {
	dir := t.TempDir()
	l, self := newLog(t, dir)
	appendN(t, l, 6)
	ls := lines(t, dir)
	// change the second entry: outside the last 3, inside the last 5
	ls[1] = bytes.Replace(ls[1], []byte("peer-1"), []byte("peer-X"), 1)
	ls = append(ls, []byte(`{"entry":{"n":7,"ti`)) // a torn last line
	writeLines(t, dir, ls)
	es, err := List(dir, time.Time{}, 3)
	if err != nil || len(es) != 3 || es[0].N != 4 || es[2].N != 6 {
		t.Fatalf("the last 3 with damage before them: %+v %v", es, err)
	}
	if _, err := List(dir, time.Time{}, 5); !errors.Is(err, ErrDamaged) {
		t.Fatalf("the last 5 with a damaged one among them: %v", err)
	}
	if rep, err := Verify(dir, self); err != nil || rep.OK || rep.Problem.N != 2 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	if _, err := List(dir, time.Now().Add(time.Hour), 3); !errors.Is(err, ErrDamaged) {
		t.Fatalf("since the future reads on to the damaged entry: %v", err)
	}
	clean := t.TempDir()
	l2, _ := newLog(t, clean)
	appendN(t, l2, 4)
	if es, err := List(clean, time.Now().Add(time.Hour), 3); err != nil || len(es) != 0 {
		t.Fatalf("since the future: %+v %v", es, err)
	}
	if es, err := List(clean, time.Now().Add(-time.Hour), 3); err != nil || len(es) != 3 || es[2].N != 4 {
		t.Fatalf("since an hour ago: %+v %v", es, err)
	}
	if es, err := List(t.TempDir(), time.Time{}, 3); err != nil || len(es) != 0 {
		t.Fatalf("no log: %+v %v", es, err)
	}
}

// TestListOfTheLastEntriesRefusesAnOverlongLine: a line over MaxLine among
// those read is damage, as in a whole read.
func TestListOfTheLastEntriesRefusesAnOverlongLine(t *testing.T) {
	dir := t.TempDir()
	l, _ := newLog(t, dir)
	appendN(t, l, 2)
	f, err := os.OpenFile(filepath.Join(dir, FileName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	long := make([]byte, 3*MaxLine)
	for i := range long {
		long[i] = 'a'
	}
	if _, err := f.Write(append(long, '\n')); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := List(dir, time.Time{}, 1); !errors.Is(err, ErrDamaged) {
		t.Fatalf("an overlong last line: %v", err)
	}
	if _, err := List(dir, time.Time{}, 0); !errors.Is(err, ErrDamaged) {
		t.Fatalf("an overlong last line, whole read: %v", err)
	}
}
