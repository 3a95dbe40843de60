package inbox_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/inbox"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestOwedAsksKeepNoTextsInMemory checks that the asks a remote member
// puts to a room (no addressee: every local agent in it owes each one),
// many and large, are not held text and all in the inbox's memory, a copy
// per local agent, for as long as they are owed: the texts stay on disk
// and are read when an ask is shown, in full and as a reminder.
func TestOwedAsksKeepNoTextsInMemory(t *testing.T) {
	nt := start(t, 2)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	beta := register(t, nt, 0, "beta")
	mallory := register(t, nt, 1, "mallory")
	res, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "work", Members: []string{beta, mallory}})
	if err != nil || len(res.Failed) != 0 {
		t.Fatalf("open: %+v %v", res, err)
	}
	nt.WaitFor(30*time.Second, func() bool {
		in, err := ib(nt, 1).Get(ctx, res.RoomID)
		return err == nil && slices.Contains(in.Agents, mallory)
	}, "node 1 to hold the room, mallory in it")
	text := strings.Repeat("x", 60<<10)
	const n = 64
	for i := range n {
		if _, err := ib(nt, 1).Ask(ctx, "mallory", localapi.AskRequest{Room: res.RoomID, Text: fmt.Sprintf("%d %s", i, text)}); err != nil {
			t.Fatalf("ask %d: %v", i, err)
		}
	}
	total := 0
	for _, a := range []string{"alpha", "beta"} {
		nt.WaitFor(30*time.Second, func() bool {
			if _, err := ib(nt, 0).Peek(ctx, a); err != nil {
				t.Fatal(err)
			}
			k, _ := inbox.OwedTextBytes(ib(nt, 0), a)
			return k == n
		}, "%s to owe the %d asks", a, n)
		_, held := inbox.OwedTextBytes(ib(nt, 0), a)
		total += held
	}
	t.Logf("alpha and beta hold %d bytes of ask texts in memory", total)
	if total > 1<<20 {
		t.Fatalf("after %d asks of a remote member, node 0's inbox holds %.1f MiB of their texts in memory (a copy per local agent in the room), for an hour, with no bound on their number", n, float64(total)/(1<<20))
	}
	p, err := ib(nt, 0).Take(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) == 0 || p.Items[0].Kind != "ask" || p.Items[0].Text != "0 "+text {
		t.Fatalf("alpha's take does not show the first ask in full: %d items", len(p.Items))
	}
	if k, held := inbox.OwedTextBytes(ib(nt, 0), "alpha"); k != n || held != 0 {
		t.Fatalf("after a take alpha owes %d asks and holds %d bytes of their texts", k, held)
	}
	first := p.Items[0].ID
	p, err = ib(nt, 0).Take(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	reminded := false
	for _, it := range p.Items {
		if it.ID == first {
			reminded = true
			if it.Kind != "reminder" || it.Text != "0 "+text {
				t.Fatalf("the first ask is shown again as %q with %d bytes of text", it.Kind, len(it.Text))
			}
		}
	}
	if !reminded {
		t.Fatal("the first ask, shown, is not reminded of")
	}
}

// TestCallsForUnknownAgentsLeaveNoState checks that the calls of the local
// API for names no agent of the node holds (a peek, a take, a wait: a
// typo, a script that goes over names, an agent that renames itself each
// run), which are refused, leave no state in the inbox's memory once they
// return, while the state of a registered agent is kept.
func TestCallsForUnknownAgentsLeaveNoState(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	if _, err := ib(nt, 0).Peek(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	for i := range n {
		name := fmt.Sprintf("nobody-%d", i)
		var err error
		switch i % 3 {
		case 0:
			_, err = ib(nt, 0).Peek(ctx, name)
		case 1:
			_, err = ib(nt, 0).Take(ctx, name)
		default:
			_, err = ib(nt, 0).Wait(ctx, name, localapi.WaitRequest{})
		}
		// Refused (nothing waits for a name the node does not know), and
		// the refusal's look leaves nothing behind either.
		if !localapi.IsCode(err, localapi.CodeUnknownAgent) {
			t.Fatalf("call for %s: %v, want unknown_agent", name, err)
		}
	}
	if got := inbox.States(ib(nt, 0)); got != 1 {
		t.Fatalf("after calls for %d names no agent holds, and a peek of alpha, the inbox keeps %d agents' states in memory, want 1 (alpha's)", n, got)
	}
}

// askAndAnswer has alpha ask beta n asks in a room of the two, each of
// text i+" "+text, and beta answer each with "re "+i+" "+text. It returns
// the asks' IDs and the room's.
func askAndAnswer(t *testing.T, nt *nodetest.Net, n int, text string) (asks []string, room string) {
	t.Helper()
	ctx := context.Background()
	res, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "work", Members: []string{"beta"}})
	if err != nil || len(res.Failed) != 0 {
		t.Fatalf("open: %+v %v", res, err)
	}
	for i := range n {
		ask, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{Room: res.RoomID, To: "beta", Text: fmt.Sprintf("%d %s", i, text)})
		if err != nil {
			t.Fatalf("ask %d: %v", i, err)
		}
		if _, err := ib(nt, 0).Reply(ctx, "beta", localapi.ReplyRequest{MessageID: ask.AskID, Text: fmt.Sprintf("re %d %s", i, text)}); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		asks = append(asks, ask.AskID)
	}
	return asks, res.RoomID
}

// heldTexts is what node 0's inbox holds in memory of alpha's own asks'
// texts, of their replies', and of its notes' (the replies to show).
func heldTexts(nt *nodetest.Net) (asks, held int) {
	asks, a := inbox.AskedTextBytes(ib(nt, 0), "alpha")
	_, n := inbox.NoteTextBytes(ib(nt, 0), "alpha")
	return asks, a + n
}

// replyIs checks that the reply to ask i is given whole.
func replyIs(t *testing.T, what string, r *localapi.Item, i int, text string) {
	t.Helper()
	if want := fmt.Sprintf("re %d %s", i, text); r == nil || r.Kind != "reply" || r.Text != want {
		got := "none"
		if r != nil {
			got = fmt.Sprintf("a %s of %d bytes", r.Kind, len(r.Text))
		}
		t.Fatalf("%s: the reply to ask %d is %s, want its %d bytes whole", what, i, got, len(want))
	}
}

// TestOwnAsksAndTheirRepliesKeepNoTextsInMemory checks that an agent's
// own asks, and the first reply to each, are not held text and all in the
// inbox's memory for as long as the asks are open (AskTTL, an hour by
// default), nor the replies to show (notes) until the agent takes them:
// the texts stay in their records on disk and are read when they are
// shown. Before, putAsk cleared the text of an owed ask once written (see
// TestOwedAsksKeepNoTextsInMemory) but kept an own ask's (kind "q"), note
// put the whole reply in it (askRec.Reply), and the reply's note kept it
// again: one agent within the default post limit (120 asks a minute) of
// 64 KiB each held about 450 MiB, and any member that answered every ask
// with 64 KiB doubled it. Here alpha asks beta 64 asks of 60 KiB, and beta
// answers each with 60 KiB: 7.5 MiB of asks and replies were held once
// alpha had taken the replies, 0 now.
func TestOwnAsksAndTheirRepliesKeepNoTextsInMemory(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "beta")
	text := strings.Repeat("x", 60<<10)
	const n = 64
	asks, _ := askAndAnswer(t, nt, n, text)
	if _, err := ib(nt, 0).Peek(ctx, "alpha"); err != nil { // alpha has every reply noted
		t.Fatal(err)
	}
	if k, _ := inbox.NoteTextBytes(ib(nt, 0), "alpha"); k != n {
		t.Fatalf("alpha has %d replies to show, want %d", k, n)
	}
	k, held := heldTexts(nt)
	t.Logf("%d asks of alpha's, each answered, replies not taken: %d bytes of their texts in memory", k, held)
	if k != n {
		t.Fatalf("alpha has %d asks open, want %d", k, n)
	}
	if held > 1<<20 {
		t.Fatalf("after %d asks of alpha's, each answered, node 0's inbox holds %.1f MiB of their texts and replies in memory, for as long as the asks are open (%s)",
			n, float64(held)/(1<<20), inbox.DefaultAskTTL)
	}
	// The texts come back whole: the replies in a take, a long one alone
	// (PendingBudget), in the order they came; parley_wait's reply.
	for i := range 2 {
		p, err := ib(nt, 0).Take(ctx, "alpha")
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) != 1 {
			t.Fatalf("take %d gives %v, want one reply", i, kinds(p))
		}
		replyIs(t, fmt.Sprintf("take %d", i), &p.Items[0], i, text)
	}
	res, err := ib(nt, 0).WaitReply(ctx, "alpha", asks[5], 0, false)
	if err != nil {
		t.Fatal(err)
	}
	replyIs(t, "parley_wait", res.Reply, 5, text)
	if _, held := heldTexts(nt); held != 0 {
		t.Fatalf("after the takes alpha's asks, their replies and notes hold %d bytes of texts in memory", held)
	}
}

// TestOwnAskTextsComeBackWholeAfterARestart checks that an agent's own
// asks and their replies, whose texts memory does not keep, are shown
// whole after a restart of the node, which loads them from their records:
// the reply by parley_wait and in a take, an ask not answered yet in the
// list of asks the agent waits on (the dashboard's); and memory holds none
// of their texts.
func TestOwnAskTextsComeBackWholeAfterARestart(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "beta")
	text := strings.Repeat("y", 10<<10)
	asks, room := askAndAnswer(t, nt, 2, text)
	open, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{Room: room, To: "beta", Text: "open " + text})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ib(nt, 0).Peek(ctx, "alpha"); err != nil { // the replies noted, and saved
		t.Fatal(err)
	}
	nt.Crash(0)
	nt.RestartAlone(0)
	p, err := ib(nt, 0).Peek(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if k, held := heldTexts(nt); k != 3 || held != 0 {
		t.Fatalf("after a restart alpha has %d asks open (want 3), and memory holds %d bytes of texts", k, held)
	}
	if len(p.Items) != 2 {
		t.Fatalf("after a restart alpha's peek gives %v, want the two replies", kinds(p))
	}
	for i := range 2 {
		replyIs(t, "a peek after a restart", &p.Items[i], i, text)
	}
	res, err := ib(nt, 0).WaitReply(ctx, "alpha", asks[1], 0, false)
	if err != nil {
		t.Fatal(err)
	}
	replyIs(t, "parley_wait after a restart", res.Reply, 1, text)
	waiting, err := ib(nt, 0).Asked(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if len(waiting) != 1 || waiting[0].ID != open.AskID || waiting[0].Text != "open "+text {
		t.Fatalf("after a restart alpha waits on %d asks, want its open ask, whole", len(waiting))
	}
	p, err = ib(nt, 0).Take(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 1 {
		t.Fatalf("after parley_wait alpha's take gives %v, want the first reply", kinds(p))
	}
	replyIs(t, "a take after a restart", &p.Items[0], 0, text)
}

// TestRepliesNotSavedOnAFullDiskComeBackWhole checks that a reply to an
// agent's own ask noted while the disk is below the node's free-space
// floor, so that neither the ask's record nor the reply's note is saved,
// is still shown whole (memory, which keeps no text of it, reads it from
// the room's event): in a peek, again in a later one, and by parley_wait.
func TestRepliesNotSavedOnAFullDiskComeBackWhole(t *testing.T) {
	d := newDiskFloor(t)
	nt := start(t, 1, func(c *node.Config) { c.MinFreeDisk = d.floor })
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "beta")
	text := strings.Repeat("z", 10<<10)
	asks, room := askAndAnswer(t, nt, 1, text)
	open, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{Room: room, To: "beta", Text: "open " + text})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ib(nt, 0).Reply(ctx, "beta", localapi.ReplyRequest{MessageID: open.AskID, Text: fmt.Sprintf("re %d %s", 1, text)}); err != nil {
		t.Fatal(err)
	}
	d.fill(t)
	if _, err := ib(nt, 0).Say(ctx, "beta", localapi.SayRequest{Room: room, Text: "refused"}); err == nil {
		t.Fatal("a say on a full disk was taken: the disk is not below the floor")
	}
	for try := range 2 { // the first peek notes the replies, and cannot save them
		p, err := ib(nt, 0).Peek(ctx, "alpha")
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) != 2 {
			t.Fatalf("peek %d on a full disk gives %v, want the two replies", try, kinds(p))
		}
		for i := range 2 {
			replyIs(t, fmt.Sprintf("peek %d on a full disk", try), &p.Items[i], i, text)
		}
	}
	if _, held := heldTexts(nt); held != 0 {
		t.Fatalf("on a full disk alpha's asks, their replies and notes hold %d bytes of texts in memory", held)
	}
	for i, ask := range []string{asks[0], open.AskID} {
		res, err := ib(nt, 0).WaitReply(ctx, "alpha", ask, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		replyIs(t, "parley_wait on a full disk", res.Reply, i, text)
	}
}
