package agents_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	record "github.com/libp2p/go-libp2p-record"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	dto "github.com/prometheus/client_model/go"

	"github.com/parley-mesh/parley/discovery"
	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// Short timing for tests: presence heartbeat 1 s (offline after 3 s of
// silence), agents swept after 2 s without a heartbeat.
const (
	testHeartbeat = time.Second
	testAgentTTL  = 2 * time.Second
)

// startNet starts n nodes (mDNS off, as nodetest always has it) with short
// presence and agent timing, and waits until their DHT routing tables are
// filled.
func startNet(t testing.TB, n int) *nodetest.Net {
	t.Helper()
	nt := nodetest.Start(t, n, nodetest.WithConfig(func(i int, c *node.Config) {
		c.PresenceHeartbeat = testHeartbeat
		c.AgentTTL = testAgentTTL
	}))
	nt.WaitRouting()
	return nt
}

func svc(nt *nodetest.Net, i int) *agents.Service { return nt.Node(i).Agents() }

// find runs Find on node i with a short timeout.
func find(t testing.TB, nt *nodetest.Net, i int, q string) []agents.CardView {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cs, err := svc(nt, i).Find(ctx, q)
	if err != nil {
		t.Fatalf("node %d: find %q: %v", i, q, err)
	}
	if cs == nil {
		t.Fatalf("node %d: find %q returned nil, want a list", i, q)
	}
	return cs
}

// hasCard reports whether cs holds agent of peer p with caps.
func hasCard(cs []agents.CardView, p peer.ID, agent string, caps ...string) bool {
	return slices.ContainsFunc(cs, func(c agents.CardView) bool {
		return c.PeerID == p.String() && c.Agent == agent && (caps == nil || slices.Equal(c.Capabilities, caps))
	})
}

// whoHas returns node i's who entry of agent on peer p.
func whoHas(nt *nodetest.Net, i int, p peer.ID, agent string) (agents.WhoEntry, bool) {
	for _, e := range svc(nt, i).Who(context.Background()) {
		if e.PeerID == p.String() && e.Agent == agent {
			return e, true
		}
	}
	return agents.WhoEntry{}, false
}

// counter reads a counter of node i's registry (0 if absent).
func counter(t testing.TB, nt *nodetest.Net, i int, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := nt.Node(i).Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelsMatch(m, labels) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func labelsMatch(m *dto.Metric, kv []string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		ok := false
		for _, l := range m.GetLabel() {
			if l.GetName() == kv[i] && l.GetValue() == kv[i+1] {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// rogue is a libp2p host with a Parley DHT that accepts any agent record,
// so it can push bad cards at honest nodes.
type rogue struct {
	h    host.Host
	dht  *dht.IpfsDHT
	priv crypto.PrivKey
	id   peer.ID
}

type anything struct{}

func (anything) Validate(string, []byte) error        { return nil }
func (anything) Select(string, [][]byte) (int, error) { return 0, nil }

func newRogue(t *testing.T, nt *nodetest.Net, connect ...int) *rogue {
	t.Helper()
	h, priv := loopbackHost(t)
	d, err := dht.New(h, dht.Mode(dht.ModeServer), dht.ProtocolPrefix(node.DHTPrefix),
		dht.Validator(record.NamespacedValidator{"pk": record.PublicKeyValidator{}, discovery.Namespace: anything{}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Close()
		h.Close()
	})
	for _, i := range connect {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := h.Connect(ctx, peer.AddrInfo{ID: nt.ID(i), Addrs: nt.Node(i).Host().Addrs()})
		cancel()
		if err != nil {
			t.Fatalf("rogue connects to node %d: %v", i, err)
		}
	}
	nt.WaitFor(20*time.Second, func() bool {
		<-d.RefreshRoutingTable()
		return d.RoutingTable().Size() >= len(connect)
	}, "the rogue's routing table")
	return &rogue{h: h, dht: d, priv: priv, id: h.ID()}
}

// forgeCard builds the wire form of a card for peer p signed by priv,
// bypassing SealCard's checks (which refuse to sign for another peer).
func forgeCard(t testing.TB, priv crypto.PrivKey, p peer.ID, agent string, caps []string, seq uint64, expires int64) []byte {
	t.Helper()
	type payload struct {
		V       uint64   `cbor:"1,keyasint,omitempty"`
		Peer    []byte   `cbor:"2,keyasint,omitempty"`
		Agent   string   `cbor:"4,keyasint,omitempty"`
		Caps    []string `cbor:"6,keyasint,omitempty"`
		Seq     uint64   `cbor:"8,keyasint,omitempty"`
		Expires int64    `cbor:"9,keyasint,omitempty"`
	}
	type signed struct {
		Payload []byte `cbor:"1,keyasint"`
		Sig     []byte `cbor:"2,keyasint"`
	}
	enc, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		t.Fatal(err)
	}
	pl, err := enc.Marshal(payload{V: 1, Peer: []byte(p), Agent: agent, Caps: caps, Seq: seq, Expires: expires})
	if err != nil {
		t.Fatal(err)
	}
	sig, err := identity.Sign(priv, identity.DomainAgentCard, pl)
	if err != nil {
		t.Fatal(err)
	}
	w, err := enc.Marshal(signed{Payload: pl, Sig: sig})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
