package node_test

import (
	"context"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"
	msmux "github.com/multiformats/go-multistream"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/discovery"
	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/org"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// A node listens, and its peers connect to it, before its services
// register their stream handlers (node.start: the host listens, the DHT
// dials the bootstrap peers, then rooms, contacts, org, agents and names
// come up one after the other). What a peer sends it on connect meanwhile
// fails with "protocols not supported". Each service now sends it again
// once the node serves the protocol (internal/serving: identify's push
// tells the peer); before, it waited for the next connection, a retry or
// a heartbeat. The tests in this file take a protocol off a running node
// to stand for that moment (as
// contacts.TestRevocationReachesAPeerWhoseServiceStartsAfterItConnected
// does), and put it back as the service that starts does.

// starting is protocol pid taken off a node's host: the node "is
// starting". Asked counts the streams peers opened for pid meanwhile (each
// refused as not supported); Up serves pid again with the handler it had.
type starting struct {
	t       *testing.T
	h       host.Host
	pid     protocol.ID
	spy     protocol.ID
	handler protocol.HandlerFunc
	asked   atomic.Int64
	up      atomic.Bool
}

// takeOff takes pid off node i's host (see starting), and waits until the
// other running nodes know it does not serve pid (identify's push), as a
// peer that just connected to a node still starting knows: a push that
// put pid back before they heard it was gone would tell them nothing new.
func takeOff(t *testing.T, nt *nodetest.Net, i int, pid protocol.ID) *starting {
	t.Helper()
	h := nt.Node(i).Host()
	s := &starting{t: t, h: h, pid: pid, spy: "/parley-test/spy" + pid, handler: handlerOf(t, h, pid)}
	h.RemoveStreamHandler(pid)
	nt.WaitFor(15*time.Second, func() bool {
		for j := range nt.Len() {
			if n := nt.Node(j); j != i && n != nil && n.Host().Network().Connectedness(h.ID()) == network.Connected {
				if ps, err := n.Host().Peerstore().SupportsProtocols(h.ID(), pid); err != nil || len(ps) > 0 {
					return false
				}
			}
		}
		return true
	}, "the peers of node %d to know it serves no %s", i, pid)
	// A handler that never matches, asked during every negotiation:
	// it counts the asks for pid, which the host then refuses.
	h.SetStreamHandlerMatch(s.spy, func(p protocol.ID) bool {
		if p == pid && !s.up.Load() {
			s.asked.Add(1)
		}
		return false
	}, func(st network.Stream) { _ = st.Reset() })
	return s
}

// Asked is how many streams peers opened for the protocol while it was off.
func (s *starting) Asked() int64 { return s.asked.Load() }

// Up serves the protocol again with the handler it had: the service is up.
// Identify's push tells the connected peers.
func (s *starting) Up() {
	if s.up.Swap(true) {
		return
	}
	s.h.RemoveStreamHandler(s.spy)
	h := s.handler
	pid := s.pid
	s.h.SetStreamHandler(pid, func(st network.Stream) { _ = h(pid, st) })
}

// handlerOf returns the handler h serves pid with, as h's protocol switch
// gives it to a stream that asks for pid (negotiated over a loopback TCP
// connection).
func handlerOf(t *testing.T, h host.Host, pid protocol.ID) protocol.HandlerFunc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	errc := make(chan error, 1)
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		errc <- msmux.SelectProtoOrFail(pid, c)
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, hf, err := h.Mux().Negotiate(c)
	if err != nil {
		t.Fatalf("%s is not served: %v", pid, err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("%s is not served: %v", pid, err)
	}
	return hf
}

// waitAsked waits until a peer asked the node for the protocol taken off:
// what it sends on connect failed.
func (s *starting) waitAsked(nt *nodetest.Net, what string) {
	s.t.Helper()
	nt.WaitFor(20*time.Second, func() bool { return s.Asked() > 0 }, "a peer to try %s while %s is off", what, s.pid)
}

// TestInviteReachesAPeerWhoseRoomsStartAfterItConnected: a contact invited
// while it was away is told of the invite when it next connects
// (retellInvites). When it connects while starting, its rooms do not serve
// /parley/invite/1 yet and the notice fails; it is told again once they
// do. Before, it was told again only at its next connection, which could
// be hours away (the nodes keep connected).
func TestInviteReachesAPeerWhoseRoomsStartAfterItConnected(t *testing.T) {
	nt := nodetest.Start(t, 2)
	const a, b = 0, 1
	nt.Befriend(t, b, a)
	ctx := context.Background()
	id, err := nt.Node(a).Rooms().Create(ctx, "plans", "alice")
	if err != nil {
		t.Fatal(err)
	}
	// B is away while A invites it.
	nt.Partition([]int{a}, []int{b})
	if _, err := nt.Node(a).Rooms().Invite(ctx, id, nt.ID(b), "alice"); err == nil {
		t.Fatal("the invite reached a node that is away")
	}
	// B comes back, and connects to A while its rooms are starting.
	st := takeOff(t, nt, b, rooms.ProtocolInvite)
	nt.Heal()
	nt.WaitConnected(a, b)
	st.waitAsked(nt, "the invite")
	st.Up()
	nt.WaitFor(20*time.Second, func() bool {
		if _, err := nt.Node(b).Rooms().Get(id); err == nil {
			return true
		}
		return slices.ContainsFunc(nt.Node(b).Rooms().Invites(), func(w rooms.WaitingInvite) bool { return w.Room == id })
	}, "node %d, back while its rooms started, to hear of its invite", b)
}

// TestPresenceReachesAContactWhoseServiceStartsAfterItConnected: presence
// goes to a contact at once when it connects. A contact that connects
// while starting does not serve /parley/presence/1 yet and the send fails;
// it goes again once the contact serves it (and, while it stays
// connected, after a wait that doubles). Before, the send was not tried
// again before the next connection or the heartbeat (5 min), so the
// restarted contact's `parley who` lacked this node's agents.
func TestPresenceReachesAContactWhoseServiceStartsAfterItConnected(t *testing.T) {
	nt := nodetest.Start(t, 2)
	const a, b = 0, 1
	nt.Befriend(t, b, a)
	ctx := context.Background()
	nt.Partition([]int{a}, []int{b})
	if _, err := nt.Node(a).Agents().Register(ctx, agents.RegisterRequest{Name: "coder", WorkingOn: "the parser", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	st := takeOff(t, nt, b, discovery.ProtocolPresence)
	nt.Heal()
	nt.WaitConnected(a, b)
	st.waitAsked(nt, "presence")
	st.Up()
	nt.WaitFor(20*time.Second, func() bool {
		return slices.ContainsFunc(nt.Node(b).Agents().Who(ctx), func(e agents.WhoEntry) bool {
			return e.PeerID == nt.ID(a).String() && e.Agent == "coder"
		})
	}, "node %d, connected while its agent service started, to see node %d's agent", b, a)
}

// twoMembers starts two connected nodes, contacts, both members of
// organisation Y (node 0 "yann", node 1 "yves"), and returns them with the
// keys of Y and of another organisation, X.
func twoMembers(t *testing.T) (nt *nodetest.Net, x, y orgKey) {
	t.Helper()
	nt = nodetest.Start(t, 2)
	nt.ConnectAll()
	const y1, y2 = 0, 1
	x, y = newOrgKey(t, "Xco"), newOrgKey(t, "Yco")
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(y1), Handle: "yann"})
	nt.Befriend(t, y2, y1)
	y.join(t, nt, y1, y2, "yves")
	return nt, x, y
}

// TestOrgRecordsReachAMemberWhoseServiceStartsAfterItConnected: a member
// that was away is passed the organisation's records when it connects
// again (org.Service.connected), so that it stops approving the peers an
// untrust or a revocation cut off. A member that connects while starting
// does not serve /parley/org/1 yet and the pass fails; it is marked passed
// only once a pass succeeds, and passed the records once it serves the
// protocol. Before, it was marked passed all the same and got the records
// at a connection at least 10 minutes later, approving meanwhile.
func TestOrgRecordsReachAMemberWhoseServiceStartsAfterItConnected(t *testing.T) {
	nt, x, y := twoMembers(t)
	const y1, y2 = 0, 1
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: x.id, Scopes: []string{consent.ScopeAsk}})
	nt.WaitFor(10*time.Second, func() bool { return len(nt.Node(y2).Org().Trusts()) == 1 }, "node %d to hold Y's trust of X", y2)

	// Y2 is away while Y withdraws its trust.
	nt.Partition([]int{y1}, []int{y2})
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgUntrust, Subject: x.id})
	// It comes back, and connects while its organisation service starts.
	st := takeOff(t, nt, y2, org.ProtocolID)
	nt.Heal()
	nt.WaitConnected(y1, y2)
	st.waitAsked(nt, "the organisation's records")
	st.Up()
	nt.WaitFor(20*time.Second, func() bool {
		ts := nt.Node(y2).Org().Trusts()
		return len(ts) == 1 && ts[0].Kind == consent.OrgUntrust
	}, "node %d, back while its organisation service started, to hold Y's untrust of X", y2)
}

// TestHandleChangedAtRestartReachesContacts: a user changes the handle
// with `parley up --handle NEW`, that is across a restart. The node's card
// changes with it; the node stores the card it last handed out, and pushes
// the new one to its contacts as they connect. Before, a card was pushed
// only when it changed while the node ran, and a contact asks a peer for
// its card at most once in 10 minutes (names.RefetchAfter) however often
// it connects: a contact that asked before the restart showed the old
// handle for up to 10 minutes. (A fetch on a connection made while the
// node started failed, and was not made again for 10 minutes either; now
// it is made again when the peer connects or serves the protocol.)
func TestHandleChangedAtRestartReachesContacts(t *testing.T) {
	var renamed atomic.Bool
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		if i == 1 && renamed.Load() {
			c.Handle = "bobby"
		}
	}))
	const a, b = 0, 1
	nt.Befriend(t, b, a)
	nt.WaitFor(20*time.Second, func() bool { return nt.Node(a).Names().Name(nt.ID(b)) == "node1" }, "node %d to know node %d's handle", a, b)
	nt.Crash(b)
	renamed.Store(true)
	nt.Restart(b)
	nt.WaitConnected(a, b)
	nt.WaitFor(20*time.Second, func() bool { return nt.Node(a).Names().Name(nt.ID(b)) == "bobby" },
		"node %d to show node %d's new handle (it shows %q)", a, b, nt.Node(a).Names().Name(nt.ID(b)))
}

// TestOrgRecordsReachAMemberAwayTwiceInTenMinutes: a member that was away
// is passed the organisation's records when it connects again: once in
// each connected period, and again when a record was written since the
// last pass. Before, it was passed them at most once in 10 minutes,
// counted from the last pass, not from what it may have missed since: a
// laptop that dropped off the network twice within 10 minutes missed what
// was pushed during its second absence (here Y's untrust of X) until a
// connection 10 minutes after the first pass, and meanwhile approved X's
// members without its user (its peers' connections staying up, that could
// be much longer).
func TestOrgRecordsReachAMemberAwayTwiceInTenMinutes(t *testing.T) {
	nt, x, y := twoMembers(t)
	const y1, y2 = 0, 1

	// Away once: Y trusts X meanwhile; back, Y2 is passed the trust.
	nt.Partition([]int{y1}, []int{y2})
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: x.id, Scopes: []string{consent.ScopeAsk}})
	nt.Heal()
	nt.WaitFor(20*time.Second, func() bool {
		ts := nt.Node(y2).Org().Trusts()
		return len(ts) == 1 && ts[0].Kind == consent.OrgTrust
	}, "node %d, back, to hold Y's trust of X", y2)

	// Away again: Y withdraws its trust meanwhile.
	nt.Partition([]int{y1}, []int{y2})
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgUntrust, Subject: x.id})
	nt.Heal()
	nt.WaitConnected(y1, y2)
	nt.WaitFor(20*time.Second, func() bool {
		ts := nt.Node(y2).Org().Trusts()
		return len(ts) == 1 && ts[0].Kind == consent.OrgUntrust
	}, "node %d, back a second time, to hold Y's untrust of X", y2)
}
