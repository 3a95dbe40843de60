package inbox_test

import (
	"context"
	"testing"

	"github.com/parley-mesh/parley/internal/localapi"
)

// A person invites an agent into a room (`parley room invite ROOM NAME`)
// and asks it something a few seconds later (`parley room ask ROOM … --to
// NAME`). The ask did not bring the agent in: it was in already. Yet the
// agent's inbox folds the invitation into the ask and tells it "it brought
// you into ROOM for this ask" (Brought), because an invite followed at once
// by an ask of the same author reads as the invite an ask makes for itself
// (foldInvite: the next event of the author, within 10 s).
func TestAskAfterAnExplicitInviteDidNotBringTheAgentIn(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "beta")
	if _, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "api", Purpose: "design the v2 api"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ib(nt, 0).Invite(ctx, "alpha", localapi.InviteRequest{Room: "api", Member: "beta"}); err != nil {
		t.Fatal(err)
	}
	// The ask finds beta in the room: it invites no one.
	ask, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{Room: "api", To: "beta", Text: "which version?"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ib(nt, 0).Take(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range p.Items {
		if it.Kind == "ask" && it.ID == ask.AskID && it.Brought {
			t.Fatalf("beta was invited before the ask, yet the ask says it brought beta in: %+v", p.Items)
		}
	}
}
