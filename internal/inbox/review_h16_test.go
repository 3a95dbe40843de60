package inbox_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
)

// A node invites agent beta into a room with a purpose, and at once asks
// it something (the fold of h11 takes the invitation as the ask's). If the
// ask goes before beta was ever shown it (it expires while beta's session
// is away), beta must still learn it was invited: it is a member of the
// room and nothing else ever tells it. Before the fold the invitation
// stayed until taken; now it was dropped with the fold and the ask that
// carried it expired, so beta gets nothing about the room at all.
func TestReviewFoldedInvitationLostWhenTheAskExpiresUnshown(t *testing.T) {
	nt := start(t, 1, func(c *node.Config) { c.AskTTL = 2 * time.Second })
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "beta")
	res, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "ops", Purpose: "run the 2.0 release", Members: []string{"beta"}})
	if err != nil || len(res.Invited) != 1 {
		t.Fatalf("open: %+v %v", res, err)
	}
	if _, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{Room: "ops", To: "beta", Text: "quick: is the tag v2.0.0?"}); err != nil {
		t.Fatal(err)
	}
	// beta's session is away for longer than the ask lives (Owed does not
	// hand anything out: it is what the status and wake-up code call).
	nt.WaitFor(20*time.Second, func() bool {
		o, err := ib(nt, 0).Owed(ctx, "beta")
		return err == nil && len(o) == 0
	}, "the unshown ask to expire")
	p, err := ib(nt, 0).Take(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	told := slices.ContainsFunc(p.Items, func(it localapi.Item) bool {
		return it.Room == res.RoomID && (it.Kind == "invitation" || it.Kind == "ask")
	})
	if !told {
		t.Fatalf("beta is a member of room ops (%s) but was never told it was invited: its first take is %+v", res.RoomID, p.Items)
	}
}

// A room-wide ask answered by another member before beta read anything:
// beta never saw the question, yet parley_read {} skips it as "no longer
// owed" while it lists the answer to it, a reply to an event beta cannot
// see among what it read. Before h11, parley_read listed the ask.
func TestReviewReadSkipsAnAskNeverReadOnceAnswered(t *testing.T) {
	nt, ctx := roomAll(t)
	ask, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{Room: "all", Text: "who takes the release notes?"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ib(nt, 0).Reply(ctx, "gamma", localapi.ReplyRequest{MessageID: ask.AskID, Text: "me"}); err != nil {
		t.Fatal(err)
	}
	r, err := ib(nt, 0).Read(ctx, "beta", localapi.ReadRequest{})
	if err != nil {
		t.Fatal(err)
	}
	hasAsk := slices.ContainsFunc(r.Messages, func(it localapi.Item) bool { return it.ID == ask.AskID })
	hasReply := slices.ContainsFunc(r.Messages, func(it localapi.Item) bool { return it.ReplyTo == ask.AskID })
	if !hasAsk {
		t.Fatalf("beta never saw the ask %s, yet parley_read {} leaves it out (reply to it listed: %v): %+v", ask.AskID, hasReply, r.Messages)
	}
}
