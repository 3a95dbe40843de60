package contacts_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/canon"
	"github.com/parley-mesh/parley/internal/frame"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// sharedRoom starts three nodes: node 2 is a contact of nodes 0 and 1 and
// brings both into a room, so node 1 is a co-member of node 0 but not its
// contact. Node 1 invites anyone (as a hostile node would).
func sharedRoom(t *testing.T) *nodetest.Net { return sharedRoomWith(t, true) }

// sharedRoomWith is sharedRoom; with open false, node 1 is a stock node.
func sharedRoomWith(t *testing.T, open bool) *nodetest.Net {
	t.Helper()
	nt := startNet(t, 3, nodetest.WithConfig(func(i int, c *node.Config) {
		c.SyncInterval = time.Second
		if i == 1 && open {
			c.RoomPolicy = openPolicy{}
		}
	}))
	nt.ConnectAll()
	befriend(t, nt, 0, 2, 0)
	befriend(t, nt, 1, 2, 0)
	room := createRoom(t, nt, 2)
	invite(t, nt, 2, 0, room)
	invite(t, nt, 2, 1, room)
	nt.WaitFor(20*time.Second, func() bool { return mgr(nt, 0).SharesRoom(nt.ID(1), nil) }, "node 0 to know node 1 as a co-member")
	return nt
}

func inRoom(nt *nodetest.Net, i int, id identity.RoomID) bool {
	_, err := mgr(nt, i).Get(id)
	return err == nil
}

// TestInvitesFromCoMembersWait: an invite from a co-member who is not a
// contact opens nothing until the user accepts it; a declined one is
// refused when told again; a contact's invite joins at once.
func TestInvitesFromCoMembersWait(t *testing.T) {
	nt := sharedRoom(t)
	ctx := context.Background()
	var ids []identity.RoomID
	for _, name := range []string{"first", "second"} {
		id, err := mgr(nt, 1).Create(ctx, name, identity.HumanAgent)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mgr(nt, 1).Invite(ctx, id, nt.ID(0), identity.HumanAgent); err != nil {
			t.Fatalf("invite: %v", err)
		}
		ids = append(ids, id)
	}
	if inRoom(nt, 0, ids[0]) || inRoom(nt, 0, ids[1]) {
		t.Fatal("a co-member's invite opened a room without the user")
	}
	w := mgr(nt, 0).Invites()
	if len(w) != 2 || w[0].Room != ids[0] || w[0].Name != "first" || w[0].Inviter != nt.ID(1) || w[0].Expires.Sub(w[0].At) != rooms.InviteTTL {
		t.Fatalf("waiting invites: %+v", w)
	}
	if _, err := mgr(nt, 0).AcceptInvite(string(ids[0])[:8]); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool { return has(nt, 0, ids[0], rooms.KindJoin, nt.ID(0), "") }, "node 0 to join the accepted room")
	if _, err := mgr(nt, 0).DeclineInvite(string(ids[1])); err != nil {
		t.Fatal(err)
	}
	if w := mgr(nt, 0).Invites(); len(w) != 0 {
		t.Fatalf("after accept and decline: %+v", w)
	}
	_, err := mgr(nt, 1).Invite(ctx, ids[1], nt.ID(0), identity.HumanAgent)
	wantErr(t, err, rooms.ErrInviteRefused, "declined")
	_, err = mgr(nt, 0).AcceptInvite(string(ids[1]))
	wantErr(t, err, rooms.ErrUnknownRoom, "parley invites")

	// A contact's invite opens the room at once.
	own := createRoom(t, nt, 2)
	invite(t, nt, 2, 0, own)
}

// TestStockNodeInvitesNoCoMember: a stock node does not invite a co-member
// of a room it shares that is not its contact (its node, or a named agent
// of it, into another room): members take an invitee on its inviter's word,
// and the inviter holds no consent of the co-member's
// (TestCoMemberInviteNeedsAContactToVouch). An agent of a node already in
// the room may be invited (that node was vouched for when it came in),
// until the inviter's user cuts the node off.
func TestStockNodeInvitesNoCoMember(t *testing.T) {
	nt := sharedRoomWith(t, false)
	ctx := context.Background()
	id, err := mgr(nt, 1).Create(ctx, "carolsroom", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	_, err = mgr(nt, 1).Invite(ctx, id, nt.ID(0), identity.HumanAgent)
	wantErr(t, err, rooms.ErrInviteRefused, "not a contact")
	_, err = mgr(nt, 1).InviteAgent(ctx, id, nt.ID(0), "planner", identity.HumanAgent)
	wantErr(t, err, rooms.ErrInviteRefused, "not a contact")
	if w := mgr(nt, 0).Invites(); len(w) != 0 {
		t.Fatalf("waiting invites: %+v", w)
	}
	// An agent of a node already in the shared room.
	var shared identity.RoomID
	for _, in := range mgr(nt, 1).List() {
		if in.Creator == nt.ID(2) {
			shared = in.ID
		}
	}
	if _, err := mgr(nt, 1).InviteAgent(ctx, shared, nt.ID(0), "helper", identity.HumanAgent); err != nil {
		t.Fatalf("invite of an agent of a node in the room: %v", err)
	}
	// Node 0 asks node 1 for contact and node 1's user denies it.
	res, err := svc(nt, 0).Request(ctx, peer.AddrInfo{ID: nt.ID(1)}, "")
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, nt, 1, 0, consent.StatePendingIn)
	if _, err := svc(nt, 1).Deny(ctx, res.ID); err != nil {
		t.Fatal(err)
	}
	_, err = mgr(nt, 1).InviteAgent(ctx, shared, nt.ID(0), "other", identity.HumanAgent)
	wantErr(t, err, rooms.ErrInviteRefused, "denied")
}

// inviteNotice is /parley/invite/1's notice, as a hostile peer builds it.
type inviteNotice struct {
	Room  string `cbor:"1,keyasint"`
	Name  string `cbor:"2,keyasint,omitempty"`
	Event []byte `cbor:"3,keyasint"`
}

type inviteAnswer struct {
	OK    bool   `cbor:"1,keyasint,omitempty"`
	Error string `cbor:"2,keyasint,omitempty"`
}

// forgeInvite sends target a notice of an invite, signed by key, into a
// room of a fresh ID that does not exist anywhere.
func forgeInvite(t *testing.T, nt *nodetest.Net, from, to int, key crypto.PrivKey, n int) inviteAnswer {
	t.Helper()
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		t.Fatal(err)
	}
	room := rooms.DeriveRoomID(nt.ID(from), nonce)
	var parent rooms.ID
	copy(parent[:], nonce)
	wire, _, err := rooms.Seal(key, &rooms.Event{Room: room, Author: nt.ID(from), Agent: identity.HumanAgent, Seq: 2,
		Parents: []rooms.ID{parent}, Depth: 2, Time: time.Now().UnixMilli(), Kind: rooms.KindInvite, Body: []byte(nt.ID(to))})
	if err != nil {
		t.Fatal(err)
	}
	b, err := canon.Enc.Marshal(inviteNotice{Room: string(room), Name: fmt.Sprintf("flood %d", n), Event: wire})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := nt.Node(from).Host().NewStream(ctx, nt.ID(to), rooms.ProtocolInvite)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := frame.Write(s, b); err != nil {
		t.Fatal(err)
	}
	_ = s.CloseWrite()
	raw, err := frame.Read(s, 4096)
	if err != nil {
		t.Fatalf("invite %d: no answer: %v", n, err)
	}
	var a inviteAnswer
	if err := canon.StrictDec(16).Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestInviteFloodBounded: a co-member who is not a contact sends 2,000
// invites. Eight wait for the user, the rest are refused, no room opens,
// and the node's goroutines and heap stay within bounds: at most 64 more
// goroutines and 64 MiB more heap (the process holds three nodes).
func TestInviteFloodBounded(t *testing.T) {
	nt := sharedRoom(t)
	key := loadKey(t, nt, 1)
	rooms0 := len(mgr(nt, 0).List())
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap0, g0 := ms.HeapInuse, runtime.NumGoroutine()
	var peakG int
	var peakHeap uint64
	held, refused := 0, 0
	for n := range 2000 {
		a := forgeInvite(t, nt, 1, 0, key, n)
		switch {
		case a.OK:
			held++
		case strings.Contains(a.Error, "wait for the user's answer"):
			refused++
		default:
			t.Fatalf("invite %d: %q", n, a.Error)
		}
		if n%100 == 0 {
			runtime.ReadMemStats(&ms)
			peakG, peakHeap = max(peakG, runtime.NumGoroutine()), max(peakHeap, ms.HeapInuse)
		}
	}
	runtime.ReadMemStats(&ms)
	peakG, peakHeap = max(peakG, runtime.NumGoroutine()), max(peakHeap, ms.HeapInuse)
	t.Logf("goroutines %d → peak %d; heap in use %.1f → peak %.1f MiB", g0, peakG, float64(heap0)/(1<<20), float64(peakHeap)/(1<<20))
	if held != rooms.MaxInvitesPerInviter || refused != 2000-held {
		t.Fatalf("held %d, refused %d", held, refused)
	}
	if n := len(mgr(nt, 0).Invites()); n != rooms.MaxInvitesPerInviter {
		t.Fatalf("%d invites wait", n)
	}
	if n := len(mgr(nt, 0).List()); n != rooms0 {
		t.Fatalf("the flood opened %d rooms", n-rooms0)
	}
	if peakG > g0+64 {
		t.Fatalf("goroutines grew from %d to %d", g0, peakG)
	}
	if peakHeap > heap0+64<<20 {
		t.Fatalf("heap grew from %d to %d bytes", heap0, peakHeap)
	}
	// The waiting invites survive a restart, and still count.
	nt.Crash(0)
	nt.Restart(0)
	if n := len(mgr(nt, 0).Invites()); n != rooms.MaxInvitesPerInviter {
		t.Fatalf("%d invites wait after a restart", n)
	}
}

// TestContactOpensBoundedRooms: a contact's invites open rooms at once up
// to rooms.MaxRoomsPerInviter; past it, the next waits for the user like a
// stranger's, and the user's accept opens it.
func TestContactOpensBoundedRooms(t *testing.T) {
	old := rooms.MaxRoomsPerInviter.Load()
	rooms.MaxRoomsPerInviter.Store(2)
	defer rooms.MaxRoomsPerInviter.Store(old)
	nt := startNet(t, 2)
	nt.ConnectAll()
	befriend(t, nt, 0, 1, 0)
	var ids []identity.RoomID
	for range 3 {
		id := createRoom(t, nt, 1)
		if _, err := mgr(nt, 1).Invite(context.Background(), id, nt.ID(0), identity.HumanAgent); err != nil {
			t.Fatalf("invite: %v", err)
		}
		ids = append(ids, id)
	}
	if !inRoom(nt, 0, ids[0]) || !inRoom(nt, 0, ids[1]) {
		t.Fatal("a contact's first invites did not open their rooms")
	}
	if inRoom(nt, 0, ids[2]) {
		t.Fatalf("a contact's invite opened a room past MaxRoomsPerInviter (%d)", rooms.MaxRoomsPerInviter.Load())
	}
	if w := mgr(nt, 0).Invites(); len(w) != 1 || w[0].Room != ids[2] || w[0].Inviter != nt.ID(1) {
		t.Fatalf("waiting invites: %+v", w)
	}
	if _, err := mgr(nt, 0).AcceptInvite(string(ids[2])); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(20*time.Second, func() bool { return has(nt, 0, ids[2], rooms.KindJoin, nt.ID(0), "") }, "node 0 to join the accepted room")
}
