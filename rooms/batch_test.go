package rooms

import "testing"

// TestLiveBeforeCatchUp: a room's batch takes live inputs (gossip, says)
// first, up to liveBatch, and while live inputs wait only bulkBatch of
// catch-up; catch-up fills the batch only when nothing live waits. A
// loaded node so delivers live events before it works through a bulk
// catch-up, instead of queueing them behind it.
func TestLiveBeforeCatchUp(t *testing.T) {
	inbox, bulkq := make(chan input, 1000), make(chan input, 1000)
	for range 300 {
		inbox <- input{}
	}
	for range 500 {
		bulkq <- input{catchUp: true}
	}
	type batch struct{ live, bulk int }
	var got []batch
	// The room woke for a catch-up input: live ones still come first.
	live, bulk := takeBatch(inbox, bulkq, nil, []input{<-bulkq})
	got = append(got, batch{len(live), len(bulk)})
	for len(inbox) > 0 || len(bulkq) > 0 {
		// The room's goroutine wakes for whichever input comes first.
		var first, b []input
		if len(inbox) > 0 {
			first = []input{<-inbox}
		} else {
			b = []input{<-bulkq}
		}
		live, bulk = takeBatch(inbox, bulkq, first, b)
		got = append(got, batch{len(live), len(bulk)})
	}
	want := []batch{{256, 64}, {44, 64}, {0, 256}, {0, 116}}
	if len(got) != len(want) {
		t.Fatalf("batches %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("batches %v, want %v", got, want)
		}
	}
	for _, b := range got {
		if b.live > liveBatch || b.bulk > liveBatch || (b.live > 0 && b.bulk > bulkBatch) {
			t.Fatalf("batch %+v over its bounds", b)
		}
	}
}
