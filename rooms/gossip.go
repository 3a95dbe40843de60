package rooms

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
)

// validate is the room topic's GossipSub validator. It runs inline, decodes
// each message once (the result rides in ValidatorData to take) and
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
	// What a peer without consent sends, and an event the room stored
	// lately (it came by sync first), are dropped before the costly part:
	// the signature check. A stranger that read the topic in a member's
	// hello can send on it; GossipSub's peer filter keeps it out of the
	// mesh, not from sending.
	if from != r.m.self && r.m.cfg.Policy.Allowed(from) != nil {
		r.m.metrics.rejected.WithLabelValues("no_consent").Inc()
		return pubsub.ValidationIgnore
	}
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
		if err := r.m.cfg.Policy.Allowed(e.Author); err != nil && !(errors.Is(err, ErrStranger) && r.founds(e)) {
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
	if from != r.m.self {
		if tr := r.m.cfg.Trace; tr != nil {
			tr(r.id, id, StageValidated, time.Now())
		}
		if gs := r.gsub.Load(); gs != nil {
			gs.accept(r)
		}
	}
	return pubsub.ValidationAccept
}

// gossipWait bounds how long the subscription's reader waits for a busy
// room to take an event; past it the event is left to sync.
const gossipWait = time.Second

// gossipSub is a room's subscription to its topic and the state of its
// reader (take), which runs while events come and stops when the room is
// idle, so a quiet room costs no goroutine.
type gossipSub struct {
	sub *pubsub.Subscription

	mu       sync.Mutex // protects the fields below
	reading  bool       // a reader runs
	accepted uint64     // events from other nodes the validator passed
	taken    uint64     // of them, those read from sub
}

// lostAfter is how many idle rounds (roomIdle each) the reader waits for
// an event the validator passed but GossipSub did not hand over (it drops
// what a full subscription cannot take; sync fetches such an event).
const lostAfter = 3

// accept counts an event from another node that the validator passed, on
// its way to sub, and starts the reader unless it runs: counted first, the
// event cannot reach sub after the reader looked for it and stopped.
func (gs *gossipSub) accept(r *room) {
	gs.mu.Lock()
	gs.accepted++
	start := !gs.reading
	gs.reading = true
	gs.mu.Unlock()
	if start {
		gs.start(r)
	}
}

// drop counts an accepted event that GossipSub dropped instead of
// handing it to sub: the reader need not wait for it.
func (gs *gossipSub) drop() { gs.took() }

// took counts an accepted event as read. An event the validator counted on
// another subscription (one replaced meanwhile) or on none is not counted
// here, so taken never passes accepted: else an event counted later could
// be taken for read before it is, and the reader stop while it waits.
func (gs *gossipSub) took() {
	gs.mu.Lock()
	if gs.taken < gs.accepted {
		gs.taken++
	}
	gs.mu.Unlock()
}

// start runs the reader; the caller has set reading.
func (gs *gossipSub) start(r *room) {
	if !r.goRoom(func(ctx context.Context) { r.take(ctx, gs) }) {
		gs.stop(true) // the room is closed
	}
}

// stop ends the reading unless an accepted event is still to be read;
// with lost set, such events count as dropped.
func (gs *gossipSub) stop(lost bool) bool {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.taken < gs.accepted && !lost {
		return false
	}
	gs.accepted = gs.taken
	gs.reading = false
	return true
}

// take reads the room's subscription until it is idle or ends: each event
// the validator accepted from another node goes to the room, processed
// right here when the room is idle. GossipSub's event loop hands an
// event to the subscription and queues it for its mesh peers in the same
// step, so relaying never waits for this node's store; and the wake of
// the room's listeners is the last one this goroutine makes before it
// waits again, so they run next (a goroutine woken earlier, by the
// validator, would queue behind everything GossipSub wakes after it).
func (r *room) take(ctx context.Context, gs *gossipSub) {
	idle := 0
	// A round ends after roomIdle without an event: a timer, reset for
	// each event, cancels the round's context (no timer per event).
	wctx, cancel := context.WithCancel(ctx)
	round := time.AfterFunc(roomIdle, cancel)
	defer func() {
		round.Stop()
		cancel()
	}()
	for {
		msg, err := gs.sub.Next(wctx)
		if err != nil {
			if ctx.Err() == nil && wctx.Err() != nil {
				idle++
				if gs.stop(idle >= lostAfter) {
					return
				}
				wctx, cancel = context.WithCancel(ctx)
				round = time.AfterFunc(roomIdle, cancel)
				continue
			}
			gs.stop(true) // the subscription or the room ended
			return
		}
		idle = 0
		round.Reset(roomIdle)
		if hold := r.m.beforeTake.Load(); hold != nil {
			(*hold)()
		}
		gs.took()
		it, ok := msg.ValidatorData.(*Item)
		if !ok {
			continue
		}
		in := input{item: it, from: msg.ReceivedFrom}
		if r.inline(in) {
			continue
		}
		qctx, qcancel := context.WithTimeout(ctx, gossipWait)
		if err := r.enqueue(qctx, in); err != nil && ctx.Err() == nil {
			r.requestSync(msg.ReceivedFrom)
		}
		qcancel()
	}
}

// sameBytes reports whether a and b are the same slice (not merely equal
// bytes).
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}
