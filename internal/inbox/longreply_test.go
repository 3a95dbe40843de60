package inbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestLongReplyShownBesideAReminder: a take gives its first item whatever
// its size, so that an item longer than PendingBudget is not held back for
// good; but the reminders of asks the agent owes (one line each, handed
// out by no take) counted as that first item. A reply of 40 KB to the
// agent's ask, come once its parley_ask stopped waiting, was then never
// in its pending items for as long as it owed an ask (up to the ask's
// hour), and every parley_wait returned at once with nothing new, the
// reply counting as new each time.
func TestLongReplyShownBesideAReminder(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "beta")
	if _, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "r", Members: []string{"beta"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{Room: "r", To: "beta", Text: "owed by beta"}); err != nil {
		t.Fatal(err)
	}
	// beta is shown the ask (a take); it is a reminder from then on.
	waitItems(t, nt, 0, "beta", "the ask beta owes", func(p localapi.Pending) bool { return has(p, "ask", "owed by beta") })
	asked, err := ib(nt, 0).Ask(ctx, "beta", localapi.AskRequest{Room: "r", To: "alpha", Text: "a long answer, please"})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("the answer, at length. ", 40_000/23)
	if _, err := ib(nt, 0).Reply(ctx, "alpha", localapi.ReplyRequest{MessageID: asked.AskID, Text: long}); err != nil {
		t.Fatal(err)
	}
	reply := func(p localapi.Pending) bool { return has(p, "reply", long) }
	if !nodetest.Poll(10*time.Second, func() bool {
		p, err := ib(nt, 0).Take(ctx, "beta")
		return err == nil && reply(p)
	}) {
		p, _ := ib(nt, 0).Peek(ctx, "beta")
		t.Fatalf("beta's takes never gave the long reply to its ask; its pending: %v", kinds(p))
	}
}
