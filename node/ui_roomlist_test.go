package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// One message in one room sends each open page that message, not the whole
// room list again. The stream's `rooms` event carries every room with its
// members, agents and purpose, and it is sent whenever any room's event
// count changed (sendRooms compares the list's JSON, counts included),
// though the page reads no count from it: with many rooms, every message
// anywhere costs every open tab the whole list and a redraw of it. Before,
// one message sent the whole list again (85 KB for 150 rooms); now the
// list carries no counts and is sent only when what the page shows of it
// changes.
func TestDashboardMessageDoesNotResendTheRoomList(t *testing.T) {
	const rooms = 150
	nt := nodetest.Start(t, 1, nodetest.WithConfig(func(_ int, c *node.Config) { c.AgentPostLimit = -1 }))
	base, tok := uiBase(t, nt, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c0 := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c0.Close()
	var first string
	began := time.Now()
	for i := range rooms {
		res, err := c0.OpenRoom(ctx, "human", localapi.OpenRoomRequest{
			Name: fmt.Sprintf("room-%03d", i), Purpose: strings.Repeat("what this room is for; ", 10)})
		if err != nil {
			t.Fatalf("open room %d: %v", i, err)
		}
		if i == 0 {
			first = res.RoomID
		}
	}
	t.Logf("%d rooms opened in %v", rooms, time.Since(began))

	events := uiStream(ctx, t, base, tok, 4096)
	// The first burst ends with the panels; usage is among the last.
	next := func(what string) [2]string {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("stream ended waiting for %s", what)
			}
			return e
		case <-ctx.Done():
			t.Fatalf("no %s on the stream", what)
		}
		return [2]string{}
	}
	listBytes := 0
	for {
		e := next("the first burst")
		if e[0] == "rooms" {
			listBytes = len(e[1])
		}
		if e[0] == "panel" && strings.HasSuffix(e[1], `"name":"usage"}`) {
			break
		}
	}
	posted, err := c0.Say(ctx, "human", localapi.SayRequest{Room: first, Text: "deploy at noon"})
	if err != nil {
		t.Fatal(err)
	}
	roomsBytes, eventBytes := 0, 0
	for {
		e := next("the message " + posted.ID)
		switch e[0] {
		case "rooms":
			roomsBytes += len(e[1])
		case "events":
			eventBytes += len(e[1])
		}
		if e[0] == "events" && strings.Contains(e[1], posted.ID) {
			break
		}
	}
	t.Logf("room list: %d bytes; after one message: %d bytes of room list, %d of events", listBytes, roomsBytes, eventBytes)
	if roomsBytes > 16<<10 {
		t.Fatalf("one message of %d bytes in one of %d rooms sent the page %d bytes of room list (the whole list, %d bytes, again), beside its %d bytes of events",
			len("deploy at noon"), rooms, roomsBytes, listBytes, eventBytes)
	}
}
