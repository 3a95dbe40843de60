package rooms

import (
	"context"
	"errors"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
)

// validate is the room topic's GossipSub validator. It runs inline, decodes
// each message once (the result rides in ValidatorData to readGossip) and
// refuses what no room state can make valid: bad bytes or signatures,
// broken limits, another room, a second create event, a lying depth, and a non-member
// author whose parents are all stored (so its invite is not in the past).
// What it cannot decide yet (unknown parents) it passes on for the room's
// goroutine to hold in the pending pool.
func (r *room) validate(_ context.Context, from peer.ID, msg *pubsub.Message) pubsub.ValidationResult {
	e, id, err := Decode(msg.Data)
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
		if _, ok := r.depthOfShared(id); ok {
			r.m.metrics.duplicate.Inc()
			return pubsub.ValidationIgnore
		}
		r.mu.RLock()
		cur := r.vv[e.Author]
		_, member := r.members[e.Author]
		r.mu.RUnlock()
		if e.Seq <= cur && e.Kind == KindCreate {
			r.m.reject(ErrEquivocation)
			return pubsub.ValidationReject
		}
		// Another seq already used by its author is a fork (an author that
		// posted from an older copy of its data): the room keeps it.
		if e.Kind != KindCreate {
			depths := make([]uint64, 0, len(e.Parents))
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

// readGossip moves validated messages from the subscription to the room's
// goroutine, until sub is cancelled or ctx ends.
func (r *room) readGossip(ctx context.Context, sub *pubsub.Subscription) {
	for {
		msg, err := sub.Next(ctx)
		if err != nil {
			return
		}
		if msg.ReceivedFrom == r.m.self {
			continue // own events are stored before they are published
		}
		it, ok := msg.ValidatorData.(*Item)
		if !ok {
			continue
		}
		if r.submit(ctx, input{item: it, from: msg.ReceivedFrom}) != nil {
			return
		}
	}
}
