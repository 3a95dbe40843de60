package audit

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

func newLog(t testing.TB, dir string) (*Log, peer.ID) {
	t.Helper()
	priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(dir, priv)
	if err != nil {
		t.Fatal(err)
	}
	return l, l.self
}

func appendN(t testing.TB, l *Log, n int) {
	t.Helper()
	for i := range n {
		if _, err := l.Append(Record{Actor: "human", Action: ContactApprove, Subject: fmt.Sprintf("peer-%d", i),
			Detail: map[string]string{"expires": "90d", "note": "<b>&</b> \u00e9"}}); err != nil {
			t.Fatal(err)
		}
	}
}

func lines(t testing.TB, dir string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(b, []byte{'\n'})
}

func writeLines(t testing.TB, dir string, ls [][]byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, FileName), bytes.Join(ls, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestAppendListVerify(t *testing.T) {
	dir := t.TempDir()
	l, self := newLog(t, dir)
	rep, err := Verify(dir, self)
	if err != nil || !rep.OK || rep.Entries != 0 {
		t.Fatalf("empty log: %+v %v", rep, err)
	}
	appendN(t, l, 5)
	es, err := List(dir, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 5 {
		t.Fatalf("listed %d entries, want 5", len(es))
	}
	for i, e := range es {
		if e.N != uint64(i+1) || e.Node != self.String() || e.Subject != fmt.Sprintf("peer-%d", i) || e.Detail["note"] != "<b>&</b> \u00e9" {
			t.Fatalf("entry %d: %+v", i, e)
		}
		if i > 0 && e.Prev != es[i-1].Hash {
			t.Fatalf("entry %d does not chain: prev %s, hash before %s", i, e.Prev, es[i-1].Hash)
		}
	}
	if es[0].Prev != "" {
		t.Fatalf("first entry has prev %q", es[0].Prev)
	}
	last, err := List(dir, time.Time{}, 2)
	if err != nil || len(last) != 2 || last[1].N != 5 {
		t.Fatalf("last 2: %+v %v", last, err)
	}
	future, err := List(dir, time.Now().Add(time.Hour), 0)
	if err != nil || len(future) != 0 {
		t.Fatalf("since the future: %+v %v", future, err)
	}
	rep, err = Verify(dir, self)
	if err != nil || !rep.OK || rep.Entries != 5 || rep.Head != es[4].Hash {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	st, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("log mode: %v %v", st.Mode(), err)
	}
}

func TestVerifyFindsTampering(t *testing.T) {
	other, _ := newLog(t, t.TempDir())
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
		wantN  uint64
		reason string
	}{
		{"edited text", func(t *testing.T, dir string) {
			ls := lines(t, dir)
			ls[2] = bytes.Replace(ls[2], []byte("peer-2"), []byte("peer-X"), 1)
			writeLines(t, dir, ls)
		}, 3, "signature"},
		{"deleted entry", func(t *testing.T, dir string) {
			ls := lines(t, dir)
			writeLines(t, dir, append(ls[:1:1], ls[2:]...))
		}, 2, "numbered 3"},
		{"swapped entries", func(t *testing.T, dir string) {
			ls := lines(t, dir)
			ls[1], ls[2] = ls[2], ls[1]
			writeLines(t, dir, ls)
		}, 2, "numbered 3"},
		{"cut from the end", func(t *testing.T, dir string) {
			ls := lines(t, dir)
			writeLines(t, dir, ls[:3])
		}, 4, "cut from the end"},
		{"entry of another node", func(t *testing.T, dir string) {
			if _, err := other.Append(Record{Actor: "x", Action: Install, Subject: "claude"}); err != nil {
				t.Fatal(err)
			}
			ol := lines(t, filepath.Dir(other.path))
			ls := lines(t, dir)
			ls[0] = ol[0]
			writeLines(t, dir, ls)
		}, 1, "not by this node"},
		{"garbage line", func(t *testing.T, dir string) {
			ls := lines(t, dir)
			ls[3] = []byte("{\"entry\":{},\"sig\":\"\"}\n")
			writeLines(t, dir, ls)
		}, 4, ""},
		{"head edited", func(t *testing.T, dir string) {
			p := filepath.Join(dir, HeadName)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, bytes.Replace(b, []byte(`"n":5`), []byte(`"n":9`), 1), 0o600); err != nil {
				t.Fatal(err)
			}
		}, 5, "head file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, self := newLog(t, dir)
			appendN(t, l, 5)
			tc.damage(t, dir)
			rep, err := Verify(dir, self)
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK || rep.Problem == nil {
				t.Fatalf("damage not found: %+v", rep)
			}
			if rep.Problem.N != tc.wantN || !strings.Contains(rep.Problem.Reason, tc.reason) {
				t.Fatalf("problem %s, want entry %d with %q", rep.Problem, tc.wantN, tc.reason)
			}
		})
	}
}

func TestIncompleteLastLineIsCutOnAppend(t *testing.T) {
	dir := t.TempDir()
	l, self := newLog(t, dir)
	appendN(t, l, 3)
	f, err := os.OpenFile(filepath.Join(dir, FileName), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"entry":{"n":4,"ti`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rep, err := Verify(dir, self)
	if err != nil || rep.OK || rep.Problem.N != 4 || !strings.Contains(rep.Problem.Reason, "incomplete") {
		t.Fatalf("verify with a torn line: %+v %v", rep, err)
	}
	if es, err := List(dir, time.Time{}, 0); err != nil || len(es) != 3 {
		t.Fatalf("list with a torn line: %d %v", len(es), err)
	}
	appendN(t, l, 1)
	rep, err = Verify(dir, self)
	if err != nil || !rep.OK || rep.Entries != 4 {
		t.Fatalf("after the next append: %+v %v", rep, err)
	}
}

func TestConcurrentWritersKeepOneChain(t *testing.T) {
	dir := t.TempDir()
	priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// Two Logs on one home stand for the node and a command-line tool: they
	// share nothing but the file and its lock.
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for w := range 2 {
		l, err := New(dir, priv)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				if _, err := l.Append(Record{Actor: fmt.Sprint("writer-", w), Action: RoomInvite, Subject: fmt.Sprint(i)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	self, _ := peer.IDFromPrivateKey(priv)
	rep, err := Verify(dir, self)
	if err != nil || !rep.OK || rep.Entries != 80 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

func TestBadRecords(t *testing.T) {
	dir := t.TempDir()
	l, self := newLog(t, dir)
	for _, r := range []Record{
		{Action: ""}, {Action: "Contact.Approve"}, {Action: "contact..x"}, {Action: "a b"},
		{Action: "x", Detail: func() map[string]string {
			m := map[string]string{}
			for i := range 20 {
				m[fmt.Sprint(i)] = "v"
			}
			return m
		}()},
	} {
		if _, err := l.Append(r); !errors.Is(err, ErrBadRecord) {
			t.Fatalf("%+v: err %v, want ErrBadRecord", r, err)
		}
	}
	long := strings.Repeat("é", 5000) + "\xff"
	e, err := l.Append(Record{Actor: long, Action: "x.y", Subject: long, Detail: map[string]string{"k": long}})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Actor) > maxField || len(e.Detail["k"]) > maxValue || !strings.HasSuffix(e.Subject, "…") {
		t.Fatalf("long fields not cut: %d %d", len(e.Actor), len(e.Detail["k"]))
	}
	if rep, err := Verify(dir, self); err != nil || !rep.OK {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

func FuzzVerify(f *testing.F) {
	dir := f.TempDir()
	l, _ := newLog(f, dir)
	appendN(f, l, 3)
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("{}\n"))
	f.Add([]byte(`{"entry":{"n":1},"sig":"AA=="}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, FileName), data, 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := Verify(d, "")
		if err != nil {
			t.Fatal(err)
		}
		es, lerr := List(d, time.Time{}, 0)
		if rep.OK && lerr != nil {
			t.Fatalf("verify OK but list fails: %v", lerr)
		}
		if rep.OK && uint64(len(es)) != rep.Entries {
			t.Fatalf("verify counts %d, list %d", rep.Entries, len(es))
		}
		if last, err := List(d, time.Time{}, 2); rep.OK && (err != nil || len(last) != min(2, len(es)) ||
			len(last) > 0 && last[len(last)-1].Hash != es[len(es)-1].Hash) {
			t.Fatalf("verify OK but the last 2 differ from the end of the whole list: %d %v", len(last), err)
		}
	})
}
