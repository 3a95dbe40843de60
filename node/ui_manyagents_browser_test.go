package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A room with many agents keeps its messages in view: the room's header
// lists every agent as a chip (#roommembers), with no bound on its height,
// above the messages (#events, flex: 1) and the post box in one column. On
// a 1280x720 page, 60 agents (one node's, a node holds 64) take half the
// column and leave the messages a quarter of it; each agent more takes
// about 5 px from them, so a room of a few nodes' agents leaves none and
// pushes the post box and the error line below the column's fold. Before,
// 60 agents' chips took 325 px of a 660 px column and left the messages
// 176 px; now #roommembers (and #roompurpose) are at most 6em high and
// scroll, and the messages keep over half the column.
func TestDashboardRoomOfManyAgentsKeepsItsMessagesInView(t *testing.T) {
	const agents = 60 // a node holds 64 live agents; a room may hold several nodes' agents
	nt := nodetest.Start(t, 1, nodetest.WithConfig(func(_ int, c *node.Config) { c.AgentPostLimit = -1 }))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c0 := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c0.Close()
	names := make([]string, agents)
	for i := range names {
		names[i] = fmt.Sprintf("worker-%03d", i)
	}
	registered(t, ctx, c0, names...)
	room, err := c0.OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "crowd", Members: names})
	if err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(time.Minute, func() bool {
		in, err := c0.Room(ctx, room.RoomID)
		return err == nil && len(in.Agents) >= agents
	}, "the room to hold its %d agents", agents)
	last, err := c0.Say(ctx, "human", localapi.SayRequest{Room: room.RoomID, Text: "who is on the deploy?"})
	if err != nil {
		t.Fatal(err)
	}
	info, err := c0.UI(ctx)
	if err != nil || info.URL == "" {
		t.Fatalf("ui: %+v %v", info, err)
	}
	b := browser(t)
	run(t, b, "a desktop's window", chromedp.EmulateViewport(1280, 720))
	run(t, b, "open the dashboard", chromedp.Navigate(info.URL))
	waitJS(t, b, time.Minute, fmt.Sprintf(`document.getElementById("status").textContent === "live" && !!window.parley.seen[%q]`, last.ID), "the room's message on the page")
	clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, room.RoomID))
	waitJS(t, b, 10*time.Second, fmt.Sprintf(`document.querySelectorAll("#roommembers .member").length >= %d && document.querySelector('#events li[data-id=%q]') !== null`, agents, last.ID), "the room opened with its agents")
	chips := eval[int](t, b, `document.querySelectorAll("#roommembers .member").length`)
	head := eval[float64](t, b, `document.getElementById("roomhead").getBoundingClientRect().height`)
	events := eval[float64](t, b, `document.getElementById("events").getBoundingClientRect().height`)
	column := eval[float64](t, b, `document.getElementById("room").getBoundingClientRect().height`)
	sendInView := eval[bool](t, b, `(() => { const s = document.getElementById("send").getBoundingClientRect(), r = document.getElementById("room").getBoundingClientRect(); return s.height > 0 && s.top >= r.top && s.bottom <= r.bottom })()`)
	t.Logf("%d agent chips: header %.0f px, messages %.0f px, column %.0f px, post button in view: %v", chips, head, events, column, sendInView)
	if events < 0.4*column || !sendInView {
		t.Fatalf("a room of %d agents: its header is %.0f px of a %.0f px column, its messages get %.0f px, the post button in view: %v",
			agents, head, column, events, sendInView)
	}
}
