package inbox_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
)

// TestOwedAskAcrossBothNodesRestarts: an ask shown to its addressee stays
// owed (a reminder) after the addressee's node restarts, and the asker's
// node, restarted while it waits, gets the one reply once: by parley_wait,
// and never again by a later take; the addressee is reminded no more.
func TestOwedAskAcrossBothNodesRestarts(t *testing.T) {
	nt := start(t, 2)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	beta := register(t, nt, 1, "beta")
	res, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{To: beta, Text: "which port?", WaitSeconds: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	has := func(p localapi.Pending, kind string) bool {
		return slices.ContainsFunc(p.Items, func(it localapi.Item) bool { return it.ID == res.AskID && it.Kind == kind })
	}
	waitItems(t, nt, 1, "beta", "the ask shown to beta", func(p localapi.Pending) bool { return has(p, "ask") })
	nt.Crash(1)
	nt.Restart(1)
	register(t, nt, 1, "beta")
	nt.Crash(0)
	nt.Restart(0)
	register(t, nt, 0, "alpha")
	p, err := ib(nt, 1).Take(ctx, "beta")
	if err != nil || !has(p, "reminder") || has(p, "ask") {
		t.Fatalf("beta's take after its node's restart: %v %v, want the ask as a reminder", kinds(p), err)
	}
	if _, err := ib(nt, 1).Reply(ctx, "beta", localapi.ReplyRequest{MessageID: res.AskID, Text: "8080"}); err != nil {
		t.Fatal(err)
	}
	var got localapi.AskResult
	nt.WaitFor(30*time.Second, func() bool {
		got, err = ib(nt, 0).WaitReply(ctx, "alpha", res.AskID, 500*time.Millisecond, true)
		return err == nil && got.Reply != nil
	}, "alpha to get the reply after its node's restart")
	if got.Reply.Text != "8080" {
		t.Fatalf("reply %q", got.Reply.Text)
	}
	p, err = ib(nt, 0).Take(ctx, "alpha")
	if err != nil || slices.ContainsFunc(p.Items, func(it localapi.Item) bool { return it.Kind == "reply" }) {
		t.Fatalf("alpha's take after its wait: %v %v, want no reply again", kinds(p), err)
	}
	p, err = ib(nt, 1).Take(ctx, "beta")
	if err != nil || has(p, "reminder") || has(p, "ask") {
		t.Fatalf("beta's take after its reply: %v %v, want no reminder", kinds(p), err)
	}
}
