package node

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/reconnect"
)

// startReconnect keeps contacts and room members connected: their
// addresses are remembered in the store and redialled at start, when a
// connection drops and when the node's addresses change.
func (n *Node) startReconnect() error {
	rc, err := reconnect.New(reconnect.Config{
		Host:     n.host,
		Store:    n.db,
		Peers:    n.wantedPeers,
		FindPeer: n.findPeer,
		Logger:   n.log,
		Registry: n.reg,
	})
	if err != nil {
		return err
	}
	n.reconnect = rc
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := rc.Run(n.ctx); err != nil {
			n.log.Error("reconnect stopped", "err", err)
		}
	}()
	return nil
}

// Reconnect is the node's reconnect service (nil before Start).
func (n *Node) Reconnect() *reconnect.Service { return n.reconnect }

// wantedPeers are the peers the node keeps connected: active contacts,
// peers it asked to be contacts, and member nodes of its rooms that the
// room policy vouches for (sharesRoom: admitted through no node this user
// cut off). The relay service, redials and hole punching all follow this
// one list, so a fresh key a cut-off node brought into a shared room gets
// none of them.
func (n *Node) wantedPeers() []peer.ID {
	var out []peer.ID
	for _, c := range n.contacts.Book().List(time.Now()) {
		if c.State == consent.StateActive || c.State == consent.StatePendingOut {
			out = append(out, c.Peer)
		}
	}
	seen := make(map[peer.ID]bool)
	for _, in := range n.rooms.List() {
		for _, p := range in.Members {
			if seen[p] || p == n.id {
				continue
			}
			seen[p] = true
			if n.sharesRoom(p) {
				out = append(out, p)
			}
		}
	}
	return dedupPeers(out, n.id)
}
