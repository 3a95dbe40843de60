package node

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/names"
)

// Names is the node's name service (nil before Start).
func (n *Node) Names() *names.Service { return n.names }

// newNames builds the name service; it needs the host and the store, and
// takes contacts' handles as hints once the contact service runs.
func (n *Node) newNames() error {
	s, err := names.New(names.Config{
		Host:       n.host,
		Key:        n.priv,
		Handle:     n.cfg.Handle,
		Store:      n.db,
		Hints:      n.contactHandles,
		Wanted:     n.namedPeers,
		Contacts:   n.contactPeers,
		Requesters: n.requesters,
		Member:     n.ownMember,
		CheckMember: func(p peer.ID, wire []byte) (names.Membership, error) {
			r, err := n.org.CheckCard(p, wire)
			if err != nil {
				return names.Membership{}, err
			}
			return names.Membership{Org: r.Org, Name: r.Name, Until: r.NotAfter}, nil
		},
		Logger: n.log,
	})
	if err != nil {
		return err
	}
	n.names = s
	return nil
}

// ownMember is the node's live membership certificate (nil: none).
func (n *Node) ownMember() []byte {
	if n.org == nil {
		return nil
	}
	if r := n.org.Mine(); r != nil {
		return r.Wire
	}
	return nil
}

// contactHandles are the handles contacts gave in their requests.
func (n *Node) contactHandles() map[peer.ID]string {
	if n.contacts == nil {
		return nil
	}
	out := make(map[peer.ID]string)
	for _, e := range n.contacts.List() {
		if e.Handle != "" && (e.State == consent.StateActive || e.State == consent.StatePendingIn) {
			out[e.PeerID] = e.Handle
		}
	}
	return out
}

// namedPeers are the peers whose names the node learns and keeps: those
// it keeps connected (contacts, peers it asked, room members).
func (n *Node) namedPeers() []peer.ID {
	if n.contacts == nil || n.rooms == nil {
		return nil
	}
	return n.wantedPeers()
}

// contactPeers are the node's contacts and the peers it asked to be:
// their handles rank above room members' (names.Config.Contacts).
func (n *Node) contactPeers() []peer.ID {
	if n.contacts == nil {
		return nil
	}
	var out []peer.ID
	for _, c := range n.contacts.Book().List(time.Now()) {
		if c.State == consent.StateActive || c.State == consent.StatePendingOut {
			out = append(out, c.Peer)
		}
	}
	return out
}

// requesters are the peers asking to be contacts: their names are learned
// while they ask, and not kept (a stranger can ask).
func (n *Node) requesters() []peer.ID {
	if n.contacts == nil {
		return nil
	}
	var out []peer.ID
	for _, c := range n.contacts.Book().List(time.Now()) {
		if c.State == consent.StatePendingIn {
			out = append(out, c.Peer)
		}
	}
	return out
}

// startNames runs the name service until the node closes.
func (n *Node) startNames() {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := n.names.Run(n.ctx); err != nil {
			n.log.Error("name service stopped", "err", err)
		}
	}()
}

// namesAPI serves the name service on the local API.
type namesAPI struct{ s *names.Service }

func (a namesAPI) Names(context.Context) []localapi.NameEntry {
	es := a.s.All()
	out := make([]localapi.NameEntry, len(es))
	for i, e := range es {
		out[i] = localapi.NameEntry{PeerID: e.Peer.String(), Handle: e.Handle, Name: e.Name, LikeSelf: e.LikeSelf}
		if m := e.Member; m != nil {
			out[i].Org = &localapi.Membership{OrgID: m.Org.String(), Name: m.Name, Until: m.Until}
		}
	}
	return out
}
