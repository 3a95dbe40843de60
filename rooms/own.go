package rooms

import (
	"context"
	"fmt"
	"time"

	"github.com/parley-mesh/parley/identity"
)

// A node's data may be an older copy than what its peers hold of it: a
// backup put back, a folder restored, a database recovered, or a crash
// between publishing own events and their fsync (room.process publishes
// them before it writes them; a write that fails is made again by the
// next batch, restoreUnstored). Its own highest
// seq in a room is then higher on its members than in its store, and a post
// would reuse seqs. So after the node starts, a room does not post until
// it has learnt this node's own events from a member (one complete sync:
// the member sends every event of this node that it holds above what this
// node has) or finds that there is nobody to ask. A post waits for that up
// to Config.OwnEventsWait after the room opened; then it is refused with
// ErrOwnEventsUnknown while members are connected (they are being asked),
// and goes ahead when none is (an offline node posts; if it did reuse
// seqs, the room keeps both events: see accept).

// learnOwn starts the room knowing its own next seq (learn false) or
// learning it.
func (r *room) learnOwn(learn bool) {
	r.mu.Lock()
	r.ownKnown = make(chan struct{})
	r.ownSince = time.Now()
	// Alone: the only member (a room with no events yet, as after a
	// recovery, has everything to learn).
	alone := len(r.members) > 0
	for p := range r.members {
		if p != r.m.self {
			alone = false
		}
	}
	r.mu.Unlock()
	if !learn || alone || r.m.cfg.OwnEventsWait < 0 {
		r.ownLearned("")
	}
}

// ownLearned records that this node knows its own next seq in the room.
// A join held back meanwhile (joinAfterOwn) is posted now, unless the own
// events learnt hold one.
func (r *room) ownLearned(why string) {
	r.mu.Lock()
	if r.prov != nil {
		// A room told back posts nothing, its join neither, until a
		// catch-up shows this node in (confirmToldBack learns it then).
		r.mu.Unlock()
		return
	}
	join := identity.AgentName("")
	select {
	case <-r.ownKnown:
	default:
		close(r.ownKnown)
		join, r.joinAfterOwn = r.joinAfterOwn, ""
		if why != "" {
			r.m.log.Debug("own events learnt", "room", string(r.id), "after", time.Since(r.ownSince).String(), "how", why)
		}
	}
	r.mu.Unlock()
	if join != "" {
		r.goRoom(func(ctx context.Context) { r.joinIfSilent(ctx, join) })
	}
}

// learningOwnLocked reports whether the room is still learning this node's
// own events. Callers hold r.mu.
func (r *room) learningOwnLocked() bool {
	if r.ownKnown == nil {
		return false
	}
	select {
	case <-r.ownKnown:
		return false
	default:
		return true
	}
}

// joinIfSilent posts this node's join as agent if it is a member that has
// not spoken since it was (last) admitted.
func (r *room) joinIfSilent(ctx context.Context, agent identity.AgentName) {
	r.mu.RLock()
	_, member := r.members[r.m.self]
	silent := member && r.awaitsJoin(r.m.self)
	r.mu.RUnlock()
	if !silent {
		return
	}
	if _, err := r.say(ctx, &sayReq{agent: agent, kind: KindJoin}); err != nil && ctx.Err() == nil {
		r.m.log.Warn("join failed", "room", string(r.id), "err", err)
	}
}

// awaitOwn waits until this node knows its own next seq in the room (see
// above), ctx ends, or the wait is over.
func (r *room) awaitOwn(ctx context.Context) error {
	r.mu.RLock()
	known, since := r.ownKnown, r.ownSince
	r.mu.RUnlock()
	select {
	case <-known:
		return nil
	default:
	}
	t := time.NewTimer(time.Until(since.Add(r.m.cfg.OwnEventsWait)))
	defer t.Stop()
	select {
	case <-known:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w (room %s): %w", ErrOwnEventsUnknown, r.id, ctx.Err())
	case <-r.m.ctx.Done():
		return ErrClosed
	case <-t.C:
	}
	select {
	case <-known:
		return nil
	default:
	}
	for _, p := range r.memberList() {
		if p != r.m.self && r.m.reachable(p) {
			r.requestSync(p)
			return fmt.Errorf("%w (room %s: no member has answered yet)", ErrOwnEventsUnknown, r.id)
		}
	}
	r.ownLearned("no member reachable: going on")
	return nil
}
