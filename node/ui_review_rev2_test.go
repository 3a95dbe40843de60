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

// TestReviewHumanPanelBackdatedAsksHideAnEarlierAsk: the dashboard's
// "Asked of you" panel holds the humanShown (50) asks that sort first by
// the time their sender wrote on them, and counts the rest ("… and N more
// (the oldest are shown)"). That time is the sender's to choose (an event's
// time is checked only to be 0 or more). Here an honest contact (node 2)
// asks the human first; then another room member (node 1), whose events
// are dated an hour back, asks 50 times. The honest ask, the first to
// arrive, is no longer in the panel: the member's later asks take all 50
// places, and keep them for as long as it goes on asking so (its newest
// ask still sorts before every honest one). Before the cap every ask was
// shown.
func TestReviewHumanPanelBackdatedAsksHideAnEarlierAsk(t *testing.T) {
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
}
