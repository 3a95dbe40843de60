package rooms

import (
	"context"
	"crypto/sha256"
	"errors"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
)

// validate is the room topic's GossipSub validator. It runs inline, decodes
// each message once (the result rides in ValidatorData to gossip) and
// refuses what no room state can make valid: bad bytes or signatures,
// broken limits, another room, a second create event, a lying depth, and a non-member
// author whose parents are all stored (so its invite is not in the past).
// What it cannot decide yet (unknown parents) it passes on for the room's
// goroutine to hold in the pending pool.
func (r *room) validate(_ context.Context, from peer.ID, msg *pubsub.Message) pubsub.ValidationResult {
	if it, ok := msg.ValidatorData.(*Item); ok && from == r.m.self && sameBytes(it.Wire, msg.Data) {
		// This node's own event, published with the Item it sealed
		// (room.process): Seal refuses whatever Decode would, so it is
		// neither decoded nor verified again.
		return pubsub.ValidationAccept
	}
	if len(msg.Data) > MaxWire {
		r.m.reject(ErrTooLarge)
		return pubsub.ValidationReject
	}
	// An event the room stored lately (it came by sync first) is dropped
	// before the costly part: the signature check.
	id := ID(sha256.Sum256(msg.Data))
	if _, ok := r.recent.get(id); ok && from != r.m.self {
		r.m.metrics.duplicate.Inc()
		return pubsub.ValidationIgnore
	}
	e, err := decode(msg.Data)
	if err != nil {
		r.m.log.Debug("gossip event refused", "room", string(r.id), "from", from.String(), "err", err)
		r.m.reject(err)
		return pubsub.ValidationReject
	}
	if e.Room != r.id {
		r.m.reject(ErrMalformed)
		return pubsub.ValidationReject
	}
	if from != r.m.self {
		if err := r.m.cfg.Policy.Allowed(e.Author); err != nil && !(errors.Is(err, ErrStranger) && r.founds(e)) || r.m.cfg.Policy.Allowed(from) != nil {
			r.m.metrics.rejected.WithLabelValues("no_consent").Inc()
			return pubsub.ValidationIgnore
		}
		r.mu.RLock()
		cur := r.vv[e.Author]
		_, member := r.members[e.Author]
		r.mu.RUnlock()
		// Stored events are at or below their author's seq (forks too):
		// only such a one may be stored already.
		if e.Seq <= cur {
			if _, ok := r.depthOfShared(id); ok {
				r.m.metrics.duplicate.Inc()
				return pubsub.ValidationIgnore
			}
		}
		if e.Seq <= cur && e.Kind == KindCreate {
			r.m.reject(ErrEquivocation)
			return pubsub.ValidationReject
		}
		// Another seq already used by its author is a fork (an author that
		// posted from an older copy of its data): the room keeps it.
		if e.Kind != KindCreate {
			var buf [MaxParents]uint64
			depths := buf[:0]
			for _, p := range e.Parents {
				d, ok := r.depthOfShared(p)
				if !ok {
					break
				}
				depths = append(depths, d)
			}
			if len(depths) == len(e.Parents) {
				if err := e.CheckDepth(depths); err != nil {
					r.m.reject(err)
					return pubsub.ValidationReject
				}
				if !member {
					r.m.reject(ErrNotMember)
					return pubsub.ValidationReject
				}
			} else if !member {
				// Perhaps invited in events we have not seen yet: don't
				// forward, but let sync find out.
				return pubsub.ValidationIgnore
			}
		}
	}
	msg.ValidatorData = &Item{ID: id, Event: e, Wire: msg.Data}
	if tr := r.m.cfg.Trace; tr != nil && from != r.m.self {
		tr(r.id, id, StageValidated, time.Now())
	}
	return pubsub.ValidationAccept
}

// gossipWait bounds how long GossipSub's validation waits for a busy room
// to take an event; past it the event is left to sync.
const gossipWait = time.Second

// gossip is the topic's validator: validate, then the events it accepts
// from other nodes go to the room, processed right here when it is idle
// (the topic is relayed, not subscribed, so nothing else reads them).
func (r *room) gossip(ctx context.Context, from peer.ID, msg *pubsub.Message) pubsub.ValidationResult {
	res := r.validate(ctx, from, msg)
	if res != pubsub.ValidationAccept || from == r.m.self {
		return res
	}
	it, ok := msg.ValidatorData.(*Item)
	if !ok {
		return res
	}
	in := input{item: it, from: from}
	if r.inline(in) {
		return res
	}
	// Only an event that must queue needs the deadline (and its timer).
	ctx, cancel := context.WithTimeout(ctx, gossipWait)
	defer cancel()
	if err := r.enqueue(ctx, in); err != nil {
		r.requestSync(from)
	}
	return res
}

// sameBytes reports whether a and b are the same slice (not merely equal
// bytes).
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}
