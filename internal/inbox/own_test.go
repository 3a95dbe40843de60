package inbox_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/rooms"
)

// TestSayWhileLearningOwnEvents: after a restart, a node whose members are
// connected but have not answered what they hold of its own events does
// not post: the local API says 503 "learning my own events from peers,
// retry in a moment" (code learning), once the wait is over.
func TestSayWhileLearningOwnEvents(t *testing.T) {
	nt := start(t, 2, func(c *node.Config) { c.OwnEventsWait = 300 * time.Millisecond })
	ctx := context.Background()
	m0 := nt.Node(0).Rooms()
	room, err := m0.Create(ctx, "learning", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m0.Invite(ctx, room, nt.ID(1), identity.HumanAgent); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		_, err := nt.Node(1).Rooms().Say(ctx, room, rooms.SayArgs{Agent: identity.HumanAgent, Text: "joined"})
		return err == nil
	}, "node 1 to join and speak")
	nt.Crash(1)
	// Node 0 stays connected but answers no sync.
	nt.Node(0).Host().SetStreamHandler(rooms.ProtocolSync, func(s network.Stream) { s.Reset() })
	nt.Restart(1)
	nt.WaitFor(20*time.Second, func() bool {
		return nt.Node(1).Host().Network().Connectedness(nt.ID(0)) == network.Connected
	}, "node 1 to reconnect to node 0")
	_, err = ib(nt, 1).Say(ctx, "human", localapi.SayRequest{Room: string(room), Text: "too early"})
	var e *localapi.Error
	if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable || e.Code != localapi.CodeLearning ||
		!strings.Contains(e.Message, "learning my own events from peers, retry in a moment") {
		t.Fatalf("say before any member answered: %v (%+v)", err, e)
	}
	if n, err := nt.Node(1).Rooms().VersionVector(room); err != nil || n[nt.ID(1)] != 2 {
		t.Fatalf("the refused say changed the room: %v %v", n, err)
	}
}
