package agents_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/routing"

	"github.com/parley-mesh/parley/internal/agents"
)

// providersRouting is a DHT that stores nothing and answers every provider
// lookup with the same providers, in order, at most count of them (as
// kad-dht's FindProvidersAsync); late ones come after a pause (a later DHT
// answer).
type providersRouting struct {
	provs, late []peer.AddrInfo
}

func (providersRouting) PutValue(context.Context, string, []byte, ...routing.Option) error {
	return nil
}
func (providersRouting) GetValue(context.Context, string, ...routing.Option) ([]byte, error) {
	return nil, routing.ErrNotFound
}
func (providersRouting) Provide(context.Context, cid.Cid, bool) error { return nil }
func (r providersRouting) FindProvidersAsync(ctx context.Context, _ cid.Cid, count int) <-chan peer.AddrInfo {
	all := append(append([]peer.AddrInfo(nil), r.provs...), r.late...)
	ch := make(chan peer.AddrInfo, len(all))
	go func() {
		defer close(ch)
		for i, p := range all {
			if i == count {
				return
			}
			if i == len(r.provs) {
				select {
				case <-time.After(300 * time.Millisecond):
				case <-ctx.Done():
					return
				}
			}
			ch <- p
		}
	}()
	return ch
}
func (providersRouting) FindPeer(context.Context, peer.ID) (peer.AddrInfo, error) {
	return peer.AddrInfo{}, routing.ErrNotFound
}

type noContacts struct{}

func (noContacts) Allowed(peer.ID) error    { return errors.New("not a contact") }
func (noContacts) Active() []agents.Contact { return nil }

func loopbackHost(t *testing.T) (host.Host, crypto.PrivKey) {
	t.Helper()
	priv, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := libp2p.New(libp2p.Identity(priv), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, priv
}

func runService(t *testing.T, cfg agents.Config) *agents.Service {
	t.Helper()
	s, err := agents.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Run(context.Background())
	}()
	t.Cleanup(func() {
		s.Close()
		<-done
	})
	return s
}

// Strangers with fresh keys that announce a capability (provider records
// say only "this peer has something under this name") and then hold the
// /parley/cards/1 stream open without writing. Before, eight of them took
// every one of a query's 8 fetch workers for the 10 s of a cards exchange,
// which was the whole of FindTimeout (10 s): an honest provider that a
// later DHT answer brought was never asked, and `parley find cap:go` found
// nothing. Now each fetch has fetchTimeout (2 s) and a query 16 workers:
// the late provider is asked at once.
func TestStallingProvidersDoNotHideTheRealAgent(t *testing.T) {
	ho := cardOwner(t, "", []string{"go"}, "cap:go")
	ownerInfo := peer.AddrInfo{ID: ho.ID(), Addrs: ho.Addrs()}

	// Control: the owner alone as provider is found.
	hs, ks := loopbackHost(t)
	searcher := runService(t, agents.Config{Host: hs, Key: ks, Routing: providersRouting{provs: []peer.AddrInfo{ownerInfo}},
		Contacts: noContacts{}})
	if cs, err := searcher.Find(context.Background(), "cap:go"); err != nil || !hasCard(cs, ho.ID(), "coder") {
		t.Fatalf("control: find cap:go with the owner as its only provider: %+v, %v", cs, err)
	}

	// Eight strangers announce cap:go first and answer nothing.
	provs := stallingProviders(t, 8)
	hs2, ks2 := loopbackHost(t)
	searcher2 := runService(t, agents.Config{Host: hs2, Key: ks2,
		Routing: providersRouting{provs: provs, late: []peer.AddrInfo{ownerInfo}}, Contacts: noContacts{}})
	start := time.Now()
	cs, err := searcher2.Find(context.Background(), "cap:go")
	if err != nil || !hasCard(cs, ho.ID(), "coder") {
		t.Fatalf("with 8 stalling providers found before the owner, find cap:go gave %+v (err %v) after %v: the owner's agent is hidden",
			cs, err, time.Since(start).Round(time.Millisecond))
	}
}

func pollFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		<-time.After(20 * time.Millisecond)
	}
}

// Anyone may be a provider of any key. Before, a query took at most 20
// providers of a key: strangers that announced handle:alice (or cap:go)
// from many fresh keys filled the 20 places, and Alice's own node, the one
// provider that has a card under that name, was never asked (with 200 such
// keys on the DHT nodes closest to the key, Alice's node was among the
// first 20 in about one lookup in ten; here the strangers simply come
// first, and need not even answer). Now a query takes up to maxProviders
// (200).
func TestStrangersProvidersDoNotCrowdOutTheRealAgent(t *testing.T) {
	ho := cardOwner(t, "alice", nil, "handle:alice")
	var provs []peer.AddrInfo
	for range 20 {
		h, _ := loopbackHost(t) // no /parley/cards/1 handler: refused at once
		provs = append(provs, peer.AddrInfo{ID: h.ID(), Addrs: h.Addrs()})
	}
	hs, ks := loopbackHost(t)
	searcher := runService(t, agents.Config{Host: hs, Key: ks, Contacts: noContacts{},
		Routing: providersRouting{provs: append(provs, peer.AddrInfo{ID: ho.ID(), Addrs: ho.Addrs()})}})
	cs, err := searcher.Find(context.Background(), "handle:alice")
	if err != nil || !hasCard(cs, ho.ID(), "coder") {
		t.Fatalf("with 20 strangers providing handle:alice, find handle:alice gave %+v (err %v): alice's agent is hidden", cs, err)
	}
}

type contactsOf []peer.ID

func (c contactsOf) Allowed(p peer.ID) error {
	for _, q := range c {
		if q == p {
			return nil
		}
	}
	return errors.New("not a contact")
}

func (c contactsOf) Active() []agents.Contact {
	var out []agents.Contact
	for _, p := range c {
		out = append(out, agents.Contact{Peer: p})
	}
	return out
}

// A query asks its contacts among the providers before strangers, also
// when the DHT brings them last: 48 strangers that hold the stream open
// come first, and the owner, a contact of the searcher, 300 ms later. In
// the order they came the owner would be asked after three rounds of 16
// stalled fetches of 2 s each, past the searcher's FindTimeout of 4 s; as
// a contact it is asked when the first stalled fetch ends.
func TestFindAsksContactsFirst(t *testing.T) {
	ho := cardOwner(t, "", []string{"go"}, "cap:go")
	provs := stallingProviders(t, 48)
	hs, ks := loopbackHost(t)
	searcher := runService(t, agents.Config{Host: hs, Key: ks, FindTimeout: 4 * time.Second, Contacts: contactsOf{ho.ID()},
		Routing: providersRouting{provs: provs, late: []peer.AddrInfo{{ID: ho.ID(), Addrs: ho.Addrs()}}}})
	start := time.Now()
	cs, err := searcher.Find(context.Background(), "cap:go")
	if err != nil || !hasCard(cs, ho.ID(), "coder") {
		t.Fatalf("with 48 stalling strangers found before the owner, a contact, find cap:go gave %+v (err %v) after %v",
			cs, err, time.Since(start).Round(time.Millisecond))
	}
}

// stallingProviders starts n hosts that take a cards request and answer
// nothing (until the test ends, a minute at most).
func stallingProviders(t *testing.T, n int) []peer.AddrInfo {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var provs []peer.AddrInfo
	for range n {
		h, _ := loopbackHost(t)
		h.SetStreamHandler(agents.ProtocolCards, func(st network.Stream) {
			select {
			case <-release:
			case <-time.After(time.Minute):
			}
			_ = st.Reset()
		})
		provs = append(provs, peer.AddrInfo{ID: h.ID(), Addrs: h.Addrs()})
	}
	return provs
}

// cardOwner runs a node of handle with an agent "coder" of caps, and waits
// until its card is sealed (the node finds it by query).
func cardOwner(t *testing.T, handle string, caps []string, query string) host.Host {
	t.Helper()
	ho, ko := loopbackHost(t)
	owner := runService(t, agents.Config{Host: ho, Key: ko, Routing: providersRouting{}, Contacts: noContacts{}, Handle: handle})
	if _, err := owner.Register(context.Background(), agents.RegisterRequest{Name: "coder", Capabilities: caps, TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	if !pollFor(10*time.Second, func() bool {
		cs, err := owner.Find(context.Background(), query)
		return err == nil && len(cs) == 1
	}) {
		t.Fatal("the owner's card was not sealed")
	}
	return ho
}
