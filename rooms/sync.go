package rooms

import (
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math"
	mrand "math/rand/v2"
	"net"
	"os"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	msmux "github.com/multiformats/go-multistream"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// Limits of one sync session.
const (
	// SyncLimit is the most events a responder sends per request; the
	// requester asks again while More is set.
	SyncLimit = 4096
	// defaultSyncTimeout bounds one request/response exchange
	// (syncTimeout).
	defaultSyncTimeout = time.Minute
	// defaultSyncSilence bounds a time without a byte of a catch-up's
	// answer (syncSilence): a member that takes a Hello and then says
	// nothing holds the catch-up for that long, not for the exchange's
	// whole limit (defaultSyncTimeout), and
	// the room backs off from it (noteProgress).
	defaultSyncSilence = 20 * time.Second
	// syncWorkers is how many catch-ups of one room run side by side,
	// each with a different peer: one peer slow or silent to answer
	// holds one of them, and the room's catch-ups with its other members
	// go on.
	syncWorkers = 2
	// maxSyncRounds bounds the requests of one session.
	maxSyncRounds = 10_000
	// maxParkRounds bounds the rounds in a row of one session that
	// stored nothing and only parked events wanting parents not asked
	// for yet (wantsMore), when the round brought events it had not
	// asked for by ID: a peer that answers with orphans whose parents
	// never come is given up after these and backed off from. A round
	// that brought only events it wanted (by ID, so real ones) is a step
	// down a chain of forks, which comes a step a round however long it
	// is, and is not counted (maxSyncRounds still bounds the session).
	maxParkRounds = 8
)

// A catch-up that failed on the way is asked again while the peer stays
// connected, defaultSyncRetryFirst later, then twice that, …, at most
// maxSyncRetries times in a row (retrySync).
const (
	defaultSyncRetryFirst = time.Second
	maxSyncRetries        = 5
)

// syncRetryFirst is the first wait of retrySync: defaultSyncRetryFirst,
// other in tests.
var syncRetryFirst atomic.Int64

// syncSilence is the longest time without a byte of a catch-up's answer:
// defaultSyncSilence, other in tests.
var syncSilence atomic.Int64

// syncTimeoutNs is the limit of one exchange (syncTimeout), in
// nanoseconds: defaultSyncTimeout, other in tests.
var syncTimeoutNs atomic.Int64

func init() {
	syncRetryFirst.Store(int64(defaultSyncRetryFirst))
	syncSilence.Store(int64(defaultSyncSilence))
	syncTimeoutNs.Store(int64(defaultSyncTimeout))
}

// syncTimeout bounds one request/response exchange.
func syncTimeout() time.Duration { return time.Duration(syncTimeoutNs.Load()) }

// serveWait is how long a responder waits for one of its serving slots
// before it answers busy: half the silence its requester waits through,
// so that a requester queued behind other catch-ups hears "busy" (and
// asks again, retrySync) before it would give the responder up as
// silent.
func serveWait() time.Duration { return time.Duration(syncSilence.Load()) / 2 }

// syncBusy is the error code of the reset with which a responder says
// that all its serving slots stayed taken (serveWait): the requester may
// ask again later (syncRetryable). A node that sends no codes resets
// plainly, which the requester takes for a refusal.
const syncBusy network.StreamErrorCode = 0x70617201

// errSyncSilent is a catch-up given up because the peer sent no byte for
// syncSilence, or had not answered by the end of the exchange.
var errSyncSilent = errors.New("peer silent")

// Backoff from a peer whose sync brought nothing this node could store:
// the first wait, doubled after each such sync up to the cap.
const (
	stallFirst = time.Second
	stallMax   = 5 * time.Minute
)

// stall is a peer's syncs that made no progress in a row, and until when
// the room does not ask it again by itself.
type stall struct {
	n     int
	until time.Time
}

// stallWait is the backoff after n syncs in a row without progress.
func stallWait(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return min(stallFirst<<min(n-1, 16), stallMax)
}

// stalledLocked reports whether the room backs off from p now. Callers hold r.mu.
func (r *room) stalledLocked(p peer.ID) bool {
	s, ok := r.stalls[p]
	return ok && time.Now().Before(s.until)
}

// stalledFrom is stalledLocked for callers without r.mu.
func (r *room) stalledFrom(p peer.ID) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.stalledLocked(p)
}

// noteProgress records whether a sync with p stored anything.
func (r *room) noteProgress(p peer.ID, progress bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if progress {
		delete(r.stalls, p)
		return
	}
	s := r.stalls[p]
	s.n++
	s.until = time.Now().Add(stallWait(s.n))
	r.stalls[p] = s
	r.m.metrics.stalls.Inc()
}

// progressMark changes whenever the room stores an event (a fork, or a
// damaged event written again, too). (A round that only parks events in
// the pending pool is no progress: their parents were in the round, or are
// by authors this node refuses, so the next round would bring the same
// events. One that parked events wanting others not asked for yet is
// asked again, maxParkRounds in a row at most: see syncSession.)
func (r *room) progressMark() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	n := r.forks + r.repairs
	for _, s := range r.vv {
		n += s
	}
	return n
}

// askLimit is the limit a requester puts in its Hello: SyncLimit, smaller
// in tests.
var askLimit atomic.Int64

func init() { askLimit.Store(SyncLimit) }

// requestSync queues a catch-up with p unless one is already queued or the
// room backs off from p. Asked while p's sync runs (a nudge for an event p
// stored after the sync began), it runs once more after it. It reports
// whether a catch-up with p is to come: false when the room backs off from
// p, its queue is full or it is closed. A closed room queues nothing: no
// goroutine of it runs its queue again.
func (r *room) requestSync(p peer.ID) bool {
	if p == r.m.self || p == "" {
		return false
	}
	select {
	case <-r.closed():
		return false
	default:
	}
	r.mu.Lock()
	if r.stalledLocked(p) {
		r.mu.Unlock()
		return false
	}
	if r.syncing[p] {
		r.resync[p] = true
		r.mu.Unlock()
		return true
	}
	r.syncing[p] = true
	r.mu.Unlock()
	select {
	case r.syncQ <- p:
	default:
		r.mu.Lock()
		delete(r.syncing, p)
		r.mu.Unlock()
		return false
	}
	r.mu.Lock()
	// One more worker while fewer than syncWorkers run and the queue
	// holds a catch-up none of them took yet. A room told back runs one:
	// it judges whether this node is out by its state after a member's
	// complete catch-up (judgeToldBack), which a catch-up running beside
	// it would change.
	workers := syncWorkers
	if r.prov != nil {
		workers = 1
	}
	start := r.syncRunning < workers && len(r.syncQ) > 0
	if start {
		r.syncRunning++
	}
	r.mu.Unlock()
	if start && !r.goRoom(r.syncWorker) {
		// The room closed since: empty its queue (p with the others
		// queued there), which no goroutine will run.
		r.mu.Lock()
		r.syncRunning--
		delete(r.syncing, p)
		r.dropQueuedLocked()
		r.mu.Unlock()
		return false
	}
	return true
}

// dropQueuedLocked empties the queue of a room that closed, and forgets
// that its catch-ups are to come. Callers hold r.mu.
func (r *room) dropQueuedLocked() {
	for {
		select {
		case q := <-r.syncQ:
			delete(r.syncing, q)
			delete(r.resync, q)
		default:
			return
		}
	}
}

// syncWorker runs queued catch-ups one after the other, and ends when none
// is left: an idle room runs no goroutine (requestSync starts it again).
// Up to syncWorkers of them run, each with its own peer (a peer is queued
// once: syncing), so that one peer slow to answer does not hold the
// room's catch-ups with the others.
func (r *room) syncWorker(ctx context.Context) {
	for {
		var p peer.ID
		select {
		case <-ctx.Done():
			r.mu.Lock()
			r.syncRunning--
			r.mu.Unlock()
			return
		case p = <-r.syncQ:
		default:
			r.mu.Lock()
			if len(r.syncQ) == 0 {
				r.syncRunning--
				r.mu.Unlock()
				return
			}
			r.mu.Unlock()
			continue
		}
		err := r.syncWith(ctx, p)
		switch {
		case err == nil:
			r.endSyncRetries(p)
		case ctx.Err() == nil:
			r.m.log.Debug("sync failed", "room", string(r.id), "remote", p.String(), "err", err)
			r.mu.Lock()
			delete(r.syncedBack, p)
			r.mu.Unlock()
			if errors.Is(err, errSyncSilent) {
				// Not asked by itself again for a while, and
				// for longer each time it stays silent.
				r.noteProgress(p, false)
			}
			r.retrySync(p, err)
		}
		r.mu.Lock()
		delete(r.syncing, p)
		again := r.resync[p]
		delete(r.resync, p)
		r.mu.Unlock()
		if again && ctx.Err() == nil {
			r.requestSync(p)
		}
	}
}

// syncLinkError is a sync round's failure to reach the peer's sync
// service or to read its answer (syncRetryable tells which of them may
// mend).
type syncLinkError struct{ err error }

func (e *syncLinkError) Error() string { return e.err.Error() }
func (e *syncLinkError) Unwrap() error { return e.err }

// syncRetryable reports whether a catch-up that failed with err may
// succeed if asked again while the peer stays connected: the peer did not
// serve /parley/sync/1 (not yet: a node that starts is reachable before
// its rooms are open), or the stream broke below the protocol (the
// connection it ran on closed while another stays). A reset by the peer
// is its answer: a refusal (its policy, the room not open there, this node
// not a member of it), busy, or its own failure to serve; it is not asked
// again, and neither is a deadline passed (a peer too slow or too busy to
// answer) nor an answer cut short or malformed. They wait for the next
// catch-up the room asks for anyway (a connection, a graft, a nudge,
// anti-entropy).
func syncRetryable(err error) bool {
	var le *syncLinkError
	if !errors.As(err, &le) {
		return false
	}
	var (
		unsupported msmux.ErrNotSupported[protocol.ID]
		reset       *network.StreamError
		timeout     net.Error
	)
	switch {
	case errors.As(err, &unsupported):
		return true
	case errors.Is(err, errSyncSilent):
		return false
	case errors.As(err, &reset):
		// A host resets a stream whose protocol it does not serve with
		// this code, which may come before its "not supported"; a reset
		// on this side is not the peer's answer. Busy is an answer that
		// asks for a later try.
		return !reset.Remote || reset.ErrorCode == network.StreamProtocolNegotiationFailed || reset.ErrorCode == syncBusy
	case errors.Is(err, network.ErrReset), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, ErrMalformed), errors.Is(err, ErrTooLarge),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &timeout) && timeout.Timeout():
		return false
	}
	return true
}

// syncRetry is a peer's catch-ups asked again after failures (retrySync)
// in its connected period.
type syncRetry struct {
	n    int                // retries begun
	stop context.CancelFunc // ends the wait under way; nil when none waits
}

// retrySync asks for a catch-up with p again, later, after one that failed
// in a way that may mend (syncRetryable) while p is still connected: p may
// not serve sync yet (a node that starts is reachable before its rooms are
// open, so a peer's sync on connecting to it then fails, and the events it
// holds that gossip did not carry, posts made before a crash, would wait
// for anti-entropy), or the stream broke.
//
// The retries of a peer form one chain per room: the first waits about
// syncRetryFirst, each next one twice as long (give or take a half, so
// that the rooms' syncs do not all start at once), and it ends after
// maxSyncRetries. A failure while a wait is under way (the sync a graft
// starts, say) adds none: the wait's retry covers it. A sync with p that
// succeeds ends the chain (a failure after it starts a new one), and so
// does p's disconnection (syncPeerGone: its last connection closed); a new
// connection while p stays connected does not.
func (r *room) retrySync(p peer.ID, err error) {
	if !syncRetryable(err) {
		return
	}
	r.mu.Lock()
	// Asked under r.mu: syncPeerGone, which takes it, runs once p is no
	// longer reachable, so it ends every chain begun while it was.
	if !r.m.reachable(p) {
		r.mu.Unlock()
		return
	}
	c := r.syncRetries[p]
	if c == nil {
		c = &syncRetry{}
		r.syncRetries[p] = c
	}
	if c.stop != nil || c.n >= maxSyncRetries {
		r.mu.Unlock()
		return
	}
	wait := jittered(time.Duration(syncRetryFirst.Load()) << c.n)
	c.n++
	ctx, stop := context.WithCancel(r.ctx)
	c.stop = stop
	r.mu.Unlock()
	started := r.goRoom(func(context.Context) {
		defer stop()
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done(): // the room closed, or the chain ended
			return
		case <-t.C:
		}
		r.mu.Lock()
		if r.syncRetries[p] != c {
			r.mu.Unlock()
			return
		}
		c.stop = nil
		r.mu.Unlock()
		r.requestSync(p)
	})
	if !started {
		stop()
	}
}

// endSyncRetries ends p's chain of catch-ups asked again (retrySync), and
// a wait of it under way.
func (r *room) endSyncRetries(p peer.ID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.syncRetries[p]; c != nil {
		if c.stop != nil {
			c.stop()
		}
		delete(r.syncRetries, p)
	}
}

// syncPeerGone forgets what the room keeps of p's connected period (its
// last connection closed): its catch-ups asked again, and the lead it was
// last synced back for.
func (r *room) syncPeerGone(p peer.ID) {
	r.endSyncRetries(p)
	r.mu.Lock()
	delete(r.syncedBack, p)
	r.mu.Unlock()
}

// antiEntropy asks every open room, once each SyncInterval, to catch up
// with a random connected member (one goroutine for all rooms). The rooms
// take their turns spread over the period, in a new random order each
// period, so that their syncs (and the serving they cause on the members)
// do not all start at once and crowd out live events.
func (m *Manager) antiEntropy() {
	var queue []*room
	var step time.Duration
	t := time.NewTimer(jittered(m.cfg.SyncInterval))
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		if len(queue) == 0 {
			// Once a period, the meshes lose the peers the policy now
			// refuses without a change this node is told of (a contact
			// whose certificate ended).
			m.Revet()
			m.mu.RLock()
			for _, r := range m.rooms {
				queue = append(queue, r)
			}
			m.mu.RUnlock()
			mrand.Shuffle(len(queue), func(i, j int) { queue[i], queue[j] = queue[j], queue[i] })
			step = m.cfg.SyncInterval / time.Duration(max(1, len(queue)))
		}
		if len(queue) == 0 {
			t.Reset(m.cfg.SyncInterval)
			continue
		}
		r := queue[0]
		queue[0] = nil
		queue = queue[1:]
		if m.room(r.id) == r {
			if !r.aeDue() {
				m.metrics.antiEntropy.WithLabelValues("skipped").Inc()
			} else if p := r.randomMember(); p != "" {
				m.metrics.antiEntropy.WithLabelValues("synced").Inc()
				r.requestSync(p)
			}
		}
		t.Reset(jittered(step))
	}
}

// aeMaxShift bounds anti-entropy's backoff: a room whose catch-ups keep
// finding nothing is visited once every 2^aeMaxShift periods (8: four
// minutes at the default period). Catch-up on a connection, on a graft
// into the room's mesh, on a nudge and on an event whose parents are
// missing does not wait for it; anti-entropy is the last resort.
const aeMaxShift = 3

// AntiEntropyReach is how many anti-entropy periods may pass, at most,
// between two periodic catch-ups of a room (aeMaxShift's backoff).
const AntiEntropyReach = 1 << aeMaxShift

// aeDue reports whether the room syncs at this anti-entropy turn: at every
// turn while its last catch-up brought events, and once every 2^k turns
// after k catch-ups in a row brought none (k at most aeMaxShift). Called by
// the anti-entropy goroutine only.
func (r *room) aeDue() bool {
	k := min(int(r.emptySyncs.Load()), aeMaxShift)
	if r.aeTurns < 1<<k-1 {
		r.aeTurns++
		return false
	}
	r.aeTurns = 0
	return true
}

// jittered returns d give or take up to a half, at random (a mean of d).
func jittered(d time.Duration) time.Duration {
	if d <= 1 {
		return max(d, 1)
	}
	return d/2 + mrand.N(d)
}

// syncWith catches up with p: it sends what this node has (the version
// vector) and stores what p streams back, round after round while p says
// there is more. A room with more authors than one Hello lists is asked
// for a part of its authors at a time, in the order of their IDs.
func (r *room) syncWith(ctx context.Context, p peer.ID) error {
	if err := r.m.cfg.Policy.Allowed(p); err != nil && !(errors.Is(err, ErrStranger) && r.asksToldBack(p)) {
		return err
	}
	if !r.beginToldBackSession() {
		return r.syncSession(ctx, p)
	}
	mark := r.progressMark()
	err := r.syncSession(ctx, p)
	r.m.judgeToldBack(r, p, err, r.progressMark() != mark)
	return err
}

// syncSession is syncWith's catch-up itself.
func (r *room) syncSession(ctx context.Context, p peer.ID) error {
	var from peer.ID // the authors asked for: from here on
	refused := 0     // events of parts that brought nothing the room took
	cut := false     // a part ended with more of it left unasked
	fetched := false // a round brought events the room stored
	parked := 0      // rounds in a row that only parked events (wantsMore)
	for round := 0; round < maxSyncRounds; round++ {
		mark := r.progressMark()
		more, n, unasked, want, to, err := r.syncRound(ctx, p, from)
		if err != nil {
			result := "error"
			if errors.Is(err, errSyncSilent) {
				result = "silent"
			}
			if errors.Is(err, errSyncOverLimit) {
				// Not asked by itself again for a while: its
				// answers are past what they may be.
				r.noteProgress(p, false)
			}
			r.m.metrics.syncs.WithLabelValues("requester", result).Inc()
			return fmt.Errorf("rooms: sync %s with %s: %w", r.id, p, err)
		}
		// Wait until the room stored the batch, so the next
		// Hello's version vector includes it.
		if err := r.barrier(ctx); err != nil {
			return err
		}
		r.m.log.Debug("sync round", "room", string(r.id), "remote", p.String(), "events", n, "more", more)
		// Every event refused: asking again would bring the same ones
		// back. The part is done; the next one is still asked for. A
		// round that stored nothing but parked events wanting parents
		// not asked for yet (wantsMore) is no progress either: it is
		// asked again, maxParkRounds in a row at most unless it brought
		// only wanted events (a step down a chain of forks).
		stored := r.progressMark() != mark
		parks := n > 0 && !stored && r.wantsMore(ctx, want)
		switch {
		case n > 0 && stored:
			parked = 0
			fetched = true
			r.noteProgress(p, true)
			if more {
				continue // the same authors: p has more of them
			}
		case parks:
			if unasked > 0 {
				parked++
			}
			if parked > maxParkRounds {
				return r.syncEnd(p, refused+n, fetched)
			}
			if more {
				continue
			}
		case n > 0:
			refused += n
			cut = cut || more
		}
		if to != "" {
			from = to // the next authors
			continue
		}
		if !cut && r.isMember(p) {
			// p sent every event of this node it holds (those of a
			// part it refused too: they were not this node's).
			r.ownLearned("a member answered")
		}
		return r.syncEnd(p, refused, fetched)
	}
	return r.syncEnd(p, refused, fetched)
}

// syncEnd ends a catch-up session with p. One in which refused events were
// all that some parts brought backs off from p; one that brought nothing at
// all counts towards anti-entropy's backoff (aeDue), and one that brought
// events ends it.
func (r *room) syncEnd(p peer.ID, refused int, fetched bool) error {
	switch {
	case fetched:
		r.emptySyncs.Store(0)
	case refused == 0 && r.emptySyncs.Load() < 1<<aeMaxShift:
		r.emptySyncs.Add(1)
	}
	if refused > 0 {
		r.noteProgress(p, false)
		r.m.metrics.syncs.WithLabelValues("requester", "no_progress").Inc()
		return fmt.Errorf("rooms: sync %s with %s: %w (%d events refused)", r.id, p, ErrNoProgress, refused)
	}
	r.m.metrics.syncs.WithLabelValues("requester", "ok").Inc()
	return nil
}

// wantsMore reports whether the pending pool now waits for events that a
// round's want did not name: parked events whose own parents are to be
// asked for next (a chain of forks comes one step a round).
func (r *room) wantsMore(ctx context.Context, asked []ID) bool {
	ids, err := r.missingIDs(ctx)
	if err != nil {
		return false
	}
	for _, id := range ids {
		if !slices.Contains(asked, id) {
			return true
		}
	}
	return false
}

// errSyncOverLimit is an answer that carried more events than its Hello
// asked for (Limit, and the wanted ones): cut, and its peer backed off
// from.
var errSyncOverLimit = errors.New("peer sent more events than asked for")

// syncRound asks p once for the events of the authors from from on that
// this node lacks, as many authors as one Hello lists: to is where the
// next round's authors begin, "" when this one reached the last. n counts
// the events received, unasked those of them the Hello did not want.
func (r *room) syncRound(ctx context.Context, p peer.ID, from peer.ID) (more bool, n, unasked int, want []ID, to peer.ID, err error) {
	limit := syncTimeout()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	want, err = r.missingIDs(ctx)
	if err != nil {
		return false, 0, 0, nil, "", err
	}
	for _, id := range r.corruptIDs() {
		if len(want) < MaxWant && !slices.Contains(want, id) {
			want = append(want, id)
		}
	}
	for _, id := range r.takeWantHeads() {
		if _, ok := r.depthOfShared(id); !ok && len(want) < MaxWant && !slices.Contains(want, id) {
			want = append(want, id)
		}
	}
	refused := r.refusedMembers()
	s, err := r.m.cfg.Host.NewStream(network.WithAllowLimitedConn(ctx, "sync"), p, ProtocolSync)
	if err != nil {
		return false, 0, 0, want, "", &syncLinkError{err}
	}
	defer s.Close()
	end := time.Now().Add(limit)
	_ = s.SetDeadline(end)
	r.mu.RLock()
	h := &Hello{Room: r.id, Limit: uint32(askLimit.Load()), Want: want}
	vvMax := MaxVV
	if n := int(r.m.helloVV.Load()); n > 0 {
		vvMax = n
	}
	h.VV, h.From, h.To = helloVV(r.vv, from, vvMax)
	// Members the policy refuses: their events come in only where an
	// allowed event built on them (vouchedFor), which asks for them by ID
	// (want); the Hello says it holds them all, so that a run of them
	// that the room would refuse is not sent ahead of what it waits for,
	// round after round. Once one is vouched for, they are asked for up
	// to its seq.
	for _, a := range refused {
		_, listed := h.VV[a]
		if h.Covers(a) && (listed || len(h.VV) < MaxVV) && r.vouchedBound(a) <= r.vv[a] {
			h.VV[a] = skipSeq
		}
	}
	h.Heads = helloHeads(r.headsSnap)
	r.mu.RUnlock()
	if err := WriteFrame(s, h); err != nil {
		s.Reset()
		return false, 0, 0, want, "", &syncLinkError{err}
	}
	_ = s.CloseWrite()
	rd := &silenceReader{s: s, silence: time.Duration(syncSilence.Load()), end: end}
	for {
		b, err := ReadBatch(rd)
		if err != nil {
			s.Reset()
			return false, n, unasked, want, "", &syncLinkError{rd.giveUp(err)}
		}
		if b.End {
			return b.More, n, unasked, want, h.To, nil
		}
		if n+len(b.Events) > int(h.Limit)+len(want) {
			s.Reset()
			return false, n, unasked, want, "", fmt.Errorf("%w: more than %d and %d wanted", errSyncOverLimit, h.Limit, len(want))
		}
		for _, w := range b.Events {
			wid := ID(sha256.Sum256(w))
			if !slices.Contains(want, wid) {
				unasked++
			}
			if len(w) <= MaxWire && r.holdsRecent(wid) {
				// Stored already (gossip brought it meanwhile): no
				// need to check its signature again.
				r.m.metrics.duplicate.Inc()
				n++
				continue
			}
			e, id, err := Decode(w)
			if err == nil && e.Room != r.id {
				// Checked here, as gossip's validator does: pooled
				// first, it would wait for a parent this room never
				// holds (accept checks the room only once the
				// parents are stored).
				err = fmt.Errorf("%w: event for room %s", ErrMalformed, e.Room)
			}
			if err != nil {
				r.m.reject(err)
				s.Reset()
				return false, n, unasked, want, "", fmt.Errorf("peer sent a bad event: %w", err)
			}
			if err := r.submit(ctx, input{item: &Item{ID: id, Event: e, Wire: w}, from: p, catchUp: true}); err != nil {
				return false, n, unasked, want, "", err
			}
			n++
		}
		r.m.metrics.synced.Add(float64(len(b.Events)))
	}
}

// silenceReader reads a catch-up's answer from s, each read given up
// once silence passes with no byte (silent then tells so), or at end.
// The limit is on a silence, not on a frame: an answer of 1 MiB over a
// slow link comes as long as its bytes do.
type silenceReader struct {
	s       network.Stream
	silence time.Duration
	end     time.Time
	silent  bool // the last read brought nothing for silence, before end
	late    bool // the last read brought nothing by end
}

func (rd *silenceReader) Read(p []byte) (int, error) {
	wait := time.Now().Add(rd.silence)
	before := wait.Before(rd.end)
	if !before {
		wait = rd.end
	}
	_ = rd.s.SetReadDeadline(wait)
	n, err := rd.s.Read(p)
	// A read may bring bytes with a deadline's error (a muxer's window
	// update after them waited): that is no silence, and the next read
	// tells.
	var timeout net.Error
	timedOut := n == 0 && err != nil && (errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &timeout) && timeout.Timeout())
	rd.silent, rd.late = timedOut && before, timedOut && !before
	return n, err
}

// giveUp wraps err, a read of the answer that failed, in errSyncSilent
// when the peer let its limit pass: silence, or an answer not done by the
// end of the exchange (a peer that sends a byte now and then holds a
// catch-up that long, and is backed off like a silent one).
func (rd *silenceReader) giveUp(err error) error {
	switch {
	case rd.silent:
		return fmt.Errorf("%w: nothing for %v: %w", errSyncSilent, rd.silence, err)
	case rd.late:
		return fmt.Errorf("%w: its answer not done by the exchange's end: %w", errSyncSilent, err)
	}
	return err
}

// skipSeq is the seq a Hello gives an author whose events it does not ask
// for: above any it could have (a responder serves from the next seq on).
const skipSeq = math.MaxUint64 >> 1

// refusedMembers lists the room's members, other than this node, that the
// policy refuses (a node this user cut off, or one nobody it trusts
// vouched for).
func (r *room) refusedMembers() []peer.ID {
	var out []peer.ID
	for _, a := range r.memberList() {
		if a != r.m.self && r.m.cfg.Policy.Allowed(a) != nil {
			out = append(out, a)
		}
	}
	return out
}

// helloVV is the version vector of a Hello that asks for the authors from
// from on: all of vv when it fits in one Hello (from and to empty), or else
// the first limit authors from from on, in the order of their IDs, and to,
// the author after them ("" when none is left).
func helloVV(vv map[peer.ID]uint64, from peer.ID, limit int) (out map[peer.ID]uint64, lo, to peer.ID) {
	if from == "" && len(vv) <= limit {
		return maps.Clone(vv), "", ""
	}
	authors := make([]peer.ID, 0, len(vv))
	for a := range vv {
		if a >= from {
			authors = append(authors, a)
		}
	}
	slices.Sort(authors)
	if len(authors) > limit {
		to, authors = authors[limit], authors[:limit]
	}
	out = make(map[peer.ID]uint64, len(authors))
	for _, a := range authors {
		out[a] = vv[a]
	}
	return out, from, to
}

// handleSync serves /parley/sync/1: it reads the requester's Hello and
// streams the events it lacks in display order, at most SyncLimit.
func (m *Manager) handleSync(s network.Stream) {
	defer s.Close()
	end := time.Now().Add(syncTimeout())
	_ = s.SetDeadline(end)
	remote := s.Conn().RemotePeer()
	// A peer the policy refuses is not read: a Hello may be 1 MiB. But a
	// node that left a room open here (or was removed from it), a
	// stranger now that it shares no room with this node, is served up
	// to its leave: a node put back on an older copy of its home learns
	// so that it left (retell.go). Its Hello is read up to
	// maxDepartedHello only.
	// So is a member of a room this node left (servesLeft): once the room
	// is closed it shares no open room with a member that is no contact,
	// and that member could never learn the leave had it missed its
	// gossip.
	limit := MaxFrame
	departed, stayed := false, false
	if err := m.cfg.Policy.Allowed(remote); err != nil {
		if errors.Is(err, ErrStranger) {
			stayed = m.memberOfLeaving(remote)
			departed = m.outOfSome(remote)
		}
		if !departed && !stayed {
			m.metrics.syncs.WithLabelValues("responder", "refused").Inc()
			s.Reset()
			return
		}
		if !stayed {
			limit = maxDepartedHello
		}
	}
	h, err := ReadHello(s, limit)
	if err != nil {
		m.metrics.syncs.WithLabelValues("responder", "bad_request").Inc()
		m.log.Debug("bad sync request", "remote", remote.String(), "err", err)
		s.Reset()
		return
	}
	r := m.syncRoom(h.Room)
	var upTo uint64 // a removed node syncs up to its removal
	if r != nil && !r.isMember(remote) {
		upTo = r.removedDepth(remote)
	}
	strangerServed := (departed && upTo > 0) || (stayed && r != nil && m.servesLeft(r, remote))
	if r == nil || (!r.isMember(remote) && upTo == 0) || (m.cfg.Policy.Allowed(remote) != nil && !strangerServed) {
		m.metrics.syncs.WithLabelValues("responder", "refused").Inc()
		s.Reset()
		return
	}
	// One stream of a peer served at a time, whatever the room: a peer
	// that opens more, and never reads their answers, holds one slot and
	// not every one of the node's. Its others wait their turn (an honest
	// node catches up with a peer in several rooms at once), busy after
	// serveWait in all.
	ctx, cancel := context.WithTimeout(m.ctx, serveWait())
	ps := m.servingPeer(remote)
	ok := ps.acquire(ctx)
	if ok {
		if ok = m.serving.acquire(ctx); !ok {
			ps.release()
		}
	}
	cancel()
	if !ok {
		m.servedPeer(remote)
		m.metrics.syncs.WithLabelValues("responder", "busy").Inc()
		_ = s.ResetWithError(syncBusy)
		return
	}
	if upTo > 0 {
		// Before, a node out of the room was served by its version vector
		// alone, so one whose own leave's seq was taken by another event
		// of its (a post from an older copy of its data, made with no
		// member reachable) never got the leave and stayed in the room as
		// it saw it, posting to nobody; now the leaves that took it out
		// are served by ID too (a fork there).
		h.Want = append(h.Want, r.outLeaves(remote)...)
	}
	err = r.serveSync(&silenceWriter{s: s, silence: serveWait(), end: end}, h, upTo)
	m.serving.release()
	ps.release()
	m.servedPeer(remote)
	if err != nil {
		m.metrics.syncs.WithLabelValues("responder", "error").Inc()
		if !errors.Is(err, io.EOF) {
			m.log.Debug("sync serve failed", "room", string(r.id), "remote", remote.String(), "err", err)
		}
		s.Reset()
		return
	}
	m.metrics.syncs.WithLabelValues("responder", "ok").Inc()
	// A member pulled from a room open here (a room this node left only
	// serves its members for a while: it follows it no more).
	if upTo == 0 && m.leaving.get(r.id) != r {
		if h.From == "" && h.To == "" {
			// A Hello that lists a part of the authors cannot say that
			// the requester holds nothing newer than this node.
			r.noteHeads(remote, h)
		}
	}
}

// helloHeads is the heads a Hello carries: all of them, or past MaxHeads
// MaxHeads in a row from a place drawn at random, so that each head (a fork
// this node alone holds among them) is shown to each peer in time; the
// first MaxHeads in ID order alone left a fork past them where it was until
// its holder posted. (A turn kept per room could show a peer the same part
// each time when the room's Hellos go round its peers in step.)
func helloHeads(heads []ID) []ID {
	n := len(heads)
	if n <= MaxHeads {
		return heads
	}
	start := mrand.IntN(n)
	out := make([]ID, 0, MaxHeads)
	for i := range MaxHeads {
		out = append(out, heads[(start+i)%n])
	}
	return out
}

// maxDepartedHello bounds the Hello of a node served only because it left
// a room open here (handleSync).
const maxDepartedHello = 64 << 10

// memberOfLeaving reports whether p is one this node serves a room it
// left to (servesLeft), in any such room.
func (m *Manager) memberOfLeaving(p peer.ID) bool {
	m.leaving.mu.Lock()
	rs := make([]*room, 0, len(m.leaving.rooms))
	for _, r := range m.leaving.rooms {
		rs = append(rs, r)
	}
	m.leaving.mu.Unlock()
	return slices.ContainsFunc(rs, func(r *room) bool { return m.servesLeft(r, p) })
}

// servesLeft reports whether this node serves room r, which it left less
// than LeavingServeFor ago, to p: a member of it admitted, as SharesRoom
// asks of open rooms, through no node this user cut off (when the policy
// tells: the contacts service does).
func (m *Manager) servesLeft(r *room, p peer.ID) bool {
	if m.leaving.get(r.id) != r || r.leavingOver() || !r.isMember(p) {
		return false
	}
	var cut func(peer.ID) bool
	if c, ok := m.cfg.Policy.(interface{ CutOff(peer.ID) bool }); ok {
		cut = c.CutOff
	}
	return r.vouches(p, cut)
}

// outOfSome reports whether p left, or was removed from, a room open here
// and was not invited back.
func (m *Manager) outOfSome(p peer.ID) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, r := range m.rooms {
		if r.removedDepth(p) > 0 {
			return true
		}
	}
	return false
}

// noteHeads looks at a member's Hello that lists every author. When the
// requester holds events this node lacks by the version vectors, this node
// syncs back from it (syncBack): a node that starts pulls from every peer
// connected once its rooms serve sync, and the posts it made before a
// crash that gossip had not carried reach a peer this way, however long
// its start took (the peer's own sync on the connection came too early,
// and its retries may be over). Else a head this node lacks is an event
// that reuses its author's seq (a fork), which no version vector shows.
// This node then asks the requester for it (Hello.Want), and for its
// ancestors as they turn up missing.
func (r *room) noteHeads(remote peer.ID, h *Hello) {
	mine := r.committedVV()
	var lead uint64 // what the requester holds that this node lacks, as a digest
	var ahead map[peer.ID]uint64
	for a, s := range h.VV {
		// skipSeq is not held: the requester asks for none of a's events.
		if s > mine[a] && s < skipSeq {
			if ahead == nil {
				ahead = make(map[peer.ID]uint64)
			}
			ahead[a] = s
			lead += leadOf(a, s)
		}
	}
	if ahead != nil {
		r.syncBackLater(remote, ahead, lead)
		return
	}
	var unknown []ID
	for _, id := range h.Heads {
		if _, ok := r.depthOfShared(id); !ok {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) == 0 {
		return
	}
	r.mu.Lock()
	for _, id := range unknown {
		if len(r.wantHeads) < MaxWant {
			r.wantHeads[id] = true
		}
	}
	r.mu.Unlock()
	r.requestSync(remote)
}

// leadOf is a digest of a requester holding author a's events up to seq s;
// a Hello's lead is the sum over the authors it is ahead in.
func leadOf(a peer.ID, s uint64) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(a))
	_, _ = h.Write(binary.BigEndian.AppendUint64(nil, s))
	return h.Sum64()
}

// syncBackWait is how long a node waits, jittered, after a member's Hello
// showed events it lacks before it looks again and syncs back for those
// still missing: while members post, a Hello mostly shows events gossip is
// carrying at that moment, and a sync back at once fetched them twice, its
// own Hello starting the next one the other way, for as long as both
// posted (75 of 75 catch-ups between two posting members were sync backs).
const syncBackWait = time.Second

// syncBackLater waits syncBackWait (jittered) and syncs back from remote
// (syncBack) if this node still lacks any of ahead, the authors and seqs
// remote's Hello showed. One wait per peer at a time: a Hello of remote
// while it runs adds what it shows to it (the highest seq of each author,
// at most MaxVV authors), and the wait, once over, syncs back for every
// author still missing, its lead worked out from them alone (as the next
// Hello's would be, were nothing more posted). lead is the Hello's: a
// Hello whose lead was synced back for starts no wait.
func (r *room) syncBackLater(remote peer.ID, ahead map[peer.ID]uint64, lead uint64) {
	r.mu.Lock()
	if !r.m.reachable(remote) {
		r.mu.Unlock()
		return
	}
	if pending, ok := r.backWaits[remote]; ok {
		for a, s := range ahead {
			if old, ok := pending[a]; ok || len(pending) < MaxVV {
				pending[a] = max(old, s)
			}
		}
		r.mu.Unlock()
		return
	}
	if l, ok := r.syncedBack[remote]; ok && l == lead {
		r.mu.Unlock()
		return
	}
	r.backWaits[remote] = maps.Clone(ahead)
	r.mu.Unlock()
	// take ends the wait and returns what it waited for.
	take := func() map[peer.ID]uint64 {
		r.mu.Lock()
		defer r.mu.Unlock()
		pending := r.backWaits[remote]
		delete(r.backWaits, remote)
		return pending
	}
	started := r.goRoom(func(ctx context.Context) {
		t := time.NewTimer(jittered(syncBackWait))
		defer t.Stop()
		select {
		case <-ctx.Done():
			take()
			return
		case <-t.C:
		}
		pending := take()
		mine := r.committedVV()
		var lead uint64
		missing := false
		for a, s := range pending {
			if mine[a] < s {
				lead += leadOf(a, s)
				missing = true
			}
		}
		if missing {
			r.syncBack(remote, lead)
		}
	})
	if !started {
		take()
	}
}

// syncBack asks for a catch-up with remote, a member whose Hello showed it
// holds events this node lacks (lead: which, as a digest), unless one was
// asked for the same lead in remote's connected period. Two nodes whose
// version vectors stay apart (one refuses an author whose events the other
// holds) would else sync each other back and forth, each sync's Hello
// starting the next: remote is asked again only for another lead (it
// shows more, or this node caught up in part). A sync with remote that
// fails forgets the lead (the next Hello asks again), and the stall
// backoff applies as to every sync. (A member could make this node sync
// with it by a nudge already: this adds no work a member can cause.)
func (r *room) syncBack(remote peer.ID, lead uint64) {
	r.mu.Lock()
	// Asked under r.mu, as in retrySync: syncPeerGone forgets the lead
	// of a peer no longer reachable.
	if !r.m.reachable(remote) {
		r.mu.Unlock()
		return
	}
	if l, ok := r.syncedBack[remote]; ok && l == lead {
		r.mu.Unlock()
		return
	}
	// Recorded before the catch-up is queued: the sync worker, which
	// forgets the lead of a sync that fails, may run it and fail before
	// requestSync returns, and a lead recorded after that stayed spent
	// for the rest of remote's connected period.
	r.syncedBack[remote] = lead
	r.mu.Unlock()
	// The lead is spent only by a catch-up to come: one the room backs
	// off from (or cannot queue) is asked again at the next Hello. A lead
	// another sync back recorded since stays.
	if !r.requestSync(remote) {
		r.mu.Lock()
		if l, ok := r.syncedBack[remote]; ok && l == lead {
			delete(r.syncedBack, remote)
		}
		r.mu.Unlock()
		return
	}
	r.m.metrics.syncBacks.Inc()
}

// takeWantHeads returns and forgets the heads noteHeads found missing.
func (r *room) takeWantHeads() []ID {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.wantHeads) == 0 {
		return nil
	}
	out := make([]ID, 0, len(r.wantHeads))
	for id := range r.wantHeads {
		out = append(out, id)
	}
	clear(r.wantHeads)
	return out
}

// cursor walks one author's events that the requester lacks.
type cursor struct {
	author     peer.ID
	next, last uint64
	id         ID
	depth      uint64
	wire       []byte // nil: dropped (serveWires), read again when sent
	held       bool   // wire counts against the answer's serveWires
}

// serveWires bounds the bytes of event wires that the cursors of one
// answer hold between reading an event and sending it: past it, a cursor
// keeps the event's depth and ID and reads it again when its turn comes.
// Each author's cursor holds its next event, and a Hello that lists no
// author (every catch-up from nothing) has one cursor for each of the
// room's authors: holding them all, a member's 400 keys with an event of
// 60 KiB each made one answer hold 26 MiB for as long as the requester
// kept from reading (TestServingAHelloHoldsNoWireOfEveryAuthor).
const serveWires = 1 << 20

// reread reads c's event again, its wire dropped when it was loaded.
func (c *cursor) reread(r *room) (bool, error) {
	v, ok, err := r.m.cfg.Store.Lookup(schema.RoomEvent(string(r.id), c.id[:]))
	if err == nil && ok {
		_, c.wire, err = checkStored(c.id, v)
	}
	if err != nil {
		r.noteCorrupt(c.id)
		return false, nil
	}
	if !ok {
		return false, fmt.Errorf("rooms: event %s missing", c.id)
	}
	return true, nil
}

type cursorHeap []*cursor

func (h cursorHeap) Len() int { return len(h) }
func (h cursorHeap) Less(i, j int) bool {
	return Less(h[i].depth, h[i].id, h[j].depth, h[j].id)
}
func (h cursorHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)   { *h = append(*h, x.(*cursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// load reads the cursor's current event; false when it is past the end.
func (c *cursor) load(r *room) (bool, error) {
	if c.next > c.last {
		return false, nil
	}
	rid := string(r.id)
	idb, ok, err := r.m.cfg.Store.Lookup(schema.RoomAuthorSeq(rid, []byte(c.author), c.next))
	if err != nil || !ok || len(idb) != len(ID{}) {
		return false, errors.Join(err, fmt.Errorf("rooms: author index of %s seq %d missing", c.author, c.next))
	}
	copy(c.id[:], idb)
	v, ok, err := r.m.cfg.Store.Lookup(schema.RoomEvent(rid, idb))
	if err == nil && ok {
		c.depth, c.wire, err = checkStored(c.id, v)
	}
	if err != nil {
		// Damaged: serve nothing of this author from here on (the
		// requester gets it from another member) and fetch it again.
		r.noteCorrupt(c.id)
		return false, nil
	}
	if !ok {
		return false, fmt.Errorf("rooms: event %s missing", c.id)
	}
	return true, nil
}

// serveSync merges the authors' missing runs into display order, which is
// causal order, so the requester can store each event as it arrives.
//
// upTo, when not zero, bounds the depth of the events served: a node
// removed from the room gets the events up to its removal (which it then
// learns of) and none after. Events are served in display order, so what
// is served under the bound has all its parents there too.
func (r *room) serveSync(w io.Writer, h *Hello, upTo uint64) error {
	mine := r.committedVV()
	limit := servePage(int(h.Limit), len(r.inbox), cap(r.inbox))
	var hp cursorHeap
	budget := serveWires
	keep := func(c *cursor) {
		c.held = len(c.wire) <= budget
		if c.held {
			budget -= len(c.wire)
		} else {
			c.wire = nil
		}
	}
	for a, last := range mine {
		if !h.Covers(a) {
			continue // another Hello asks for these authors
		}
		c := &cursor{author: a, next: h.VV[a] + 1, last: last}
		ok, err := c.load(r)
		if err != nil {
			return err
		}
		if ok {
			keep(c)
			hp = append(hp, c)
		}
	}
	heap.Init(&hp)
	// The wanted events this node holds (forks, or events the requester
	// lost track of), merged into the same display order.
	wanted, err := r.wanted(h.Want, keep)
	if err != nil {
		return err
	}
	sentWanted := make(map[ID]bool, len(wanted))
	b := &Batch{}
	sent, served := 0, 0
	capped := false
	// A batch goes out when full, or once it has waited flushAfter (reads
	// slow on a loaded disk), so the requester hears from this node well
	// within its silence limit.
	flushAfter := time.Duration(syncSilence.Load()) / 8
	began := time.Now()
	for (hp.Len() > 0 || len(wanted) > 0) && sent < limit {
		var wire []byte
		var id ID
		nextWanted := len(wanted) > 0 && (hp.Len() == 0 || Less(wanted[0].depth, wanted[0].id, hp[0].depth, hp[0].id))
		if upTo > 0 && ((nextWanted && wanted[0].depth > upTo) || (!nextWanted && hp[0].depth > upTo)) {
			capped = true
			break
		}
		if nextWanted {
			c := wanted[0]
			wanted = wanted[1:]
			if c.held {
				budget += len(c.wire)
			}
			if sentWanted[c.id] {
				continue
			}
			if c.wire == nil {
				ok, err := c.reread(r)
				if err != nil {
					return err
				}
				if !ok {
					continue // damaged: as wanted does
				}
			}
			wire, id = c.wire, c.id
			sentWanted[id] = true
			served++
		} else {
			c := hp[0]
			if c.wire == nil {
				ok, err := c.reread(r)
				if err != nil {
					return err
				}
				if !ok {
					heap.Pop(&hp) // damaged: as load does
					continue
				}
			} else if c.held {
				budget += len(c.wire)
			}
			wire, id = c.wire, c.id
			c.next++
			ok, err := c.load(r)
			if err != nil {
				return err
			}
			if ok {
				keep(c)
				heap.Fix(&hp, 0)
			} else {
				heap.Pop(&hp)
			}
			if _, w := sentWanted[id]; w {
				continue
			}
			sentWanted[id] = true
		}
		if !b.Fits(len(wire)) || (len(b.Events) > 0 && time.Since(began) > flushAfter) {
			if err := WriteFrame(w, b); err != nil {
				return err
			}
			b = &Batch{}
			began = time.Now()
		}
		b.Events = append(b.Events, wire)
		sent++
	}
	if len(b.Events) > 0 {
		if err := WriteFrame(w, b); err != nil {
			return err
		}
	}
	// A wanted event may itself wait for parents the requester lacks: it
	// asks again with what it still misses.
	more := !capped && (hp.Len() > 0 || len(wanted) > 0 || served > 0)
	return WriteFrame(w, &Batch{End: true, More: more})
}

// wanted reads the events of ids this node holds, in display order; keep
// drops the wires past the answer's serveWires (read again when sent): a
// Hello's MaxWant events of up to MaxWire each would be 16 MiB held.
func (r *room) wanted(ids []ID, keep func(*cursor)) ([]cursor, error) {
	var out []cursor
	for _, id := range ids {
		v, ok, err := r.m.cfg.Store.Lookup(storedKey(r.id, id))
		if !ok && err == nil {
			continue
		}
		var depth uint64
		var wire []byte
		if err == nil {
			depth, wire, err = checkStored(id, v)
		}
		if err != nil {
			r.noteCorrupt(id)
			continue
		}
		c := cursor{id: id, depth: depth, wire: wire}
		keep(&c)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b cursor) int {
		switch {
		case a.id == b.id:
			return 0
		case Less(a.depth, a.id, b.depth, b.id):
			return -1
		}
		return 1
	})
	return out, nil
}

// Serving catch-up yields to live events: a node serves at most
// serveSlots() requests at once, whatever the rooms (the others wait their
// turn), and while a room's inbox is over half full (live events wait for
// its goroutine) it answers in pages of busyPage events, so that the
// requester's next round comes after a pause.
const busyPage = 256

// servePage is how many events to send for a request that asked for at
// most asked (0: SyncLimit) when the room's inbox holds queued inputs of
// capacity.
func servePage(asked, queued, capacity int) int {
	limit := SyncLimit
	if asked > 0 && asked < limit {
		limit = asked
	}
	if queued*2 > capacity {
		limit = min(limit, busyPage)
	}
	return limit
}

// serveSlots is how many sync requests a node serves at once: half the
// CPUs Go uses, so that live delivery keeps the rest, and at least two. A
// peer holds one slot at most (handleSync), so a peer that keeps its
// stream stalled (opens streams and never reads) never holds the last
// free one: another peer is served at once unless two others hold every
// slot. Before, a node of 2 cores had one slot, and such a member held it
// almost all the time: every other peer was answered busy.
func serveSlots() int { return serveSlotsFor(runtime.GOMAXPROCS(0)) }

// serveSlotsFor is serveSlots for procs CPUs.
func serveSlotsFor(procs int) int { return max(2, procs/2) }

// peerServing is a peer's one serving slot (handleSync), and how many of
// its streams hold or wait for it.
type peerServing struct {
	slots
	users int
}

// servingPeer returns p's serving slot, counting one more stream of p
// that holds or waits for it; servedPeer ends that count.
func (m *Manager) servingPeer(p peer.ID) slots {
	m.servingMu.Lock()
	defer m.servingMu.Unlock()
	if m.servingPeers == nil {
		m.servingPeers = make(map[peer.ID]*peerServing)
	}
	ps := m.servingPeers[p]
	if ps == nil {
		ps = &peerServing{slots: make(slots, 1)}
		m.servingPeers[p] = ps
	}
	ps.users++
	return ps.slots
}

// servedPeer ends a count of servingPeer's, forgetting p's slot once no
// stream of it holds or waits for it.
func (m *Manager) servedPeer(p peer.ID) {
	m.servingMu.Lock()
	defer m.servingMu.Unlock()
	if ps := m.servingPeers[p]; ps != nil {
		if ps.users--; ps.users <= 0 {
			delete(m.servingPeers, p)
		}
	}
}

// serveChunk is the most a silenceWriter writes under one deadline.
const serveChunk = 16 << 10

// silenceWriter writes a catch-up's answer to s, the responder's side of
// silenceReader: each chunk of at most serveChunk bytes is given up once
// silence passes and the requester took none of it (or at end), so that
// a requester that stops reading loses its serving slot after silence
// (serveWait), not at the exchange's end. A large frame over a slow link
// goes out as long as its bytes do.
type silenceWriter struct {
	s       network.Stream
	silence time.Duration
	end     time.Time
}

func (sw *silenceWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		wait := time.Now().Add(sw.silence)
		if wait.After(sw.end) {
			wait = sw.end
		}
		_ = sw.s.SetWriteDeadline(wait)
		k := min(len(p), serveChunk)
		n, err := sw.s.Write(p[:k])
		written += n
		p = p[n:]
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// slots is a counting semaphore.
type slots chan struct{}

// acquire takes a slot, waiting until one is free or ctx ends (false).
func (s slots) acquire(ctx context.Context) bool {
	select {
	case s <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s slots) release() { <-s }
