package audit

import (
	"strings"
	"testing"
	"time"
)

// An append after a damaged last line is recorded, numbered after it and
// chained to its bytes, with the damage said in the entry; Verify still
// names the damaged line, and a listing of the newest entries reads them.
// Before, every append after it was refused (ErrDamaged) and the node
// recorded nothing more.
func TestAppendAfterADamagedLastLine(t *testing.T) {
	dir := t.TempDir()
	l, self := newLog(t, dir)
	appendN(t, l, 3)
	ls := lines(t, dir)
	ls[2] = []byte(strings.Replace(string(ls[2]), `"human"`, `"humane"`, 1)) // its signature no longer verifies
	writeLines(t, dir, ls)
	got, err := l.Append(Record{Actor: "human", Action: AgentMute, Subject: "alice"})
	if err != nil {
		t.Fatalf("an append after a damaged last line: %v", err)
	}
	if got.N != 4 || got.Prev != hashLine([]byte(strings.TrimSuffix(string(ls[2]), "\n"))) || got.Detail["after_damaged"] == "" {
		t.Fatalf("the entry after the damage: n %d prev %s detail %v", got.N, got.Prev, got.Detail)
	}
	if _, err := l.Append(Record{Actor: "human", Action: AgentUnmute, Subject: "alice"}); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(dir, self)
	if err != nil || rep.OK || rep.Problem.N != 3 || rep.Entries != 2 {
		t.Fatalf("Verify after the damage: %+v %v", rep, err)
	}
	es, err := List(dir, time.Time{}, 2)
	if err != nil || len(es) != 2 || es[0].Action != AgentMute || es[1].N != 5 || es[1].Prev != es[0].Hash {
		t.Fatalf("the newest entries: %+v %v", es, err)
	}
}
