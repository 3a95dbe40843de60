package wake_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// A wake text shows its first item in full and a few more a line each;
// the others it only counts ("… and 7 more"). A terminal route counts an
// item as reached (pasted: not pasted again, its human not told) only
// once it pasted it whole (see itemState.pasted): an ask only counted in a
// paste is pasted at a later idle moment, or its human is told. Found:
// every item handed to the paste counts as pasted, those only counted
// too, so three member nodes flooding an agent (the wake text's lines go
// in turns by node) hide a fourth node's ask from the agent and its human
// alike. Fixed: only the items the text shows count as pasted.
func TestTerminalCountedOnlyIsNotPasted(t *testing.T) {
	needTmux(t)
	f := newFixture(t, time.Second)
	var ids []string
	for i := range 10 {
		ids = append(ids, f.ask(fmt.Sprintf("question %d", i)))
	}
	ta := f.fakeAgent("0.05")
	nodetest.WaitFor(t, 30*time.Second, func() bool { b, _ := os.ReadFile(ta.taken); return strings.Contains(string(b), "Parley:") }, "the first paste")
	// Every ask is in a paste, or its human is told.
	shown := func() (n int) {
		b, _ := os.ReadFile(ta.taken)
		for _, id := range ids {
			if strings.Contains(string(b), id) {
				n++
			}
		}
		return n
	}
	if !nodetest.Poll(20*time.Second, func() bool { return shown()+f.status().Unreached >= len(ids) }) {
		b, _ := os.ReadFile(ta.taken)
		t.Fatalf("%d of %d asks were in a paste, and the human was told of %d:\n%s", shown(), len(ids), f.status().Unreached, b)
	}
}
