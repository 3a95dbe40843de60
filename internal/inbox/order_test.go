package inbox

import (
	"slices"
	"testing"
)

// TestAsksOrderedByArrival: asks are listed in the order this node took
// them in (Seen, its own clock), not by the date their sender wrote on
// them: an ask dated an hour back that came later is listed after one that
// came first. Asks taken in at once go by date, then ID; an ask kept from
// before Seen was kept, and an own ask, go by date.
func TestAsksOrderedByArrival(t *testing.T) {
	const hour = 3600_000
	m := map[string]*askRec{
		"honest":   {Time: 1000, Seen: 1000},
		"backdate": {Time: 2000 - hour, Seen: 2000},
		"same-b":   {Time: 3000, Seen: 3000},
		"same-a":   {Time: 3000, Seen: 3000},
		"earlier":  {Time: 2500, Seen: 3000},
		"unseen":   {Time: 1500},
	}
	var got []string
	for _, a := range sortedAsks(m) {
		got = append(got, a.id)
	}
	if want := []string{"honest", "unseen", "backdate", "earlier", "same-a", "same-b"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}
