package inbox_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/inbox"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// handWait sets the node's hand wait.
func handWait(d time.Duration) func(*node.Config) { return func(c *node.Config) { c.HandWait = d } }

// itemsFor sets beta up with an invitation from alpha, a message and an
// ask for it, in room "r" of node 0.
func itemsFor(t *testing.T, nt *nodetest.Net) {
	t.Helper()
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "beta")
	if _, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "r", Members: []string{"beta"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ib(nt, 0).Say(ctx, "alpha", localapi.SayRequest{Room: "r", Text: "hello beta"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{Room: "r", To: "beta", Text: "are you there?"}); err != nil {
		t.Fatal(err)
	}
}

// has reports whether p holds an item of kind with text (any text for "").
func has(p localapi.Pending, kind, text string) bool {
	return slices.ContainsFunc(p.Items, func(it localapi.Item) bool {
		return it.Kind == kind && (text == "" || it.Text == text)
	})
}

// all3 reports whether p holds beta's three items.
func all3(p localapi.Pending) bool {
	return has(p, "invitation", "") && has(p, "message", "hello beta") && has(p, "ask", "are you there?")
}

// takeTwoStep takes beta's items in two steps until the three are handed.
func takeTwoStep(t *testing.T, nt *nodetest.Net) localapi.Pending {
	t.Helper()
	two := localapi.WithTwoStep(context.Background())
	p, err := ib(nt, 0).Take(two, "beta")
	if err != nil {
		t.Fatal(err)
	}
	if !all3(p) || p.Hand == "" {
		t.Fatalf("a two-step take: %v, hand %q; want the invitation, the message and the ask, and a hand", kinds(p), p.Hand)
	}
	return p
}

// An item handed out in two steps and never confirmed is offered again
// once the hand wait passed: the ask in full (once, not also as a
// reminder), the invitation and the message as notices.
func TestTwoStepHandOutUnconfirmedIsOfferedAgain(t *testing.T) {
	nt := start(t, 1, handWait(time.Second))
	itemsFor(t, nt)
	takeTwoStep(t, nt)
	p := waitItems(t, nt, 0, "beta", "the unconfirmed items to be offered again", all3)
	ask := p.Items[slices.IndexFunc(p.Items, func(it localapi.Item) bool { return it.Kind == "ask" })].ID
	asks := 0
	for _, it := range p.Items {
		if it.ID == ask {
			asks++
		}
	}
	if asks != 1 {
		t.Errorf("the ask is listed %d times, want once: %v", asks, kinds(p))
	}
	if p.Hand != "" {
		t.Errorf("a one-step take has hand %q", p.Hand)
	}
	// Offered again once: the next take has only the reminder.
	p, err := ib(nt, 0).Take(context.Background(), "beta")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kinds(p), []string{"reminder"}) {
		t.Errorf("the take after: %v, want the reminder alone", kinds(p))
	}
}

// A confirmed hand-out is not offered again, and confirms once.
func TestTwoStepHandOutConfirmedIsNotOfferedAgain(t *testing.T) {
	const wait = time.Second
	nt := start(t, 1, handWait(wait))
	itemsFor(t, nt)
	p := takeTwoStep(t, nt)
	ctx := context.Background()
	if res, err := ib(nt, 0).Ack(ctx, "beta", localapi.AckRequest{Hand: p.Hand}); err != nil || !res.Acked {
		t.Fatalf("ack: %v, %v", res, err)
	}
	if res, err := ib(nt, 0).Ack(ctx, "beta", localapi.AckRequest{Hand: p.Hand}); err != nil || res.Acked {
		t.Fatalf("a second ack: %v, %v; want not acked", res, err)
	}
	if n := ib(nt, 0).OpenHands("beta"); n != 0 {
		t.Fatalf("%d hand-outs open after the ack", n)
	}
	if nodetest.Poll(3*wait, func() bool {
		p, err := ib(nt, 0).Take(ctx, "beta")
		if err != nil {
			t.Fatal(err)
		}
		return has(p, "message", "") || has(p, "invitation", "") || has(p, "ask", "")
	}) {
		t.Fatal("a confirmed hand-out's items were offered again")
	}
}

// The messages a two-step read hands out come back when it is not
// confirmed.
func TestTwoStepReadUnconfirmedIsOfferedAgain(t *testing.T) {
	nt := start(t, 1, handWait(time.Second))
	itemsFor(t, nt)
	ctx := context.Background()
	// The ask and invitation go by a one-step take; the message stays for
	// the read (a take lists it too: say another one).
	if _, err := ib(nt, 0).Take(ctx, "beta"); err != nil {
		t.Fatal(err)
	}
	if _, err := ib(nt, 0).Say(ctx, "alpha", localapi.SayRequest{Room: "r", Text: "read me"}); err != nil {
		t.Fatal(err)
	}
	res, err := ib(nt, 0).Read(localapi.WithTwoStep(ctx), "beta", localapi.ReadRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res.Messages, func(it localapi.Item) bool { return it.Text == "read me" }) || res.Pending.Hand == "" {
		t.Fatalf("a two-step read: %v, hand %q", texts(res.Messages), res.Pending.Hand)
	}
	waitItems(t, nt, 0, "beta", "the unconfirmed read's message to be offered again",
		func(p localapi.Pending) bool { return has(p, "message", "read me") })
}

// An open hand-out survives a restart of the node: its items are offered
// again once its wait passed.
func TestTwoStepHandOutSurvivesRestart(t *testing.T) {
	nt := start(t, 1, handWait(3*time.Second))
	itemsFor(t, nt)
	takeTwoStep(t, nt)
	nt.Crash(0)
	nt.RestartAlone(0)
	waitItems(t, nt, 0, "beta", "the unconfirmed items to be offered again after a restart", all3)
}

// inboxClock sets the node's inbox clock to the time now plus what *ahead
// holds (read at each call).
func inboxClock(ahead *atomic.Int64) func(*node.Config) {
	return func(c *node.Config) {
		c.InboxClock = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	}
}

// A caller that never confirms keeps at most MaxHands hand-outs open past
// their grace (a quarter of the hand wait), in memory and on disk: past it
// the oldest's items are offered again, once each.
func TestTwoStepHandOutsAreBounded(t *testing.T) {
	var ahead atomic.Int64
	nt := start(t, 1, handWait(time.Hour), inboxClock(&ahead))
	itemsFor(t, nt)
	ctx := context.Background()
	two := localapi.WithTwoStep(ctx)
	takeTwoStep(t, nt)
	extra := 5
	for k := range inbox.MaxHands + extra {
		if _, err := ib(nt, 0).Say(ctx, "alpha", localapi.SayRequest{Room: "r", Text: fmt.Sprintf("m%d", k)}); err != nil {
			t.Fatal(err)
		}
		// 1.6 minutes a take: a hand-out ten takes old is past its grace
		// (15 minutes), none past its wait (an hour).
		ahead.Add(int64(16 * time.Minute / 10))
		p, err := ib(nt, 0).Take(two, "beta")
		if err != nil {
			t.Fatal(err)
		}
		if p.Hand == "" {
			t.Fatalf("take %d handed nothing out: %v", k, kinds(p))
		}
		if n := ib(nt, 0).OpenHands("beta"); n > inbox.MaxHands {
			t.Fatalf("%d hand-outs open, over %d", n, inbox.MaxHands)
		}
		n, largest, err := inbox.HandRecords(ib(nt, 0), "beta")
		if err != nil || n > inbox.MaxHands {
			t.Fatalf("%d hand-out records on disk (%v), over %d", n, err, inbox.MaxHands)
		}
		// Items are kept by reference: a record stays under Badger's value
		// threshold (1 KiB), out of the value log, which is never reclaimed.
		if largest >= 1<<10 {
			t.Fatalf("a hand-out record of %d bytes", largest)
		}
	}
	// Each hand-out past the cap offered the oldest again, and the next
	// two-step take handed those again in a hand-out of its own: what is
	// offered again is what was handed, no more, each item once.
	p, err := ib(nt, 0).Take(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, it := range p.Items {
		seen[it.ID]++
		if seen[it.ID] > 1 {
			t.Errorf("item %s (%s %q) offered twice in one take", it.ID, it.Kind, it.Text)
		}
	}
	if len(p.Items) > inbox.MaxHands+extra+3 {
		t.Errorf("%d items offered again, more than were handed out", len(p.Items))
	}
}

// More than MaxHands hand-outs made within their caller's grace (a caller
// that confirms each a moment after its result was written, as parley mcp
// does) are all kept open: none is offered again before its confirmation
// could come, so each item is handed out once. Before, past 16 open
// hand-outs the oldest was offered again at once, and the next take
// handed its items a second time. One left unconfirmed still comes back.
func TestTwoStepHandOutsWithinTheirGraceAreNotOfferedAgain(t *testing.T) {
	nt := start(t, 1, handWait(time.Hour))
	itemsFor(t, nt)
	ctx := context.Background()
	two := localapi.WithTwoStep(ctx)
	first := takeTwoStep(t, nt)
	hands := []string{first.Hand}
	handed := map[string]int{}
	const n = 40
	for k := range n {
		if _, err := ib(nt, 0).Say(ctx, "alpha", localapi.SayRequest{Room: "r", Text: fmt.Sprintf("m%d", k)}); err != nil {
			t.Fatal(err)
		}
		p, err := ib(nt, 0).Take(two, "beta")
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			handed[it.Text]++
		}
		if p.Hand != "" {
			hands = append(hands, p.Hand)
		}
	}
	for k := range n {
		if m := fmt.Sprintf("m%d", k); handed[m] != 1 {
			t.Errorf("%s handed out %d times, want once", m, handed[m])
		}
	}
	if got := ib(nt, 0).OpenHands("beta"); got != n+1 {
		t.Errorf("%d hand-outs open, want the %d made", got, n+1)
	}
	// Every one confirmed but the last: nothing comes again but its item.
	for _, h := range hands[:len(hands)-1] {
		if _, err := ib(nt, 0).Ack(ctx, "beta", localapi.AckRequest{Hand: h}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ib(nt, 0).Ack(ctx, "beta", localapi.AckRequest{Hand: hands[len(hands)-1], Shown: []string{}}); err != nil {
		t.Fatal(err)
	}
	p, err := ib(nt, 0).Take(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	var again []string
	for _, it := range p.Items {
		if it.Kind != "reminder" { // the ask beta still owes, recalled
			again = append(again, it.Text)
		}
	}
	if want := fmt.Sprintf("m%d", n-1); !slices.Equal(again, []string{want}) {
		t.Errorf("after the confirmations, the take offers %q again; want the unconfirmed %q alone", again, want)
	}
}

// A two-step take on a full disk answers with its items and a hand, as a
// one-step take does; the record kept in memory offers them again when not
// confirmed, while the disk is still full.
func TestTwoStepTakeOnAFullDiskIsOfferedAgain(t *testing.T) {
	d := newDiskFloor(t)
	nt := start(t, 1, handWait(time.Second), func(c *node.Config) { c.MinFreeDisk = d.floor })
	itemsFor(t, nt)
	d.fill(t)
	if _, err := ib(nt, 0).Say(context.Background(), "alpha", localapi.SayRequest{Room: "r", Text: "refused"}); err == nil {
		t.Fatal("a say on a full disk was taken: the disk is not below the floor")
	}
	takeTwoStep(t, nt)
	waitItems(t, nt, 0, "beta", "the unconfirmed items to be offered again on a full disk", all3)
}

// idOf is the ID of p's first item of kind.
func idOf(t *testing.T, p localapi.Pending, kind string) string {
	t.Helper()
	i := slices.IndexFunc(p.Items, func(it localapi.Item) bool { return it.Kind == kind })
	if i < 0 {
		t.Fatalf("no %s in %v", kind, kinds(p))
	}
	return p.Items[i].ID
}

// A confirmation that names the items shown (a hook's text cut to its
// client's size) confirms those alone: the others are offered again at
// once, not after the hand wait (an hour here): the ask still owed in
// full, the invitation and the message as items. The shown ones are not
// offered again; IDs the hand-out does not hold are ignored.
func TestTwoStepPartialAckOffersTheRestAtOnce(t *testing.T) {
	nt := start(t, 1, handWait(time.Hour))
	itemsFor(t, nt)
	ctx := context.Background()
	two := localapi.WithTwoStep(ctx)

	// Nothing of it shown (an ID it does not hold): all of it again.
	p := takeTwoStep(t, nt)
	if res, err := ib(nt, 0).Ack(ctx, "beta", localapi.AckRequest{Hand: p.Hand, Shown: []string{"no-such-item"}}); err != nil || !res.Acked {
		t.Fatalf("ack: %v, %v", res, err)
	}
	if n := ib(nt, 0).OpenHands("beta"); n != 0 {
		t.Fatalf("%d hand-outs open after the ack", n)
	}
	p = takeTwoStep(t, nt) // the three again, the ask in full, at once
	if slices.Contains(kinds(p), "reminder") {
		t.Errorf("the ask offered again is also a reminder: %v", kinds(p))
	}

	// The ask and the invitation shown: the message comes again, alone.
	shown := []string{idOf(t, p, "ask"), idOf(t, p, "invitation")}
	if res, err := ib(nt, 0).Ack(ctx, "beta", localapi.AckRequest{Hand: p.Hand, Shown: shown}); err != nil || !res.Acked {
		t.Fatalf("ack: %v, %v", res, err)
	}
	p, err := ib(nt, 0).Take(two, "beta")
	if err != nil {
		t.Fatal(err)
	}
	if !has(p, "message", "hello beta") || has(p, "invitation", "") || has(p, "ask", "") || p.Hand == "" {
		t.Fatalf("the take after a confirmation of the ask and the invitation: %v %q, hand %q; want the message (and the reminder)",
			kinds(p), texts(p.Items), p.Hand)
	}

	// The message shown, with no list: all of it confirmed.
	if res, err := ib(nt, 0).Ack(ctx, "beta", localapi.AckRequest{Hand: p.Hand}); err != nil || !res.Acked {
		t.Fatalf("ack: %v, %v", res, err)
	}
	p, err = ib(nt, 0).Take(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kinds(p), []string{"reminder"}) {
		t.Errorf("the take after it all was shown: %v %q, want the reminder alone", kinds(p), texts(p.Items))
	}
}

// An empty list of items shown confirms none of them: all are offered
// again at once.
func TestTwoStepAckOfNothingShownOffersAllAgain(t *testing.T) {
	nt := start(t, 1, handWait(time.Hour))
	itemsFor(t, nt)
	p := takeTwoStep(t, nt)
	if res, err := ib(nt, 0).Ack(context.Background(), "beta", localapi.AckRequest{Hand: p.Hand, Shown: []string{}}); err != nil || !res.Acked {
		t.Fatalf("ack: %v, %v", res, err)
	}
	takeTwoStep(t, nt)
}

// waitResult is what a Wait returned.
type waitResult struct {
	p   localapi.Pending
	err error
}

// waitingWait starts a Wait of agent on node 0 and returns once it waits
// (it looked at the agent's items and found nothing to return); its
// answer comes on the channel. The test's end cancels it and waits for
// it to return.
func waitingWait(t *testing.T, nt *nodetest.Net, agent string, req localapi.WaitRequest) <-chan waitResult {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan waitResult, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p, err := ib(nt, 0).Wait(ctx, agent, req)
		got <- waitResult{p, err}
	}()
	t.Cleanup(func() { cancel(); <-done })
	nt.WaitFor(10*time.Second, func() bool { return inbox.Waiting(ib(nt, 0), agent) }, "the Wait of %s to wait", agent)
	select {
	case r := <-got:
		t.Fatalf("the Wait returned before anything was offered: %v %v", kinds(r.p), r.err)
	default:
	}
	return got
}

// returnsWithin waits up to d (far below the Wait's own timeout) for a
// Wait's answer.
func returnsWithin(t *testing.T, got <-chan waitResult, d time.Duration, what string) localapi.Pending {
	t.Helper()
	var r waitResult
	if !nodetest.Poll(d, func() bool {
		select {
		case r = <-got:
			return true
		default:
			return false
		}
	}) {
		t.Fatalf("the waiting Wait did not return within %s: %s", d, what)
	}
	if r.err != nil {
		t.Fatalf("the waiting Wait: %v", r.err)
	}
	return r.p
}

// A parley_wait already waiting when a confirmation names some of a
// hand-out's items alone (a hook's text cut) returns the others at once:
// they are offered again by no room's change, and before, the Wait slept
// on until its own end (40 s here) or the hand-out's wait (an hour).
func TestTwoStepPartialAckWakesAWaitingWait(t *testing.T) {
	nt := start(t, 1, handWait(time.Hour))
	itemsFor(t, nt)
	p := takeTwoStep(t, nt)
	got := waitingWait(t, nt, "beta", localapi.WaitRequest{Seconds: 40, Take: true})
	shown := []string{idOf(t, p, "ask"), idOf(t, p, "invitation")}
	if res, err := ib(nt, 0).Ack(context.Background(), "beta", localapi.AckRequest{Hand: p.Hand, Shown: shown}); err != nil || !res.Acked {
		t.Fatalf("ack: %v, %v", res, err)
	}
	w := returnsWithin(t, got, 10*time.Second, "the message offered again")
	if !has(w, "message", "hello beta") || has(w, "invitation", "") || has(w, "ask", "") {
		t.Fatalf("the waiting Wait returned %v %q; want the message (and the reminder)", kinds(w), texts(w.Items))
	}
}

// A Wait that waits when another call makes a two-step hand-out (here a
// wake-up's, which takes nothing) wakes once the hand-out's wait passes
// unconfirmed, with the items offered again; before, it watched no
// hand-out made after it began, and slept on until its own end.
func TestTwoStepUnconfirmedHandOutWakesAWaitingWait(t *testing.T) {
	nt := start(t, 1, handWait(2*time.Second))
	itemsFor(t, nt)
	got := waitingWait(t, nt, "beta", localapi.WaitRequest{Seconds: 40})
	takeTwoStep(t, nt)
	w := returnsWithin(t, got, 10*time.Second, "the unconfirmed items offered again")
	if !all3(w) {
		t.Fatalf("the waiting Wait returned %v %q; want the invitation, the message and the ask", kinds(w), texts(w.Items))
	}
}
