package contacts_test

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/contacts"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

func TestRequestApproveInvite(t *testing.T) {
	nt := startNet(t, 2)
	waitConnected(t, nt, 0, 1)
	ctx := context.Background()
	room := createRoom(t, nt, 0)

	// Without consent the invite fails and says what to do.
	_, err := mgr(nt, 0).Invite(ctx, room, nt.ID(1), identity.HumanAgent)
	wantErr(t, err, rooms.ErrInviteRefused, "parley contact request "+nt.ID(1).String())
	if has(nt, 0, room, rooms.KindInvite, nt.ID(0), "") {
		t.Fatal("a refused invite left an invite event")
	}

	res, err := svc(nt, 0).Request(ctx, peer.AddrInfo{ID: nt.ID(1)}, "pair on the parser?")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Delivered || res.State != consent.StatePendingOut || res.Note != "pair on the parser?" {
		t.Fatalf("request: %+v", res)
	}
	waitState(t, nt, 1, 0, consent.StatePendingIn)
	in := svc(nt, 1).List()
	if len(in) != 1 || in[0].ID != res.ID || in[0].Handle != "node0" || in[0].Note != "pair on the parser?" || in[0].Expires != nil {
		t.Fatalf("B lists %+v", in)
	}
	// Pending is not consent.
	_, err = mgr(nt, 0).Invite(ctx, room, nt.ID(1), identity.HumanAgent)
	wantErr(t, err, rooms.ErrInviteRefused, "parley contact request")

	a, err := svc(nt, 1).Approve(ctx, res.ID, 90*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Delivered || a.State != consent.StateActive || a.Expires == nil ||
		a.Expires.Sub(time.Now().Add(90*24*time.Hour)).Abs() > time.Minute {
		t.Fatalf("approve: %+v", a)
	}
	waitState(t, nt, 0, 1, consent.StateActive)
	ca, _ := svc(nt, 0).Book().Get(nt.ID(1), time.Now())
	cb, _ := svc(nt, 1).Book().Get(nt.ID(0), time.Now())
	if ca.Cert == nil || !bytes.Equal(ca.Cert, cb.Cert) || ca.Handle != "node1" || cb.Handle != "node0" {
		t.Fatal("the nodes hold different certificates or handles")
	}
	cert, err := consent.DecodeCertificate(ca.Cert)
	if err != nil || cert.Check(nt.ID(0), nt.ID(1), time.Now()) != nil {
		t.Fatalf("stored certificate: %v", err)
	}
	for _, i := range []int{0, 1} {
		if err := svc(nt, i).Allowed(nt.ID(1 - i)); err != nil {
			t.Fatalf("node %d: Allowed: %v", i, err)
		}
		if l := svc(nt, i).List(); len(l) != 1 || l[0].State != consent.StateActive || l[0].Expires == nil {
			t.Fatalf("node %d lists %+v", i, l)
		}
	}

	// Now the invite works and the room talks both ways.
	invite(t, nt, 0, 1, room)
	say(t, nt, 1, room, "hi from B")
	nt.WaitFor(10*time.Second, func() bool { return has(nt, 0, room, rooms.KindMessage, nt.ID(1), "hi from B") },
		"A to get B's message")

	// A second request between contacts is refused locally.
	_, err = svc(nt, 0).Request(ctx, peer.AddrInfo{ID: nt.ID(1)}, "")
	wantErr(t, err, consent.ErrAlreadyContact)

	// Contacts survive a restart.
	nt.Crash(1)
	nt.Restart(1)
	if st := state(nt, 1, 0); st != consent.StateActive {
		t.Fatalf("after restart B sees A as %q", st)
	}
	if err := svc(nt, 1).CanInvite(nt.ID(0)); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}

func TestRequestThroughDHT(t *testing.T) {
	nt := startNet(t, 3)
	for i := range 3 {
		nt.WaitFor(20*time.Second, func() bool { return nt.Node(i).DHT().RoutingTable().Size() > 0 },
			"node %d to fill its routing table", i)
	}
	// Node 1 knows nothing of node 2 but its peer ID.
	// (Node 2 may dial node 1 again at any moment, from its DHT refresh:
	// forget it until one look finds it forgotten.)
	h1 := nt.Node(1).Host()
	nt.WaitFor(20*time.Second, func() bool {
		_ = h1.Network().ClosePeer(nt.ID(2))
		h1.Peerstore().ClearAddrs(nt.ID(2))
		return len(h1.Peerstore().Addrs(nt.ID(2))) == 0 && h1.Network().Connectedness(nt.ID(2)) != network.Connected
	}, "node 1 to forget how to reach node 2")
	var last error
	nt.WaitFor(20*time.Second, func() bool {
		_, last = svc(nt, 1).Request(context.Background(), peer.AddrInfo{ID: nt.ID(2)}, "found you")
		return last == nil
	}, "node 1 to reach node 2 through the DHT (last error %v)", last)
	waitState(t, nt, 2, 1, consent.StatePendingIn)
}

func TestUnreachableTargetStoresNothing(t *testing.T) {
	nt := startNet(t, 1)
	other := nodetest.Start(t, 1)
	id := other.ID(0)
	other.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	_, err := svc(nt, 0).Request(ctx, peer.AddrInfo{ID: id}, "hello?")
	wantErr(t, err, contacts.ErrUnreachable, "parley contact request")
	// A node not running, or an ID mistyped: both causes are named, and
	// where the right ID is found.
	wantErr(t, err, contacts.ErrUnreachable, "is the peer ID the one its `parley id` prints?")
	if l := svc(nt, 0).List(); len(l) != 0 {
		t.Fatalf("stored %+v", l)
	}
	_, err = svc(nt, 0).Request(ctx, peer.AddrInfo{ID: nt.ID(0)}, "")
	wantErr(t, err, contacts.ErrBadInput)
}

func TestDenyAndRateLimit(t *testing.T) {
	nt := startNet(t, 2)
	waitConnected(t, nt, 0, 1)
	ctx := context.Background()
	res, err := svc(nt, 0).Request(ctx, peer.AddrInfo{ID: nt.ID(1)}, "please")
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, nt, 1, 0, consent.StatePendingIn)
	// Deny by the requester's peer ID works as well as by request ID.
	d, err := svc(nt, 1).Deny(ctx, nt.ID(0).String())
	if err != nil {
		t.Fatal(err)
	}
	if !d.Delivered || d.State != consent.StateDenied || d.ID != res.ID {
		t.Fatalf("deny: %+v", d)
	}
	waitState(t, nt, 0, 1, consent.StateDenied)
	_, err = svc(nt, 1).Approve(ctx, res.ID, 0)
	wantErr(t, err, consent.ErrState)

	// Asking again at once is refused by B, and counted; nothing changes.
	before := rejected(t, nt, 1, "denied")
	_, err = svc(nt, 0).Request(ctx, peer.AddrInfo{ID: nt.ID(1)}, "pretty please")
	wantErr(t, err, consent.ErrDenied)
	if !errors.Is(err, consent.ErrRemote) {
		t.Fatalf("not the peer's refusal: %v", err)
	}
	// Said to the requester as it is: not the peer's own error, which
	// names the requester's "incoming request" and reads backwards here.
	if msg := err.Error(); !regexp.MustCompile(`refused: its user denied this node's request, or revoked the contact; this node may ask again after \d{4}-\d\d-\d\d \d\d:\d\d UTC$`).MatchString(msg) ||
		strings.Contains(msg, "incoming request") {
		t.Fatalf("a denied request's error: %q", msg)
	}
	if rejected(t, nt, 1, "denied") != before+1 {
		t.Fatal("refused request not counted")
	}
	if state(nt, 1, 0) != consent.StateDenied || state(nt, 0, 1) != consent.StateDenied {
		t.Fatalf("states after a refused request: %s %s", state(nt, 1, 0), state(nt, 0, 1))
	}
	// A denied node is cut off from rooms too.
	if err := svc(nt, 1).Allowed(nt.ID(0)); !errors.Is(err, consent.ErrDenied) {
		t.Fatalf("Allowed(denied) = %v", err)
	}
}

func TestRevokeStopsDelivery(t *testing.T) {
	// A revokes B; C, a contact of A's, stays in the room with both.
	nt := startNet(t, 3)
	waitConnected(t, nt, 0, 1)
	waitConnected(t, nt, 0, 2)
	ctx := context.Background()
	befriend(t, nt, 0, 1, 0)
	befriend(t, nt, 0, 2, 0)
	room := createRoom(t, nt, 0)
	invite(t, nt, 0, 1, room)
	invite(t, nt, 0, 2, room)
	say(t, nt, 1, room, "before")
	nt.WaitFor(10*time.Second, func() bool { return has(nt, 0, room, rooms.KindMessage, nt.ID(1), "before") },
		"A to get B's message before the revocation")

	res, err := svc(nt, 0).Revoke(ctx, nt.ID(1).String())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Delivered || res.State != consent.StateRevoked {
		t.Fatalf("revoke: %+v", res)
	}
	// It takes effect at once on both sides.
	if state(nt, 1, 0) != consent.StateRevoked {
		t.Fatalf("B sees A as %s right after the revocation", state(nt, 1, 0))
	}
	for _, i := range []int{0, 1} {
		if err := svc(nt, i).Allowed(nt.ID(1 - i)); !errors.Is(err, consent.ErrRevoked) {
			t.Fatalf("node %d: Allowed = %v", i, err)
		}
		if mgr(nt, i).PeerFilter(nt.ID(1-i), mgr(nt, i).TopicOf(room)) {
			t.Fatalf("node %d keeps the revoked node in the room topic's peer filter", i)
		}
	}
	_, err = mgr(nt, 0).Invite(ctx, room, nt.ID(1), identity.HumanAgent)
	wantErr(t, err, rooms.ErrInviteRefused, "parley contact request")

	// B still speaks in its copy of the room. Gossip between A and B is cut
	// (each filters the other out of the topic); C, who did not revoke B,
	// gets the message; A catches up from C without it (its Hello does not
	// ask for the events of a node it cut off, and nothing A takes built on
	// it).
	say(t, nt, 1, room, "after")
	nt.WaitFor(10*time.Second, func() bool { return has(nt, 2, room, rooms.KindMessage, nt.ID(1), "after") },
		"C to get B's message")
	if err := mgr(nt, 0).SyncNow(ctx, room, nt.ID(2)); err != nil {
		t.Fatalf("A's catch-up from C: %v", err)
	}
	if err := mgr(nt, 0).SyncNow(ctx, room, nt.ID(1)); err == nil {
		t.Fatal("A synced with the revoked node")
	}
	if has(nt, 0, room, rooms.KindMessage, nt.ID(1), "after") {
		t.Fatal("a message of the revoked node reached A's log")
	}
	// C replies, building on B's message: A takes both, so that the room
	// stays whole on every node (before, A could store no later event of
	// C's, for good), and keeps B's message from its agents. An ask of B's
	// to A's human owes A nothing either.
	say(t, nt, 2, room, "C answers B")
	nt.WaitFor(20*time.Second, func() bool { return has(nt, 0, room, rooms.KindMessage, nt.ID(2), "C answers B") },
		"A to store C's answer to B's message")
	if !has(nt, 0, room, rooms.KindMessage, nt.ID(1), "after") {
		t.Fatal("A stored C's answer without B's message it answers")
	}
	if _, err := mgr(nt, 1).Say(ctx, room, rooms.SayArgs{Agent: "bob", Text: "answer me, A", Ask: true, To: "human@" + nt.ID(0).String()}); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool { return has(nt, 2, room, rooms.KindAsk, nt.ID(1), "answer me, A") }, "C to hold B's ask")
	say(t, nt, 2, room, "C again")
	nt.WaitFor(20*time.Second, func() bool { return has(nt, 0, room, rooms.KindMessage, nt.ID(2), "C again") }, "A to store C's next message")
	if !has(nt, 0, room, rooms.KindAsk, nt.ID(1), "answer me, A") {
		t.Fatal("A stored C's message without B's ask it was built on")
	}
	read, err := nt.Node(0).Inbox().Read(ctx, "human", localapi.ReadRequest{Room: string(room), Last: 100})
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, it := range read.Messages {
		shown = append(shown, it.Text)
	}
	if !slices.Contains(shown, "C answers B") || !slices.Contains(shown, "C again") || slices.Contains(shown, "after") || slices.Contains(shown, "answer me, A") {
		t.Fatalf("A's human is shown %q: want C's messages, and none of B's since the revocation", shown)
	}
	for _, it := range read.Pending.Items {
		if strings.HasSuffix(it.From, "@"+nt.ID(1).String()) {
			t.Fatalf("A's human is handed %+v, of the node it revoked", it)
		}
	}

	// A replay of the revocation is refused and counted.
	c, _ := svc(nt, 0).Book().Get(nt.ID(1), time.Now())
	before := rejected(t, nt, 1, "replay")
	ans := send(t, nt, 0, 1, consent.Message{Kind: consent.KindRevoke, Revocation: c.Revocation})
	wantErr(t, ans.Err(), consent.ErrReplay)
	if rejected(t, nt, 1, "replay") != before+1 {
		t.Fatal("replayed revocation not counted")
	}
}

func TestRevokeWhileOffline(t *testing.T) {
	nt := startNet(t, 2)
	waitConnected(t, nt, 0, 1)
	befriend(t, nt, 1, 0, 0)
	nt.Crash(1)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	res, err := svc(nt, 0).Revoke(ctx, nt.ID(1).String())
	if err != nil {
		t.Fatal(err)
	}
	if res.Delivered || res.State != consent.StateRevoked || !strings.Contains(res.Detail, "when it connects") {
		t.Fatalf("revoke while offline: %+v", res)
	}
	if err := svc(nt, 0).Allowed(nt.ID(1)); !errors.Is(err, consent.ErrRevoked) {
		t.Fatalf("Allowed = %v", err)
	}
	// B comes back, connects, and is told.
	nt.Restart(1)
	waitState(t, nt, 1, 0, consent.StateRevoked)
}

func TestApproveWhileRequesterOffline(t *testing.T) {
	nt := startNet(t, 3)
	waitConnected(t, nt, 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	res, err := svc(nt, 1).Request(ctx, peer.AddrInfo{ID: nt.ID(0)}, "")
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, nt, 0, 1, consent.StatePendingIn)
	nt.Crash(1)
	a, err := svc(nt, 0).Approve(ctx, res.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.Delivered || a.State != consent.StatePendingIn {
		t.Fatalf("approve while offline: %+v", a)
	}
	if err := svc(nt, 0).CanInvite(nt.ID(1)); err == nil {
		t.Fatal("invite allowed before the countersignature")
	}
	nt.Restart(1)
	waitState(t, nt, 0, 1, consent.StateActive)
	waitState(t, nt, 1, 0, consent.StateActive)
}

func TestLostCountersignature(t *testing.T) {
	nt := startNet(t, 2)
	waitConnected(t, nt, 0, 1)
	ctx := context.Background()
	res, err := svc(nt, 0).Request(ctx, peer.AddrInfo{ID: nt.ID(1)}, "")
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, nt, 1, 0, consent.StatePendingIn)
	nt.Partition([]int{0}, []int{1})
	a, err := svc(nt, 1).Approve(ctx, res.ID, 0)
	if err != nil || a.Delivered {
		t.Fatalf("approve across a partition: %+v, %v", a, err)
	}
	// The approval reached A and A countersigned, but the answer was lost.
	c, _ := svc(nt, 1).Book().Get(nt.ID(0), time.Now())
	if _, _, err := svc(nt, 0).Book().Countersign(nt.ID(1), "", c.Offer, c.OfferSig, time.Now()); err != nil {
		t.Fatal(err)
	}
	if state(nt, 0, 1) != consent.StateActive || state(nt, 1, 0) != consent.StatePendingIn {
		t.Fatal("setup")
	}
	// When they meet again, B's re-sent offer is a replay for A; B makes
	// a fresh one with the same end, A renews, and both converge.
	nt.Heal()
	waitState(t, nt, 1, 0, consent.StateActive)
	ca, _ := svc(nt, 0).Book().Get(nt.ID(1), time.Now())
	cb, _ := svc(nt, 1).Book().Get(nt.ID(0), time.Now())
	if !bytes.Equal(ca.Cert, cb.Cert) || !ca.Expires.Equal(cb.Expires) {
		t.Fatal("the nodes hold different certificates after the renewal")
	}
}

func TestExpiry(t *testing.T) {
	nt := startNet(t, 2)
	waitConnected(t, nt, 0, 1)
	befriend(t, nt, 0, 1, 3*time.Second)
	if err := svc(nt, 0).CanInvite(nt.ID(1)); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1} {
		waitState(t, nt, i, 1-i, consent.StateExpired)
		if err := svc(nt, i).Allowed(nt.ID(1 - i)); !errors.Is(err, consent.ErrExpired) {
			t.Fatalf("node %d: Allowed after expiry = %v", i, err)
		}
	}
	err := svc(nt, 0).CanInvite(nt.ID(1))
	wantErr(t, err, rooms.ErrInviteRefused, "parley contact request")
	// An expired contact may ask again.
	befriend(t, nt, 1, 0, 0)
}

func TestThreePartyRoomAndStrangers(t *testing.T) {
	// Node 2 plays a stranger whose rooms invite anyone (as a hostile
	// node would); nodes 0 and 1 use consent.
	nt := startNet(t, 4, nodetest.WithConfig(func(i int, c *node.Config) {
		c.SyncInterval = time.Second
		if i == 3 {
			c.RoomPolicy = openPolicy{}
		}
	}))
	ctx := context.Background()
	nt.ConnectAll()
	befriend(t, nt, 1, 0, 0)
	befriend(t, nt, 2, 0, 0)
	// Node 0 invites its two contacts, who are strangers to each other.
	room := createRoom(t, nt, 0)
	invite(t, nt, 0, 1, room)
	invite(t, nt, 0, 2, room)
	say(t, nt, 2, room, "hello from 2")
	nt.WaitFor(15*time.Second, func() bool { return has(nt, 1, room, rooms.KindMessage, nt.ID(2), "hello from 2") },
		"node 1 to get the message of node 2, a member vouched for by node 0")
	if err := svc(nt, 1).CanInvite(nt.ID(2)); err == nil {
		t.Fatal("node 1 may invite node 2 without a contact")
	}

	// A stranger's invite is refused.
	own, err := mgr(nt, 3).Create(ctx, "stranger's room", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	_, err = mgr(nt, 3).Invite(ctx, own, nt.ID(1), identity.HumanAgent)
	wantErr(t, err, rooms.ErrInviteRefused, "not a contact")
	for _, in := range mgr(nt, 1).List() {
		if in.ID == own {
			t.Fatal("node 1 joined a stranger's room")
		}
	}
	if err := svc(nt, 1).Allowed(nt.ID(3)); !errors.Is(err, consent.ErrNoContact) {
		t.Fatalf("Allowed(stranger) = %v", err)
	}
}

// openPolicy invites anyone and accepts everyone.
type openPolicy struct{}

func (openPolicy) CanInvite(peer.ID) error { return nil }
func (openPolicy) Allowed(peer.ID) error   { return nil }

// TestFriendOfAFriendJoins: A invites its contact B, and B invites E, its
// own contact and a stranger to A. E takes the room's events from B
// (A's among them: A founded the room), joins, and talks with A.
func TestFriendOfAFriendJoins(t *testing.T) {
	nt := startNet(t, 3)
	nt.ConnectAll()
	befriend(t, nt, 1, 0, 0)
	befriend(t, nt, 2, 1, 0)
	room := createRoom(t, nt, 0)
	say(t, nt, 0, room, "before E")
	invite(t, nt, 0, 1, room)
	invite(t, nt, 1, 2, room)
	nt.WaitFor(20*time.Second, func() bool { return has(nt, 2, room, rooms.KindMessage, nt.ID(0), "before E") },
		"E to hold A's message from before it came")
	say(t, nt, 2, room, "hello from E")
	nt.WaitFor(20*time.Second, func() bool { return has(nt, 0, room, rooms.KindMessage, nt.ID(2), "hello from E") },
		"A to get E's message")
	say(t, nt, 0, room, "hello from A")
	nt.WaitFor(20*time.Second, func() bool { return has(nt, 2, room, rooms.KindMessage, nt.ID(0), "hello from A") },
		"E to get A's message")
	if in, err := mgr(nt, 2).Get(room); err != nil || in.Creator != nt.ID(0) || in.Name != "consent" {
		t.Fatalf("E's view of the room: %+v, %v", in, err)
	}
	if n := counter(t, nt, 2, "parley_room_events_rejected_total", "reason", ""); n != 0 {
		t.Fatalf("E refused %v events", n)
	}
	// A stranger stays one outside the room.
	if err := svc(nt, 2).Allowed(nt.ID(0)); err != nil {
		t.Fatalf("E does not take A, a co-member: %v", err)
	}
	if err := svc(nt, 2).CanInvite(nt.ID(0)); err == nil {
		t.Fatal("E may invite A without a contact")
	}
}

// TestCutOffNodeVouchesForNobody: A (0) revokes B (1); B then invites X
// (3), a contact of B's, into the room A, B and C (2) share, and C, a
// contact of A's, posts after X joined. A stores the invite and X's join
// (C built on them: the room stays whole) but X is no co-member it trusts:
// B vouched for it, and a node this user cut off vouches for nobody. So
// A's policy refuses X, takes X's posts only where others built on them,
// and keeps them from its agents; before, X was let in at once, in every
// room, as a member of a shared room.
func TestCutOffNodeVouchesForNobody(t *testing.T) {
	nt := startNet(t, 4)
	nt.ConnectAll()
	ctx := context.Background()
	befriend(t, nt, 0, 1, 0)
	befriend(t, nt, 0, 2, 0)
	befriend(t, nt, 1, 3, 0)
	room := createRoom(t, nt, 0)
	invite(t, nt, 0, 1, room)
	invite(t, nt, 0, 2, room)
	nt.WaitFor(30*time.Second, func() bool { return has(nt, 2, room, rooms.KindJoin, nt.ID(1), "") }, "C to hold B's join")
	if _, err := svc(nt, 0).Revoke(ctx, nt.ID(1).String()); err != nil {
		t.Fatal(err)
	}
	invite(t, nt, 1, 3, room)
	if !nodetest.Poll(30*time.Second, func() bool { return has(nt, 2, room, rooms.KindJoin, nt.ID(3), "") }) {
		for i := range 4 {
			vs, _ := mgr(nt, i).Log(room, 100, nil)
			for _, v := range vs {
				t.Logf("node %d: %s by %s seq %d %q target %s", i, v.Kind, v.Author.ShortString(), v.Seq, v.Text, v.Target.ShortString())
			}
			t.Logf("node %d allowed X: %v, B: %v", i, svc(nt, i).Allowed(nt.ID(3)), svc(nt, i).Allowed(nt.ID(1)))
		}
		t.Fatal("C to hold X's join")
	}
	say(t, nt, 2, room, "C after X joined")
	nt.WaitFor(20*time.Second, func() bool { return has(nt, 0, room, rooms.KindMessage, nt.ID(2), "C after X joined") },
		"A to store C's message, built on X's join")
	if !has(nt, 0, room, rooms.KindJoin, nt.ID(3), "") {
		t.Fatal("A stored C's message without X's join it was built on")
	}
	if err := svc(nt, 0).Allowed(nt.ID(3)); !errors.Is(err, rooms.ErrStranger) {
		t.Fatalf("A's policy on X, vouched for by a node A cut off: %v", err)
	}
	if mgr(nt, 0).SharesRoom(nt.ID(3), nil) != true || mgr(nt, 0).SharesRoom(nt.ID(3), svc(nt, 0).CutOff) {
		t.Fatal("X's membership, or the cut-off inviter's vouching, read wrong")
	}

	// X speaks; nobody builds on it: A does not take it, even from C.
	say(t, nt, 3, room, "X unanswered")
	nt.WaitFor(20*time.Second, func() bool { return has(nt, 2, room, rooms.KindMessage, nt.ID(3), "X unanswered") }, "C to hold X's post")
	if err := mgr(nt, 0).SyncNow(ctx, room, nt.ID(2)); err != nil && !errors.Is(err, rooms.ErrNoProgress) {
		t.Fatal(err)
	}
	if has(nt, 0, room, rooms.KindMessage, nt.ID(3), "X unanswered") {
		t.Fatal("A took a post of X that no member it trusts built on")
	}
	say(t, nt, 2, room, "C answers X")
	nt.WaitFor(20*time.Second, func() bool { return has(nt, 0, room, rooms.KindMessage, nt.ID(3), "X unanswered") },
		"A to take X's post once C built on it")
	read, err := nt.Node(0).Inbox().Read(ctx, "human", localapi.ReadRequest{Room: string(room), Last: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range read.Messages {
		if strings.HasSuffix(it.From, "@"+nt.ID(3).String()) {
			t.Fatalf("A's human is shown %+v, of a node only a cut-off one vouched for", it)
		}
	}
}
