package inbox_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// befriend makes node req ask node appr, which approves; it returns once
// both see an active contact.
func befriend(t testing.TB, nt *nodetest.Net, req, appr int) {
	t.Helper()
	ctx := context.Background()
	state := func(i, j int) consent.State {
		c, ok := nt.Node(i).Contacts().Book().Get(nt.ID(j), time.Now())
		if !ok {
			return ""
		}
		return c.State
	}
	res, err := nt.Node(req).Contacts().Request(ctx, peer.AddrInfo{ID: nt.ID(appr), Addrs: nt.Node(appr).Host().Addrs()}, "hello")
	if err != nil {
		t.Fatalf("node %d asks node %d: %v", req, appr, err)
	}
	nt.WaitFor(20*time.Second, func() bool { return state(appr, req) == consent.StatePendingIn },
		"node %d to see node %d's request", appr, req)
	if _, err := nt.Node(appr).Contacts().Approve(ctx, res.ID, 0); err != nil {
		t.Fatalf("node %d approves: %v", appr, err)
	}
	nt.WaitFor(20*time.Second, func() bool {
		return state(req, appr) == consent.StateActive && state(appr, req) == consent.StateActive
	}, "nodes %d and %d to be active contacts", req, appr)
}

// A contact that told this node it runs no agent has no agent of the name
// asked: the ask and the invite are refused, and the room stays as it was
// (before, a mistyped name was invited for good). Its human always exists.
// A node that tells nothing of its agents may run the agent: the ask goes
// through, and its result says the agent was not checked.
func TestUnknownAgentOfAContactRefused(t *testing.T) {
	nt := start(t, 3)
	ctx := context.Background()
	befriend(t, nt, 0, 1)
	nt.WaitFor(20*time.Second, func() bool { return nt.Node(0).Agents().Heard(nt.ID(1)) }, "node 0 to hear node 1's presence (no agents)")
	if nt.Node(0).Agents().Heard(nt.ID(2)) {
		t.Fatal("node 0 holds presence of node 2, which is no contact")
	}
	res, err := ib(nt, 0).OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "design"})
	if err != nil {
		t.Fatal(err)
	}
	before, err := ib(nt, 0).Get(ctx, res.RoomID)
	if err != nil {
		t.Fatal(err)
	}
	ghost := "ghost@" + nt.ID(1).String()
	_, err = ib(nt, 0).Ask(ctx, "human", localapi.AskRequest{Room: "design", To: ghost, Text: "to nobody"})
	if !localapi.IsCode(err, localapi.CodeUnknownAgent) || !strings.Contains(err.Error(), `no agent "ghost" is alive`) {
		t.Fatalf("ask of an agent a contact does not run: %v", err)
	}
	if _, err := ib(nt, 0).Invite(ctx, "human", localapi.InviteRequest{Room: "design", Member: ghost}); !localapi.IsCode(err, localapi.CodeUnknownAgent) {
		t.Fatalf("invite of an agent a contact does not run: %v", err)
	}
	if _, err := ib(nt, 0).Ask(ctx, "human", localapi.AskRequest{To: ghost, Text: "to nobody"}); !localapi.IsCode(err, localapi.CodeUnknownAgent) {
		t.Fatalf("ask of an agent a contact does not run, in a room of the two: %v", err)
	}
	after, err := ib(nt, 0).Get(ctx, res.RoomID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Events != before.Events || slices.Contains(after.Agents, ghost) || len(ib(nt, 0).List(ctx)) != 1 {
		t.Fatalf("refused calls changed the rooms: %d → %d events, agents %v, %d rooms", before.Events, after.Events, after.Agents, len(ib(nt, 0).List(ctx)))
	}

	// Once the contact runs an agent, that one is found, and its human
	// still is (no presence lists it).
	coder := register(t, nt, 1, "coder")
	nt.WaitFor(20*time.Second, func() bool {
		return slices.ContainsFunc(nt.Node(0).Agents().Who(ctx), func(w agents.WhoEntry) bool { return w.Agent+"@"+w.PeerID == coder })
	}, "node 0 to see coder")
	for _, to := range []string{coder, "human@" + nt.ID(1).String()} {
		a, err := ib(nt, 0).Ask(ctx, "human", localapi.AskRequest{Room: "design", To: to, Text: "you there?"})
		if err != nil || a.Note != "" {
			t.Fatalf("ask of %s: %+v %v", to, a, err)
		}
	}
	unseen := "ghost@" + nt.ID(2).String()
	a, err := ib(nt, 0).Ask(ctx, "human", localapi.AskRequest{Room: "design", To: unseen, Text: "anyone?"})
	if err != nil || !strings.Contains(a.Note, unseen+" could not be checked") {
		t.Fatalf("ask of an agent of a node that tells nothing: %+v %v", a, err)
	}
}
