package inbox_test

import (
	"context"
	"slices"
	"testing"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// beta is shown a room-wide ask in full (its take), then gamma answers it.
// README: "an ask shown once ... is not unread again". readLocked only
// knows an ask was shown while it is still owed (st.owed[id].Shown); once
// gamma's answer drops it from owed, it read as "never
// shown", and parley_read lists the very ask beta was already shown.
func TestReviewReadListsAnAskShownThenAnsweredByAnother(t *testing.T) {
	nt, ctx := roomAll(t)
	ask, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{Room: "all", Text: "who takes the release notes?"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ib(nt, 0).Take(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(p.Items, func(it localapi.Item) bool { return it.ID == ask.AskID && it.Kind == "ask" }) {
		t.Fatalf("beta's take does not show the ask in full: %+v", p.Items)
	}
	if _, err := ib(nt, 0).Reply(ctx, "gamma", localapi.ReplyRequest{MessageID: ask.AskID, Text: "me"}); err != nil {
		t.Fatal(err)
	}
	r, err := ib(nt, 0).Read(ctx, "beta", localapi.ReadRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(r.Messages, func(it localapi.Item) bool { return it.ID == ask.AskID }) {
		t.Fatalf("beta was shown ask %s in full, yet parley_read lists it again as unread once gamma answered: %+v", ask.AskID, r.Messages)
	}
}

// beta is shown an ask, answers it; others talked between the ask and the
// answer. parley_read with a small limit reads the ask but not beta's
// reply; it once knew the ask answered only from a reply among the events
// read, and listed the ask beta was shown and answered itself as unread.
func TestReviewReadListsAnAskAnsweredItselfWhenTheReplyIsPastTheLimit(t *testing.T) {
	nt, ctx := roomAll(t)
	ask, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{Room: "all", To: "beta", Text: "is the tag v2.0.0?"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ib(nt, 0).Take(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(p.Items, func(it localapi.Item) bool { return it.ID == ask.AskID && it.Kind == "ask" }) {
		t.Fatalf("beta's take does not show the ask in full: %+v", p.Items)
	}
	for _, s := range []string{"one", "two", "three"} {
		if _, err := ib(nt, 0).Say(ctx, "gamma", localapi.SayRequest{Room: "all", Text: s}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ib(nt, 0).Reply(ctx, "beta", localapi.ReplyRequest{MessageID: ask.AskID, Text: "yes"}); err != nil {
		t.Fatal(err)
	}
	r, err := ib(nt, 0).Read(ctx, "beta", localapi.ReadRequest{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(r.Messages, func(it localapi.Item) bool { return it.ID == ask.AskID }) {
		t.Fatalf("beta was shown ask %s and answered it, yet parley_read (limit 2) lists it as unread: %+v", ask.AskID, r.Messages)
	}
}

// roomAll starts a node whose agents alpha, beta and gamma share room
// "all" (alpha made it), beta having taken what it was told so far.
func roomAll(t *testing.T) (*nodetest.Net, context.Context) {
	t.Helper()
	nt := start(t, 1)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "beta")
	register(t, nt, 0, "gamma")
	res, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "all", Members: []string{"beta", "gamma"}})
	if err != nil || len(res.Invited) != 2 {
		t.Fatalf("open: %+v %v", res, err)
	}
	if _, err := ib(nt, 0).Read(ctx, "beta", localapi.ReadRequest{Take: true}); err != nil {
		t.Fatal(err)
	}
	return nt, ctx
}
