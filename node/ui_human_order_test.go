package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestHumanPanelShowsAnEarlierAskBeforeBackdatedOnes: the dashboard's
// "Asked of you" panel holds humanShown (50) asks in the order they arrived
// at this node (askRec.Seen, its own clock), not by the time their sender
// wrote on them. Here an honest contact (node 2) asks the human first; then
// another room member (node 1), whose events are dated an hour back, asks
// 50 times. The honest ask, the first to arrive, stays in the panel. A
// review found it hidden: the panel held the 50 asks that sorted first by
// their sender's date (an event's time is checked only to be 0 or more),
// so the member's later asks took all 50 places, and kept them for as long
// as it went on asking so.
func TestHumanPanelShowsAnEarlierAskBeforeBackdatedOnes(t *testing.T) {
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.AgentPostLimit = -1
		if i == 1 {
			c.RoomClock = func() time.Time { return time.Now().Add(-time.Hour) }
		}
	}))
	nt.ConnectAll()
	nt.Befriend(t, 1, 0)
	nt.Befriend(t, 2, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c0 := localapi.NewClient(node.SocketPath(nt.Home(0)))
	c1 := localapi.NewClient(node.SocketPath(nt.Home(1)))
	c2 := localapi.NewClient(node.SocketPath(nt.Home(2)))
	defer c0.Close()
	defer c1.Close()
	defer c2.Close()
	me := nt.ID(0).String()
	registered(t, ctx, c1, "bob")
	registered(t, ctx, c2, "carol")

	honest, err := c2.OpenRoom(ctx, "carol", localapi.OpenRoomRequest{Name: "honest", Members: []string{me}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := c2.Ask(ctx, "carol", localapi.AskRequest{Room: honest.RoomID, To: "human@" + me, Text: "may I deploy?"})
	if err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(time.Minute, func() bool {
		owed, err := c0.Owed(ctx, "human")
		return err == nil && slices.ContainsFunc(owed, func(it localapi.Item) bool { return it.ID == first.AskID })
	}, "the human to owe the honest ask")

	spam, err := c1.OpenRoom(ctx, "bob", localapi.OpenRoomRequest{Name: "spam", Members: []string{me}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := c1.Ask(ctx, "bob", localapi.AskRequest{Room: spam.RoomID, To: "human@" + me, Text: fmt.Sprintf("ask %d", i)}); err != nil {
			t.Fatal(err)
		}
	}

	base, tok := uiBase(t, nt, 0)
	var panel struct {
		Human struct {
			Asks []localapi.Item `json:"asks"`
			More int             `json:"more"`
		} `json:"human"`
	}
	nt.WaitFor(time.Minute, func() bool {
		code, body := uiDo(t, "GET", base+"/ui/state", tok, nil, "")
		return code == 200 && json.Unmarshal([]byte(body), &panel) == nil && len(panel.Human.Asks)+panel.Human.More == 51
	}, "the human to owe 51 asks")
	shown := slices.ContainsFunc(panel.Human.Asks, func(it localapi.Item) bool { return it.ID == first.AskID })
	if !shown {
		t.Fatalf("the honest ask, the first to arrive, is not in the panel (%d shown, %d more): the 50 backdated asks that came after it hold every place", len(panel.Human.Asks), panel.Human.More)
	}
	if panel.Human.Asks[0].ID != first.AskID {
		t.Fatalf("the honest ask, the first to arrive, is not first in the panel: %s is", panel.Human.Asks[0].ID)
	}
}

// TestHumanPanelNoisyAskerHidesNoOtherAsker: the human panel takes the asks
// by turns of the nodes that ask, so a room member that asked 60 times
// before anyone else leaves places for the asks that came after: one of a
// contact (node 2) and one of an agent of this node. Before, the panel held
// the first 50 asks, all the member's, and said the others were older ones
// left out ("… and 12 more (the oldest are shown)"); for the hour an ask is
// owed, and for good if the member went on asking.
func TestHumanPanelNoisyAskerHidesNoOtherAsker(t *testing.T) {
	nt := nodetest.Start(t, 3, nodetest.WithConfig(func(i int, c *node.Config) { c.AgentPostLimit = -1 }))
	nt.ConnectAll()
	nt.Befriend(t, 1, 0)
	nt.Befriend(t, 2, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c0 := localapi.NewClient(node.SocketPath(nt.Home(0)))
	c1 := localapi.NewClient(node.SocketPath(nt.Home(1)))
	c2 := localapi.NewClient(node.SocketPath(nt.Home(2)))
	defer c0.Close()
	defer c1.Close()
	defer c2.Close()
	me := nt.ID(0).String()
	registered(t, ctx, c0, "alice")
	registered(t, ctx, c1, "bob")
	registered(t, ctx, c2, "carol")

	noisy, err := c1.OpenRoom(ctx, "bob", localapi.OpenRoomRequest{Name: "noisy", Members: []string{me}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if _, err := c1.Ask(ctx, "bob", localapi.AskRequest{Room: noisy.RoomID, To: "human@" + me, Text: fmt.Sprintf("ask %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	nt.WaitFor(time.Minute, func() bool {
		owed, err := c0.Owed(ctx, "human")
		return err == nil && len(owed) == 60
	}, "the human to owe the member's 60 asks")

	other, err := c2.OpenRoom(ctx, "carol", localapi.OpenRoomRequest{Name: "other", Members: []string{me}})
	if err != nil {
		t.Fatal(err)
	}
	carol, err := c2.Ask(ctx, "carol", localapi.AskRequest{Room: other.RoomID, To: "human@" + me, Text: "may I deploy?"})
	if err != nil {
		t.Fatal(err)
	}
	alice, err := c0.Ask(ctx, "alice", localapi.AskRequest{To: "human", Text: "may I merge?"})
	if err != nil {
		t.Fatal(err)
	}

	base, tok := uiBase(t, nt, 0)
	var panel struct {
		Human struct {
			Asks []localapi.Item `json:"asks"`
			More int             `json:"more"`
		} `json:"human"`
	}
	nt.WaitFor(time.Minute, func() bool {
		code, body := uiDo(t, "GET", base+"/ui/state", tok, nil, "")
		return code == 200 && json.Unmarshal([]byte(body), &panel) == nil && len(panel.Human.Asks)+panel.Human.More == 62
	}, "the human to owe 62 asks")
	if len(panel.Human.Asks) != 50 || panel.Human.More != 12 {
		t.Fatalf("%d asks shown, %d more; want 50 and 12", len(panel.Human.Asks), panel.Human.More)
	}
	for _, a := range []struct{ who, id string }{{"the contact's ask", carol.AskID}, {"this node's agent's ask", alice.AskID}} {
		if !slices.ContainsFunc(panel.Human.Asks, func(it localapi.Item) bool { return it.ID == a.id }) {
			t.Errorf("%s, after the member's 60, is not in the panel: the member holds every place", a.who)
		}
	}
}
