package rooms

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// Limits of one sync session.
const (
	// SyncLimit is the most events a responder sends per request; the
	// requester asks again while More is set.
	SyncLimit = 4096
	// syncTimeout bounds one request/response exchange.
	syncTimeout = time.Minute
	// maxSyncRounds bounds the requests of one session.
	maxSyncRounds = 10_000
)

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

// progressMark changes whenever the room stores an event. (A round that
// only parks events in the pending pool is no progress: their parents were
// in the round, or are by authors this node refuses, so the next round
// would bring the same events.)
func (r *room) progressMark() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var n uint64
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
// room backs off from p.
func (r *room) requestSync(p peer.ID) {
	if p == r.m.self || p == "" {
		return
	}
	r.mu.Lock()
	if r.syncing[p] || r.stalledLocked(p) {
		r.mu.Unlock()
		return
	}
	r.syncing[p] = true
	r.mu.Unlock()
	select {
	case r.syncQ <- p:
	default:
		r.mu.Lock()
		delete(r.syncing, p)
		r.mu.Unlock()
	}
}

// syncLoop runs queued catch-ups one at a time, and anti-entropy with a
// random connected member every SyncInterval.
func (r *room) syncLoop(ctx context.Context) {
	t := time.NewTicker(r.m.cfg.SyncInterval)
	defer t.Stop()
	for {
		var p peer.ID
		select {
		case <-ctx.Done():
			return
		case p = <-r.syncQ:
		case <-t.C:
			p = r.randomMember()
			if p == "" {
				continue
			}
			r.mu.Lock()
			r.syncing[p] = true
			r.mu.Unlock()
		}
		if err := r.syncWith(ctx, p); err != nil && ctx.Err() == nil {
			r.m.log.Debug("sync failed", "room", string(r.id), "remote", p.String(), "err", err)
		}
		r.mu.Lock()
		delete(r.syncing, p)
		r.mu.Unlock()
	}
}

// syncWith catches up with p: it sends what this node has (the version
// vector) and stores what p streams back, round after round while p says
// there is more.
func (r *room) syncWith(ctx context.Context, p peer.ID) error {
	if err := r.m.cfg.Policy.Allowed(p); err != nil {
		return err
	}
	for round := 0; round < maxSyncRounds; round++ {
		mark := r.progressMark()
		more, n, err := r.syncRound(ctx, p)
		if err != nil {
			r.m.metrics.syncs.WithLabelValues("requester", "error").Inc()
			return fmt.Errorf("rooms: sync %s with %s: %w", r.id, p, err)
		}
		// Wait until the room's goroutine stored the batch, so the next
		// Hello's version vector includes it.
		if err := r.barrier(ctx); err != nil {
			return err
		}
		r.m.log.Debug("sync round", "room", string(r.id), "remote", p.String(), "events", n, "more", more)
		if n > 0 && r.progressMark() == mark {
			// Every event was refused: asking again would bring the same
			// ones back. Back off from p.
			r.noteProgress(p, false)
			r.m.metrics.syncs.WithLabelValues("requester", "no_progress").Inc()
			return fmt.Errorf("rooms: sync %s with %s: %w (%d events refused)", r.id, p, ErrNoProgress, n)
		}
		if n > 0 {
			r.noteProgress(p, true)
		}
		if !more || n == 0 {
			r.m.metrics.syncs.WithLabelValues("requester", "ok").Inc()
			return nil
		}
	}
	return nil
}

func (r *room) syncRound(ctx context.Context, p peer.ID) (more bool, n int, err error) {
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	s, err := r.m.cfg.Host.NewStream(network.WithAllowLimitedConn(ctx, "sync"), p, ProtocolSync)
	if err != nil {
		return false, 0, err
	}
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(syncTimeout))
	r.mu.RLock()
	h := &Hello{Room: r.id, VV: make(map[peer.ID]uint64, len(r.vv)), Limit: uint32(askLimit.Load())}
	for a, seq := range r.vv {
		h.VV[a] = seq
	}
	h.Heads = r.headsSnap
	if len(h.Heads) > MaxHeads {
		h.Heads = h.Heads[:MaxHeads]
	}
	r.mu.RUnlock()
	if err := WriteFrame(s, h); err != nil {
		s.Reset()
		return false, 0, err
	}
	_ = s.CloseWrite()
	for {
		b, err := ReadBatch(s)
		if err != nil {
			s.Reset()
			return false, n, err
		}
		if b.End {
			return b.More, n, nil
		}
		for _, w := range b.Events {
			e, id, err := Decode(w)
			if err != nil {
				r.m.reject(err)
				s.Reset()
				return false, n, fmt.Errorf("peer sent a bad event: %w", err)
			}
			if err := r.submit(ctx, input{item: &Item{ID: id, Event: e, Wire: w}, from: p}); err != nil {
				return false, n, err
			}
			n++
		}
		r.m.metrics.synced.Add(float64(len(b.Events)))
	}
}

// handleSync serves /parley/sync/1: it reads the requester's Hello and
// streams the events it lacks in display order, at most SyncLimit.
func (m *Manager) handleSync(s network.Stream) {
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(syncTimeout))
	remote := s.Conn().RemotePeer()
	h, err := ReadHello(s, MaxFrame)
	if err != nil {
		m.metrics.syncs.WithLabelValues("responder", "bad_request").Inc()
		m.log.Debug("bad sync request", "remote", remote.String(), "err", err)
		s.Reset()
		return
	}
	r := m.syncRoom(h.Room)
	if r == nil || !r.isMember(remote) || m.cfg.Policy.Allowed(remote) != nil {
		m.metrics.syncs.WithLabelValues("responder", "refused").Inc()
		s.Reset()
		return
	}
	if err := r.serveSync(s, h); err != nil {
		m.metrics.syncs.WithLabelValues("responder", "error").Inc()
		if !errors.Is(err, io.EOF) {
			m.log.Debug("sync serve failed", "room", string(r.id), "remote", remote.String(), "err", err)
		}
		s.Reset()
		return
	}
	m.metrics.syncs.WithLabelValues("responder", "ok").Inc()
	m.servedSync(r)
}

// cursor walks one author's events that the requester lacks.
type cursor struct {
	author     peer.ID
	next, last uint64
	id         ID
	depth      uint64
	wire       []byte
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
	if err != nil || !ok {
		return false, errors.Join(err, fmt.Errorf("rooms: event %s missing", c.id))
	}
	c.depth, c.wire, err = splitStored(v)
	return err == nil, err
}

// serveSync merges the authors' missing runs into display order, which is
// causal order, so the requester can store each event as it arrives.
func (r *room) serveSync(w io.Writer, h *Hello) error {
	mine := r.committedVV()
	limit := SyncLimit
	if h.Limit > 0 && int(h.Limit) < limit {
		limit = int(h.Limit)
	}
	var hp cursorHeap
	for a, last := range mine {
		c := &cursor{author: a, next: h.VV[a] + 1, last: last}
		ok, err := c.load(r)
		if err != nil {
			return err
		}
		if ok {
			hp = append(hp, c)
		}
	}
	heap.Init(&hp)
	b := &Batch{}
	sent := 0
	for hp.Len() > 0 && sent < limit {
		c := hp[0]
		if !b.Fits(len(c.wire)) {
			if err := WriteFrame(w, b); err != nil {
				return err
			}
			b = &Batch{}
		}
		b.Events = append(b.Events, c.wire)
		sent++
		c.next++
		ok, err := c.load(r)
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&hp, 0)
		} else {
			heap.Pop(&hp)
		}
	}
	if len(b.Events) > 0 {
		if err := WriteFrame(w, b); err != nil {
			return err
		}
	}
	return WriteFrame(w, &Batch{End: true, More: hp.Len() > 0})
}
