package inbox_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// askOwed waits until agent of node i owes the ask id (Owed hands nothing
// out), so that one take after it holds whatever came with the ask.
func askOwed(t *testing.T, nt *nodetest.Net, i int, agent, id string) {
	t.Helper()
	nt.WaitFor(30*time.Second, func() bool {
		o, err := ib(nt, i).Owed(context.Background(), agent)
		return err == nil && slices.ContainsFunc(o, func(it localapi.Item) bool { return it.ID == id })
	}, "%s on node %d to owe ask %s", agent, i, id)
}

// A person invites an agent of another node by hand (`parley room invite`)
// and at once asks it (`parley room ask --to`): the agent was invited,
// then asked, and is shown both. Before, the inbox took any invite of the
// asker's node just before an ask, within 10 s, as made for the ask: the
// ask said "which it brought you into for this ask" and the invitation
// was not shown apart. An ask that invites the agent itself names its
// invite (reply_to), and only such an ask folds it in
// (TestAskThatBringsARemoteAgentInIsOneAsk).
func TestInviteByHandThenAskAreTwoItems(t *testing.T) {
	nt := start(t, 2)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	beta := register(t, nt, 1, "beta")
	open, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "plans", Purpose: "plan the release"})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := ib(nt, 0).Invite(ctx, "alpha", localapi.InviteRequest{Room: open.RoomID, Member: beta})
	if err != nil {
		t.Fatal(err)
	}
	ask, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{Room: open.RoomID, To: beta, Text: "which tag?"})
	if err != nil {
		t.Fatal(err)
	}
	askOwed(t, nt, 1, "beta", ask.AskID)
	p, err := ib(nt, 1).Take(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	invited := slices.ContainsFunc(p.Items, func(it localapi.Item) bool { return it.Kind == "invitation" && it.ID == inv.ID })
	i := slices.IndexFunc(p.Items, func(it localapi.Item) bool { return it.Kind == "ask" && it.ID == ask.AskID })
	if !invited || i < 0 || p.Items[i].Brought {
		t.Fatalf("beta's items after an invite by hand and an ask at once: %+v; want the invitation %s apart and the ask %s not saying it brought beta in", p.Items, inv.ID, ask.AskID)
	}
	// The ask names no invite: it made none.
	evs, err := ib(nt, 1).Log(ctx, open.RoomID, 50, "")
	if err != nil {
		t.Fatal(err)
	}
	if j := slices.IndexFunc(evs, func(e localapi.Event) bool { return e.ID == ask.AskID }); j < 0 || evs[j].ReplyTo != "" {
		t.Fatalf("the ask in node 1's log: %+v", evs)
	}
}

// An ask of an agent of another node that is not in the room brings it in
// with an invite, and the ask names that invite (reply_to): the agent's
// node folds the invitation into the ask, one item that says it brought
// the agent in.
func TestAskThatBringsARemoteAgentInIsOneAsk(t *testing.T) {
	nt := start(t, 2)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	beta := register(t, nt, 1, "beta")
	open, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "api", Purpose: "design the v2 api"})
	if err != nil {
		t.Fatal(err)
	}
	ask, err := ib(nt, 0).Ask(ctx, "alpha", localapi.AskRequest{Room: open.RoomID, To: beta, Text: "which version?"})
	if err != nil {
		t.Fatal(err)
	}
	askOwed(t, nt, 1, "beta", ask.AskID)
	p, err := ib(nt, 1).Take(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 1 || p.Items[0].Kind != "ask" || p.Items[0].ID != ask.AskID || !p.Items[0].Brought ||
		p.Items[0].Purpose != "design the v2 api" {
		t.Fatalf("beta's items after an ask that brought it in: %+v", p.Items)
	}
	evs, err := ib(nt, 1).Log(ctx, open.RoomID, 50, "")
	if err != nil {
		t.Fatal(err)
	}
	j := slices.IndexFunc(evs, func(e localapi.Event) bool { return e.ID == ask.AskID })
	if j < 0 || !slices.ContainsFunc(evs, func(e localapi.Event) bool {
		return e.Kind == "invite" && e.ID == evs[j].ReplyTo && e.To == beta
	}) {
		t.Fatalf("the ask does not name the invite of beta in node 1's log: %+v", evs)
	}
}
