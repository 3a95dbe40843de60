// Package serving tells a node's services when a connected peer starts
// serving one of their protocols.
//
// A node listens, and its peers connect to it, before its services register
// their stream handlers: what a peer sends it on connect meanwhile fails
// with "protocols not supported", and the two may stay connected for hours.
// When a service registers its handler, identify pushes the node's new
// protocols to its connected peers, which emits
// event.EvtPeerProtocolsUpdated on each of them. Watch turns that event into
// a call for the protocol a service speaks, so that the service sends then
// what failed, rather than at the peer's next connection or its next retry.
package serving

import (
	"context"
	"fmt"
	"slices"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// Watch calls fn(p) for each peer p connected to h (directly, or through a
// relay only) that starts serving pid, until ctx ends.
//
// It subscribes before it returns, so no update that comes later is
// missed; the function it returns is the loop that makes the calls, to be
// run on a goroutine the caller may wait for (it returns once ctx ended).
// The subscription ends with ctx, whether the loop runs or not. The loop
// makes one call at a time, and one that falls behind holds up the host's
// identify: fn hands what takes long (a send) to another goroutine.
func Watch(ctx context.Context, h host.Host, pid protocol.ID, fn func(p peer.ID)) (func(), error) {
	sub, err := h.EventBus().Subscribe(new(event.EvtPeerProtocolsUpdated))
	if err != nil {
		return nil, fmt.Errorf("serving: watch peers' protocols: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = sub.Close() })
	return func() {
		defer func() {
			stop()
			_ = sub.Close()
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-sub.Out():
				if !ok {
					return
				}
				ev, _ := e.(event.EvtPeerProtocolsUpdated)
				if !slices.Contains(ev.Added, pid) {
					continue
				}
				if c := h.Network().Connectedness(ev.Peer); c == network.Connected || c == network.Limited {
					fn(ev.Peer)
				}
			}
		}
	}, nil
}
