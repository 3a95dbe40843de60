package node

import (
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/peer"
	"slices"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/contacts"
)

var _ agents.Routing = (*dht.IpfsDHT)(nil)

// Agents is the node's agent service (nil before Start).
func (n *Node) Agents() *agents.Service { return n.agents }

// newAgents builds the agent service; it needs the host, DHT, store and
// contact service.
func (n *Node) newAgents() error {
	as, err := agents.New(agents.Config{
		Host:       n.host,
		Key:        n.priv,
		Routing:    n.dht,
		Contacts:   agentContacts{n.contacts},
		Store:      n.db,
		Handle:     n.cfg.Handle,
		Member:     n.ownMember,
		Logger:     n.log,
		Registry:   n.reg,
		DefaultTTL: n.cfg.AgentTTL,
		Heartbeat:  n.cfg.PresenceHeartbeat,
		CardTTL:    n.cfg.CardTTL,
		Admit:      n.admitAgent,
		AddrFilter: capDHTAddrs,
		Rename:     n.renameAgent,
	})
	if err != nil {
		return err
	}
	n.agents = as
	return nil
}

// startAgents runs the agent service until the node closes.
func (n *Node) startAgents() {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.agents.Run(n.ctx); err != nil {
			n.log.Error("agent service stopped", "err", err)
		}
	}()
}

// agentContacts shows the agent service the node's contacts: a peer with
// an active contact is one.
type agentContacts struct{ cs *contacts.Service }

func (a agentContacts) Allowed(p peer.ID) error { return a.cs.Allowed(p) }

func (a agentContacts) Active() []agents.Contact {
	var out []agents.Contact
	for _, e := range a.cs.List() {
		if e.State == consent.StateActive {
			out = append(out, agents.Contact{Peer: e.PeerID, Handle: e.Handle, Presence: slices.Contains(e.Scopes, consent.ScopePresence)})
		}
	}
	return out
}

// contactRequests counts the requests to be contacts that wait for the
// user.
func contactRequests(n *Node) int {
	if n.contacts == nil {
		return 0
	}
	k := 0
	for _, e := range n.contacts.List() {
		if e.State == consent.StatePendingIn {
			k++
		}
	}
	return k
}
