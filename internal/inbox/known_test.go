package inbox_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A contact that told this node it runs no agent has no agent of the name
// asked: the ask and the invite are refused, and the room stays as it was
// (before, a mistyped name was invited for good). Its human always exists.
// A node that tells nothing of its agents may run the agent: the ask goes
// through, and its result says the agent was not checked.
func TestUnknownAgentOfAContactRefused(t *testing.T) {
	nt := start(t, 3)
	ctx := context.Background()
	nt.Befriend(t, 0, 1)
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
	// A post addressed to it is the same slip (before, it was posted, to
	// nobody, while the ask was refused).
	if _, err := ib(nt, 0).Say(ctx, "human", localapi.SayRequest{Room: "design", To: ghost, Text: "to nobody"}); !localapi.IsCode(err, localapi.CodeUnknownAgent) {
		t.Fatalf("post to an agent a contact does not run: %v", err)
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
	p, err := ib(nt, 0).Say(ctx, "human", localapi.SayRequest{Room: "design", To: unseen, Text: "anyone at all?"})
	if err != nil || !strings.Contains(p.Note, unseen+" could not be checked") {
		t.Fatalf("post to an agent of a node that tells nothing: %+v %v", p, err)
	}
}

// The rooms asks open are named after both sides, agent@node: an agent
// that asks the humans of two nodes gets two rooms it (and its user) can
// name apart; before, both were "coder ↔ human", and the name was
// ambiguous on its node. A node whose handle is not known yet shows as the
// end of its peer ID; a long handle is cut (between characters).
func TestAskRoomsNamedApart(t *testing.T) {
	long := strings.Repeat("ö", 30) // 60 bytes
	nt := start(t, 3, func(c *node.Config) {
		if c.Handle == "node0" {
			c.Handle = long
		}
	})
	ctx := context.Background()
	nt.Befriend(t, 0, 1)
	register(t, nt, 0, "coder")
	var names []string
	for _, i := range []int{1, 2} {
		a, err := ib(nt, 0).Ask(ctx, "coder", localapi.AskRequest{To: "human@" + nt.ID(i).String(), Text: "which port?"})
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, a.Room.Name)
	}
	if names[0] == names[1] {
		t.Fatalf("two ask rooms named %q", names[0])
	}
	id2 := nt.ID(2).String()
	me := "coder@" + long[:28] + "…"
	for k, want := range []string{me + " ↔ human@node1", me + " ↔ human@…" + id2[len(id2)-8:]} {
		if names[k] != want && !(k == 1 && names[k] == me+" ↔ human@node2") {
			t.Fatalf("ask room %d is named %q, want %q", k, names[k], want)
		}
	}
	for _, name := range names {
		if _, err := ib(nt, 0).Say(ctx, "coder", localapi.SayRequest{Room: name, Text: "and the host?"}); err != nil {
			t.Fatalf("say in %q by its name: %v", name, err)
		}
	}
	// A local pair keeps its short name.
	register(t, nt, 0, "reviewer")
	a, err := ib(nt, 0).Ask(ctx, "coder", localapi.AskRequest{To: "reviewer", Text: "ok?"})
	if err != nil || a.Room.Name != "coder ↔ reviewer" {
		t.Fatalf("ask of an agent of this node: room %q, %v", a.Room.Name, err)
	}
}

// An ask of an agent of a node that is not a contact, without a room, is
// refused as an ask (why, and what to do) and leaves no room behind:
// before, a room of the two was opened, the invite refused, and the empty
// room stayed in the node's list.
func TestAskOfAStrangerLeavesNoRoom(t *testing.T) {
	nt := nodetest.Start(t, 2) // the nodes' own policy: contacts only
	ctx := context.Background()
	impl := "impl@" + nt.ID(1).String()
	_, err := ib(nt, 0).Ask(ctx, "human", localapi.AskRequest{To: impl, Text: "can you look?"})
	if !localapi.IsCode(err, localapi.CodeRefused) || !strings.Contains(err.Error(), "cannot ask "+impl) ||
		!strings.Contains(err.Error(), "not a contact") || !strings.Contains(err.Error(), "parley contact request") ||
		strings.Contains(err.Error(), "invite refused") {
		t.Fatalf("ask of a stranger's agent: %v", err)
	}
	if l := ib(nt, 0).List(ctx); len(l) != 0 {
		t.Fatalf("the refused ask left rooms behind: %+v", l)
	}
	// In a room given, it is refused the same way, and the room stays as
	// it was.
	open, err := ib(nt, 0).OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "design"})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := ib(nt, 0).Get(ctx, open.RoomID)
	_, err = ib(nt, 0).Ask(ctx, "human", localapi.AskRequest{Room: "design", To: impl, Text: "can you look?"})
	if !localapi.IsCode(err, localapi.CodeRefused) || !strings.Contains(err.Error(), "cannot ask "+impl) {
		t.Fatalf("ask of a stranger's agent in a room: %v", err)
	}
	if after, _ := ib(nt, 0).Get(ctx, open.RoomID); after.Events != before.Events || len(ib(nt, 0).List(ctx)) != 1 {
		t.Fatalf("the refused ask changed the rooms: %d → %d events", before.Events, after.Events)
	}
	// Once the nodes are contacts, the same ask opens the room of the two.
	nt.Befriend(t, 0, 1)
	if _, err := ib(nt, 0).Ask(ctx, "human", localapi.AskRequest{To: impl, Text: "can you look?"}); err != nil {
		t.Fatal(err)
	}
	if l := ib(nt, 0).List(ctx); len(l) != 2 {
		t.Fatalf("rooms after the ask of a contact's agent: %+v", l)
	}
}

// An agent a contact does not run, addressed NAME@HANDLE, is refused
// naming the node as the caller wrote it (its handle, with its peer ID
// beside it), and saying where that node's agents are listed; before, the
// refusal named the node by its peer ID alone, which the caller never
// wrote.
func TestUnknownAgentRefusedNamingTheNodeAsWritten(t *testing.T) {
	nt := start(t, 2)
	ctx := context.Background()
	nt.Befriend(t, 0, 1)
	nt.WaitFor(20*time.Second, func() bool {
		p, err := nt.Node(0).Names().Resolve("node1")
		return err == nil && p == nt.ID(1) && nt.Node(0).Agents().Heard(nt.ID(1))
	}, "node 0 to know node 1's handle and hear its presence")
	for _, to := range []string{"nobody@node1", "nobody@" + nt.ID(1).String()} {
		_, err := ib(nt, 0).Ask(ctx, "human", localapi.AskRequest{To: to, Text: "anyone?"})
		if !localapi.IsCode(err, localapi.CodeUnknownAgent) {
			t.Fatalf("ask of %s: %v", to, err)
		}
		for _, want := range []string{`no agent "nobody" is alive`, "node1 (" + nt.ID(1).String() + ")", "parley_who", "`parley who`"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("ask of %s refused as %q, which does not say %q", to, err, want)
			}
		}
	}
}

// NAME alone is an agent of this node: asked of a name no agent here has
// but a contact's agent has, the refusal gives the address that reaches
// that one, and the address works.
func TestUnknownLocalAgentNamesTheContactsAgentOfThatName(t *testing.T) {
	nt := start(t, 2)
	ctx := context.Background()
	nt.Befriend(t, 0, 1)
	coder := register(t, nt, 1, "coder")
	nt.WaitFor(20*time.Second, func() bool {
		return slices.ContainsFunc(nt.Node(0).Agents().Who(ctx), func(w agents.WhoEntry) bool { return w.Agent+"@"+w.PeerID == coder })
	}, "node 0 to see node 1's coder")
	if _, err := ib(nt, 0).OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "design"}); err != nil {
		t.Fatal(err)
	}
	_, err := ib(nt, 0).Ask(ctx, "human", localapi.AskRequest{Room: "design", To: "coder", Text: "review this?"})
	if !localapi.IsCode(err, localapi.CodeUnknownAgent) {
		t.Fatalf("ask of coder, no agent of this node: %v", err)
	}
	_, addr, ok := strings.Cut(err.Error(), "to reach the one on another node, write ")
	if !ok || !strings.HasPrefix(addr, "coder@") {
		t.Fatalf("the refusal does not give the contact's coder's address: %v", err)
	}
	if a, err := ib(nt, 0).Ask(ctx, "human", localapi.AskRequest{Room: "design", To: addr, Text: "review this?"}); err != nil || a.Note != "" {
		t.Fatalf("ask of %s, as the refusal gave it: %+v %v", addr, a, err)
	}
}
