package node

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/contacts"
)

// Contacts is the node's contact service (nil before Start).
func (n *Node) Contacts() *contacts.Service { return n.contacts }

// newContacts builds the contact service. It needs the host, store and DHT;
// the rooms it asks about (sharesRoom) may come later.
func (n *Node) newContacts() error {
	cs, err := contacts.New(contacts.Config{
		Host:        n.host,
		Store:       n.db,
		Key:         n.priv,
		Handle:      n.cfg.Handle,
		Logger:      n.log,
		Registry:    n.reg,
		FindPeer:    n.findPeer,
		SharesRoom:  n.sharesRoom,
		Known:       n.knownPeer,
		AutoApprove: n.autoApprove,
		UserDecided: n.untagOrgContact,
		Audit:       n.contactAudit,
		Now:         n.cfg.ContactClock,
		Changed: func() {
			if n.names != nil { // set before the contact service starts
				n.names.ListsChanged()
			}
			if n.rooms != nil { // a peer cut off leaves the rooms' meshes
				n.rooms.Revet()
			}
			n.allow.kick() // set before the contact service starts; nil-safe
		},
	})
	if err != nil {
		return err
	}
	n.contacts = cs
	return nil
}

// knownPeer reports whether the user knows p without a contact, so that
// p's contact request never gives way to strangers': today a member of a
// room this node is in, or a member of its organisation.
func (n *Node) knownPeer(p peer.ID) bool {
	return n.sharesRoom(p) || (n.org != nil && n.org.IsMember(p))
}

// sharesRoom reports whether p is a member node of a room this node is in,
// admitted through no node this user cut off (rooms.Manager.SharesRoom).
// n.rooms is set in start before anything can call this.
func (n *Node) sharesRoom(p peer.ID) bool {
	if n.rooms == nil {
		return false
	}
	var cut func(peer.ID) bool
	if n.contacts != nil {
		cut = n.contacts.CutOff
	}
	return n.rooms.SharesRoom(p, cut)
}

// contactAudit records a contact's decision; one that makes a contact
// active (this user's approval, or the peer's of this node's request) has
// the boards invite it at once.
func (n *Node) contactAudit(r audit.Record) {
	n.Audit(r)
	if r.Action == audit.ContactApprove {
		if b := n.boardKick.Load(); b != nil {
			b.Kick()
		}
		// A relay that refused this node a reservation may take one now
		// (it serves its contacts): ask it at once rather than after
		// autorelay's 30 s back-off.
		if n.reach != nil {
			select {
			case n.reach.relayContact <- struct{}{}:
			default:
			}
		}
	}
}
