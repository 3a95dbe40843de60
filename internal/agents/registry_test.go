package agents

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/routing"

	"github.com/parley-mesh/parley/discovery"
)

type clock struct {
	mu sync.Mutex // protects t
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func key(t testing.TB) (crypto.PrivKey, peer.ID) {
	t.Helper()
	priv, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := peer.IDFromPrivateKey(priv)
	return priv, id
}

func TestRegistryTTLSessionsAndLimits(t *testing.T) {
	priv, self := key(t)
	c := &clock{t: time.UnixMilli(1_800_000_000_000)}
	r := newRegistry()
	reg := func(name, session string, ttl int, role string) (change, error) {
		a, err := newLocal(priv, self, RegisterRequest{Name: name, Session: session, TTLSeconds: ttl, Role: role}, DefaultTTL, c.now())
		if err != nil {
			t.Fatal(err)
		}
		return r.register(a, c.now())
	}
	if ch, err := reg("coder", "s1", 10, ""); err != nil || !ch.card || !ch.presence {
		t.Fatalf("first registration: %+v %v", ch, err)
	}
	if _, err := reg("coder", "s2", 10, ""); !errors.Is(err, ErrNameTaken) {
		t.Fatalf("other session: %v", err)
	}
	if ch, err := reg("coder", "s1", 10, ""); err != nil || ch.card || ch.presence {
		t.Fatalf("same registration again: %+v %v", ch, err)
	}
	if ch, err := reg("coder", "s1", 10, "reviewer"); err != nil || !ch.card {
		t.Fatalf("new role: %+v %v", ch, err)
	}
	busy := discovery.StateBusy
	c.add(9 * time.Second)
	if _, ch, err := r.heartbeat("coder", &busy, nil, c.now()); err != nil || !ch.presence {
		t.Fatalf("heartbeat: %+v %v", ch, err)
	}
	if _, ch, _ := r.heartbeat("coder", &busy, nil, c.now()); ch.presence {
		t.Fatal("an unchanged heartbeat changed presence")
	}
	if _, err := reg("coder", "s1", 10, "reviewer"); err != nil || r.get("coder", c.now()).State != busy {
		t.Fatalf("re-registration must keep the state: %v", err)
	}
	c.add(10*time.Second - time.Millisecond)
	if r.get("coder", c.now()) == nil {
		t.Fatal("swept before its TTL")
	}
	c.add(time.Millisecond)
	if r.get("coder", c.now()) != nil || len(r.list(c.now())) != 0 {
		t.Fatal("alive at its expiry")
	}
	if _, _, err := r.heartbeat("coder", nil, nil, c.now()); !errors.Is(err, ErrUnknownAgent) {
		t.Fatalf("heartbeat after expiry: %v", err)
	}
	// An expired holder does not keep the name.
	if _, err := reg("coder", "s2", 5, ""); err != nil {
		t.Fatal(err)
	}
	gone, next := r.sweep(c.now())
	if len(gone) != 0 || !next.Equal(c.now().Add(5*time.Second)) {
		t.Fatalf("sweep: %v %v", gone, next)
	}
	c.add(5 * time.Second)
	if gone, next = r.sweep(c.now()); len(gone) != 1 || !next.IsZero() || len(r.agents) != 0 {
		t.Fatalf("sweep at expiry: %v %v %d", gone, next, len(r.agents))
	}

	for i := range discovery.MaxAgents {
		if _, err := reg(fmt.Sprintf("a%d", i), "", 60, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := reg("one-too-many", "", 60, ""); !errors.Is(err, ErrTooManyAgents) {
		t.Fatalf("65th agent: %v", err)
	}
	if _, err := reg("a3", "", 60, "updated"); err != nil {
		t.Fatalf("updating at the limit: %v", err)
	}
}

func TestRegistrationBadInput(t *testing.T) {
	priv, self := key(t)
	now := time.Now()
	for _, tc := range []RegisterRequest{
		{Name: ""},
		{Name: "-x"},
		{Name: "a b"},
		{Name: strings.Repeat("a", 65)},
		{Name: "x", TTLSeconds: -1},
		{Name: "x", TTLSeconds: int(MaxTTL/time.Second) + 1},
		{Name: "x", Role: "two\nlines"},
		{Name: "x", Role: strings.Repeat("r", 65)},
		{Name: "x", Client: "\u202eevil"},
		{Name: "x", Capabilities: []string{"c++"}},
		{Name: "x", Capabilities: []string{""}},
		{Name: "x", Capabilities: make([]string, 33)},
		{Name: "x", WorkingOn: strings.Repeat("w", 501)},
		{Name: "x", WorkingOn: "bell\a"},
		{Name: "x", Session: "s\x00"},
		{Name: "x", Session: strings.Repeat("s", MaxSession+1)},
	} {
		if _, err := newLocal(priv, self, tc, DefaultTTL, now); !errors.Is(err, ErrBadInput) {
			t.Errorf("%+v: err = %v, want ErrBadInput", tc, err)
		}
	}
	a, err := newLocal(priv, self, RegisterRequest{Name: " Claude-API ", Capabilities: []string{"Go", " rust", "go"}, Role: " lead "}, DefaultTTL, now)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "claude-api" || strings.Join(a.Caps, ",") != "go,rust" || a.Role != "lead" || a.TTL != DefaultTTL {
		t.Fatalf("normalized: %+v", a)
	}
	for _, s := range []string{"offline", "", "sleeping"} {
		if _, err := ParseState(s); !errors.Is(err, ErrBadInput) {
			t.Errorf("state %q: %v", s, err)
		}
	}
}

// Presence receiving with a fake clock: replayed seqs are refused, a
// contact's agents go offline after three missed heartbeats, and a contact
// that is revoked disappears at once.
func TestPresenceStaleAfterMissedHeartbeats(t *testing.T) {
	priv, _ := key(t)
	h, err := libp2p.New(libp2p.Identity(priv), libp2p.NoListenAddrs)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	c := &clock{t: time.UnixMilli(1_800_000_000_000)}
	friendKey, friend := key(t)
	cs := &fakeContacts{active: []Contact{{Peer: friend, Handle: "bob", Presence: true}}}
	s, err := New(Config{Host: h, Key: priv, Routing: noRouting{}, Contacts: cs, Heartbeat: time.Second, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msg := func(seq uint64) *discovery.Presence {
		p := &discovery.Presence{Peer: friend, Seq: seq, Agents: []discovery.AgentState{{Agent: "coder", State: discovery.StateBusy, WorkingOn: "x"}}}
		wire, err := discovery.SealPresence(friendKey, p)
		if err != nil {
			t.Fatal(err)
		}
		p, err = discovery.DecodePresence(wire)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	shown := func() bool {
		for _, e := range s.Who(context.Background()) {
			if e.PeerID == friend.String() && e.Agent == "coder" && e.Handle == "bob" && e.WorkingOn == "x" {
				return true
			}
		}
		return false
	}
	if !s.take(friend, msg(5)) || !shown() {
		t.Fatal("first message not taken")
	}
	if s.take(friend, msg(5)) || s.take(friend, msg(4)) {
		t.Fatal("replayed seq taken")
	}
	c.add(MissedHeartbeats * time.Second)
	if !shown() {
		t.Fatal("offline before three heartbeats were missed")
	}
	c.add(time.Millisecond)
	if shown() {
		t.Fatal("shown after three missed heartbeats")
	}
	if !s.take(friend, msg(6)) || !shown() {
		t.Fatal("a new message does not bring it back")
	}
	cs.set(nil)
	if shown() {
		t.Fatal("a revoked contact is still shown")
	}
}

type fakeContacts struct {
	mu     sync.Mutex // protects active
	active []Contact
}

func (f *fakeContacts) set(cs []Contact) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active = cs
}

func (f *fakeContacts) Active() []Contact {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Contact(nil), f.active...)
}

func (f *fakeContacts) Allowed(p peer.ID) error {
	for _, c := range f.Active() {
		if c.Peer == p {
			return nil
		}
	}
	return errors.New("not a contact")
}

type noRouting struct{}

func (noRouting) PutValue(context.Context, string, []byte, ...routing.Option) error {
	return routing.ErrNotSupported
}
func (noRouting) GetValue(context.Context, string, ...routing.Option) ([]byte, error) {
	return nil, routing.ErrNotFound
}
func (noRouting) Provide(context.Context, cid.Cid, bool) error { return routing.ErrNotSupported }
func (noRouting) FindProvidersAsync(context.Context, cid.Cid, int) <-chan peer.AddrInfo {
	ch := make(chan peer.AddrInfo)
	close(ch)
	return ch
}
func (noRouting) FindPeer(context.Context, peer.ID) (peer.AddrInfo, error) {
	return peer.AddrInfo{}, routing.ErrNotFound
}

// A provider that gave no valid card is asked after the others for a
// while, one that gives one again is not; a contact always comes first;
// and at most maxEmpty such providers are remembered.
func TestProvidersThatGaveNothingAreAskedLast(t *testing.T) {
	priv, _ := key(t)
	h, err := libp2p.New(libp2p.Identity(priv), libp2p.NoListenAddrs)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	c := &clock{t: time.UnixMilli(1_800_000_000_000)}
	_, friend := key(t)
	s, err := New(Config{Host: h, Key: priv, Routing: noRouting{}, Now: c.now,
		Contacts: &fakeContacts{active: []Contact{{Peer: friend}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, stranger := key(t)
	contact := s.contactOf()
	if s.providerRank(stranger, contact) != rankOther || s.providerRank(friend, contact) != rankContact {
		t.Fatal("ranks of a stranger and a contact")
	}
	s.fetched(stranger, false)
	s.fetched(friend, false)
	if s.providerRank(stranger, contact) != rankEmpty || s.providerRank(friend, contact) != rankContact {
		t.Fatal("a stranger that gave nothing is not asked last, or a contact is not asked first")
	}
	c.add(emptyFor)
	if s.providerRank(stranger, contact) != rankOther {
		t.Fatal("still asked last after emptyFor")
	}
	s.fetched(stranger, false)
	s.fetched(stranger, true)
	if s.providerRank(stranger, contact) != rankOther {
		t.Fatal("asked last after it gave a card")
	}
	for i := range maxEmpty + 100 {
		p := peer.ID(fmt.Sprint("p", i))
		s.fetched(p, false)
		if i%1000 == 0 {
			c.add(time.Minute)
		}
	}
	s.emptyMu.Lock()
	n := len(s.empty)
	s.emptyMu.Unlock()
	if n > maxEmpty {
		t.Fatalf("%d providers remembered, bound %d", n, maxEmpty)
	}
}
