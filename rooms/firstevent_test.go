package rooms_test

import (
	"crypto/rand"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// invitedKey is a room built from raw events and held by node 0: a creator
// (a key no node holds) founded it at founded, invited node 0, invited a
// key, posted gap messages, invited the key again, and posted once more.
// first offers node 0 a first event of the key with parents.
type invitedKey struct {
	id       identity.RoomID
	invite   rooms.ID // the key's invite
	near     rooms.ID // the creator's message right after it
	far      rooms.ID // its last message before the second invite
	again    rooms.ID // the key's second invite, after the gap
	after    rooms.ID // the creator's message after that
	key      crypto.PrivKey
	keyID    peer.ID
	events   uint64 // the events node 0 holds
	nt       *nodetest.Net
	t        *testing.T
	forkBody int
	depth    map[rooms.ID]uint64 // of the creator's events
}

func newInvitedKey(t *testing.T, nt *nodetest.Net, founded time.Time, gap int) *invitedKey {
	t.Helper()
	ck, creator := genKey(t)
	k, kid := genKey(t)
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		t.Fatal(err)
	}
	ik := &invitedKey{id: rooms.DeriveRoomID(creator, nonce), key: k, keyID: kid, nt: nt, t: t, depth: map[rooms.ID]uint64{}}
	at := founded.UnixMilli()
	var wires [][]byte
	var last rooms.ID
	post := func(seq uint64, kind rooms.Kind, body []byte) rooms.ID {
		e := rooms.Event{Room: ik.id, Author: creator, Agent: identity.HumanAgent, Seq: seq, Depth: seq, Time: at, Kind: kind, Body: body}
		if seq > 1 {
			e.Parents = []rooms.ID{last}
		}
		w, eid, err := rooms.Seal(ck, &e)
		if err != nil {
			t.Fatal(err)
		}
		wires, last = append(wires, w), eid
		ik.depth[eid] = seq
		return eid
	}
	post(1, rooms.KindCreate, append(slices.Clone(nonce), "first events"...))
	post(2, rooms.KindInvite, []byte(nt.ID(0)))
	ik.invite = post(3, rooms.KindInvite, []byte(kid))
	seq := uint64(3)
	for i := range gap {
		seq++
		m := post(seq, rooms.KindMessage, []byte("after the invite"))
		if i == 0 {
			ik.near = m
		}
		ik.far = m
	}
	ik.again = post(seq+1, rooms.KindInvite, []byte(kid))
	ik.after = post(seq+2, rooms.KindMessage, []byte("after the second invite"))
	m := mgr(nt, 0)
	if err := m.OpenInvited(ik.id, rooms.TopicFor(nonce)); err != nil {
		t.Fatal(err)
	}
	if err := m.ProcessBatch(ik.id, wires...); err != nil {
		t.Fatal(err)
	}
	ik.events = uint64(len(wires)) + 1 // and node 0's join
	ik.waitHeld()
	return ik
}

func genKey(t *testing.T) (crypto.PrivKey, peer.ID) {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p, err := peer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return k, p
}

func (ik *invitedKey) waitHeld() {
	ik.t.Helper()
	if !nodetest.Poll(10*time.Second, func() bool { return eventCount(ik.nt, 0, ik.id) == ik.events }) {
		ik.t.Fatalf("node 0 holds %d events, want %d", eventCount(ik.nt, 0, ik.id), ik.events)
	}
}

// first offers node 0 a first event of the key (a new one each time: a
// fork of the ones before) with parents, and reports whether it was taken.
func (ik *invitedKey) first(parents ...rooms.ID) bool {
	ik.t.Helper()
	ik.forkBody++
	var depth uint64
	for _, p := range parents {
		depth = max(depth, ik.depth[p]+1)
	}
	e := rooms.Event{Room: ik.id, Author: ik.keyID, Agent: "key", Seq: 1, Depth: depth, Time: time.Now().UnixMilli(),
		Kind: rooms.KindMessage, Body: []byte{byte(ik.forkBody)}, Parents: rooms.SortIDs(parents)}
	w, _, err := rooms.Seal(ik.key, &e)
	if err != nil {
		ik.t.Fatal(err)
	}
	if err := mgr(ik.nt, 0).ProcessBatch(ik.id, w); err != nil {
		ik.t.Fatal(err)
	}
	if eventCount(ik.nt, 0, ik.id) == ik.events {
		return false
	}
	ik.events++
	return true
}

// A membership's first event names the invite that admitted it among its
// parents: this node's own join does. In a room created since the rule
// began, a first event that does not is taken only with its invite a few
// events back (as a node of an older build posts its join), so a fork of a
// first seq costs no walk of the room's history.
func TestFirstEventNamesItsInvite(t *testing.T) {
	nt := startNet(t, 1)
	ik := newInvitedKey(t, nt, time.Now(), 100)
	n0 := nt.Node(0)
	before := rejected(t, n0, "not_member")
	if ik.first(ik.far) {
		t.Fatal("a first event whose invite is 100 events back was taken")
	}
	if got := rejected(t, n0, "not_member") - before; got != 1 {
		t.Fatalf("%v refusals counted as not_member, want 1", got)
	}
	for _, c := range []struct {
		name    string
		parents []rooms.ID
	}{
		{"one that names its invite", []rooms.ID{ik.after, ik.invite}},
		{"a fork that names its invite alone", []rooms.ID{ik.invite}},
		{"one that names its second invite", []rooms.ID{ik.again}},
		{"one with its invite just behind its parent", []rooms.ID{ik.near}},
		{"one with its second invite just behind its parent", []rooms.ID{ik.after}},
	} {
		if !ik.first(c.parents...) {
			t.Fatalf("a first event was refused: %s", c.name)
		}
	}
	// Node 0's own join (its first event) names node 0's invite.
	invite0, join0 := ik.nodeEvents()
	ps, err := mgr(nt, 0).Parents(ik.id, join0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ps, invite0) {
		t.Fatalf("node 0's join has parents %v, which do not name its invite %s", ps, invite0)
	}
}

// nodeEvents returns node 0's invite and its join.
func (ik *invitedKey) nodeEvents() (invite, join rooms.ID) {
	ik.t.Helper()
	vs, err := mgr(ik.nt, 0).Log(ik.id, 1000, nil)
	if err != nil {
		ik.t.Fatal(err)
	}
	for _, v := range vs {
		switch {
		case v.Kind == rooms.KindInvite && v.Target == ik.nt.ID(0):
			invite = v.ID
		case v.Kind == rooms.KindJoin && v.Author == ik.nt.ID(0):
			join = v.ID
		}
	}
	return invite, join
}

// In a room created before the rule, a first event with its invite far
// back in its past is taken, as it was then; one without its invite in its
// past at all is not.
func TestFirstEventInOlderRoomIsWalked(t *testing.T) {
	nt := startNet(t, 1)
	ik := newInvitedKey(t, nt, time.UnixMilli(rooms.NamedAdmitSince).Add(-24*time.Hour), 100)
	if !ik.first(ik.far) {
		t.Fatal("in an older room, a first event with its invite far back in its past was refused")
	}
	invite0, _ := ik.nodeEvents()
	if ik.first(invite0) {
		t.Fatal("a first event without its invite in its past was taken")
	}
}
