package contacts_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/contacts"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// startNet starts n nodes with the contact service as their room policy
// (the node's default) and a one-second room anti-entropy.
func startNet(t *testing.T, n int, opts ...nodetest.Option) *nodetest.Net {
	t.Helper()
	opts = append([]nodetest.Option{nodetest.WithConfig(func(i int, c *node.Config) {
		c.SyncInterval = time.Second
	})}, opts...)
	return nodetest.Start(t, n, opts...)
}

func svc(nt *nodetest.Net, i int) *contacts.Service { return nt.Node(i).Contacts() }

func mgr(nt *nodetest.Net, i int) *rooms.Manager { return nt.Node(i).Rooms() }

// waitConnected waits until nodes i and j are connected (dialled if the
// DHT has not brought them together in 15 s).
func waitConnected(t *testing.T, nt *nodetest.Net, i, j int) {
	t.Helper()
	nt.WaitConnected(i, j)
}

// state returns node i's state for node j's contact ("" if none).
func state(nt *nodetest.Net, i, j int) consent.State {
	c, ok := svc(nt, i).Book().Get(nt.ID(j), time.Now())
	if !ok {
		return ""
	}
	return c.State
}

// waitState waits until node i sees node j's contact in state want.
func waitState(t *testing.T, nt *nodetest.Net, i, j int, want consent.State) {
	t.Helper()
	nt.WaitFor(15*time.Second, func() bool { return state(nt, i, j) == want },
		"node %d to see node %d as %s (it is %q)", i, j, want, state(nt, i, j))
}

// befriend makes node req ask node appr, which approves; it returns the
// request ID once both are active.
func befriend(t *testing.T, nt *nodetest.Net, req, appr int, validFor time.Duration) string {
	t.Helper()
	ctx := context.Background()
	res, err := svc(nt, req).Request(ctx, peer.AddrInfo{ID: nt.ID(appr)}, "hello from "+nt.Node(req).Handle())
	if err != nil {
		t.Fatalf("node %d requests node %d: %v", req, appr, err)
	}
	if !res.Delivered || res.State != consent.StatePendingOut {
		t.Fatalf("request result %+v", res)
	}
	waitState(t, nt, appr, req, consent.StatePendingIn)
	a, err := svc(nt, appr).Approve(ctx, res.ID, validFor)
	if err != nil {
		t.Fatalf("node %d approves: %v", appr, err)
	}
	if !a.Delivered || a.State != consent.StateActive {
		t.Fatalf("approve result %+v", a)
	}
	waitState(t, nt, req, appr, consent.StateActive)
	return res.ID
}

// createRoom makes a room on node i.
func createRoom(t *testing.T, nt *nodetest.Net, i int) identity.RoomID {
	t.Helper()
	id, err := mgr(nt, i).Create(context.Background(), "consent", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// invite makes node i invite node j and waits until j joined.
func invite(t *testing.T, nt *nodetest.Net, i, j int, id identity.RoomID) {
	t.Helper()
	if _, err := mgr(nt, i).Invite(context.Background(), id, nt.ID(j), identity.HumanAgent); err != nil {
		t.Fatalf("node %d invites node %d: %v", i, j, err)
	}
	nt.WaitFor(20*time.Second, func() bool { return has(nt, j, id, rooms.KindJoin, nt.ID(j), "") },
		"node %d to join room %s", j, id)
}

// has reports whether node i's log of room id holds an event of kind by
// author (with text, for messages).
func has(nt *nodetest.Net, i int, id identity.RoomID, kind rooms.Kind, author peer.ID, text string) bool {
	vs, err := mgr(nt, i).Log(id, 10000, nil)
	if err != nil {
		return false
	}
	for _, v := range vs {
		if v.Kind == kind && v.Author == author && (text == "" || v.Text == text) {
			return true
		}
	}
	return false
}

func say(t *testing.T, nt *nodetest.Net, i int, id identity.RoomID, text string) {
	t.Helper()
	if _, err := mgr(nt, i).Say(context.Background(), id, rooms.SayArgs{Agent: identity.HumanAgent, Text: text}); err != nil {
		t.Fatalf("node %d says %q: %v", i, text, err)
	}
}

// counter sums a counter of node i's registry, filtered by one label value
// ("" for all).
func counter(t *testing.T, nt *nodetest.Net, i int, name, label, value string) float64 {
	t.Helper()
	mfs, err := nt.Node(i).Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && (value == "" || l.GetValue() == value) {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

func rejected(t *testing.T, nt *nodetest.Net, i int, reason string) float64 {
	return counter(t, nt, i, "parley_contact_rejected_total", "reason", reason)
}

func loadKey(t *testing.T, nt *nodetest.Net, i int) crypto.PrivKey {
	t.Helper()
	k, err := identity.LoadOrCreate(filepath.Join(nt.Home(i), node.KeyFileName))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// send opens /parley/contact/1 from node i to node j, as a hostile peer
// would, writes m and returns the answer.
func send(t *testing.T, nt *nodetest.Net, i, j int, m consent.Message) *consent.Message {
	t.Helper()
	return sendFrom(t, nt.Node(i).Host(), nt.ID(j), m)
}

// sendFrom sends m from h to peer to on the contact protocol and returns
// the answer.
func sendFrom(t *testing.T, h host.Host, to peer.ID, m consent.Message) *consent.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := h.NewStream(ctx, to, consent.ProtocolID)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := consent.WriteFrame(s, m); err != nil {
		t.Fatal(err)
	}
	_ = s.CloseWrite()
	b, err := consent.ReadFrame(s, 0)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	ans, err := consent.DecodeMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	return ans
}

func wantErr(t *testing.T, err, want error, text ...string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	for _, s := range text {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("err = %v, want it to say %q", err, s)
		}
	}
}
