package localapi_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A confirmation without a list of the items shown sends no "shown" (a
// node from before it takes the body); an empty list crosses the wire as
// one, and confirms none of the hand-out: its items are offered again at
// once.
func TestAckShownOnTheWire(t *testing.T) {
	for _, tc := range []struct {
		req  localapi.AckRequest
		want string
	}{
		{localapi.AckRequest{Hand: "h"}, `{"hand":"h"}`},
		{localapi.AckRequest{Hand: "h", Shown: []string{}}, `{"hand":"h","shown":[]}`},
		{localapi.AckRequest{Hand: "h", Shown: []string{"a"}}, `{"hand":"h","shown":["a"]}`},
	} {
		if raw, err := json.Marshal(tc.req); err != nil || string(raw) != tc.want {
			t.Errorf("%#v: %s, %v; want %s", tc.req, raw, err, tc.want)
		}
	}

	nt := nodetest.Start(t, 1)
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Session(ctx, localapi.SessionRequest{Session: "s-beta", Name: "beta"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "r", Members: []string{"beta"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Say(ctx, "human", localapi.SayRequest{Room: "r", Text: "hi beta"}); err != nil {
		t.Fatal(err)
	}
	both := func(p localapi.Pending) bool {
		return slices.ContainsFunc(p.Items, func(it localapi.Item) bool { return it.Kind == "invitation" }) &&
			slices.ContainsFunc(p.Items, func(it localapi.Item) bool { return it.Kind == "message" && strings.Contains(it.Text, "hi beta") })
	}
	p, err := c.Take(localapi.WithTwoStep(ctx), "beta")
	if err != nil || !both(p) {
		t.Fatalf("a two-step take: %v, %v; want the invitation and the message", p.Items, err)
	}
	if p.Hand == "" {
		t.Fatal("a two-step take without a hand")
	}
	if ok, err := c.AckShown(ctx, "beta", p.Hand, []string{}); err != nil || !ok {
		t.Fatalf("ack of nothing shown: %v, %v", ok, err)
	}
	if p, err := c.Take(ctx, "beta"); err != nil || !both(p) {
		t.Fatalf("the take after nothing was shown: %v, %v; want the invitation and the message again", p.Items, err)
	}
}
