package contacts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/audit"
)

// handle serves one /parley/contact/1 stream: one message in, one answer out.
func (s *Service) handle(st network.Stream) {
	defer st.Close()
	_ = st.SetDeadline(time.Now().Add(exchangeTimeout))
	remote := st.Conn().RemotePeer()
	b, err := consent.ReadFrame(st, consent.MaxFrame)
	if err != nil {
		s.reject(remote, "", err)
		if errors.Is(err, consent.ErrFrameTooLarge) {
			_ = consent.WriteFrame(st, consent.ErrorMessage("", err))
			_ = st.CloseWrite()
			return
		}
		_ = st.Reset()
		return
	}
	// The limit comes before decoding: a flood costs no more than reading.
	var ans consent.Message
	if !s.allow(remote) {
		err := fmt.Errorf("%w: at most %d contact messages a minute", consent.ErrRateLimited, s.cfg.RateLimit)
		s.reject(remote, "", err)
		ans = consent.ErrorMessage("", err)
	} else if m, err := consent.DecodeMessage(b); err != nil {
		s.reject(remote, "", err)
		ans = consent.ErrorMessage("", err)
	} else {
		s.m.received.WithLabelValues(string(m.Kind)).Inc()
		ans = s.serve(remote, m)
	}
	if err := consent.WriteFrame(st, ans); err != nil {
		s.log.Debug("contact answer not sent", "peer", remote.String(), "err", err)
		_ = st.Reset()
		return
	}
	_ = st.CloseWrite()
}

// StrangerAudits is how many contact requests a minute from peers the node
// does not know are written to the audit log; the others are counted
// (parley_contact_requests_unaudited_total) and the next line written
// says how many were left out. Anyone with a fresh key can ask, and the
// log is never cut: written for each, requests would grow it without
// bound.
const StrangerAudits = 10

// auditNote is how much of a request's note the audit log keeps.
const auditNote = 100

// auditRequest writes a new contact request to the audit log, within
// StrangerAudits a minute for peers the node does not know.
func (s *Service) auditRequest(remote peer.ID, c consent.Contact, known bool) {
	note := c.Note
	if r := []rune(note); len(r) > auditNote {
		note = string(r[:auditNote]) + "…"
	}
	detail := map[string]string{"id": c.ID, "handle": c.Handle, "note": note}
	if !known {
		if !s.strangerAudits.AllowN(s.now(), 1) {
			s.unaudited.Add(1)
			s.m.unaudited.Inc()
			return
		}
		if n := s.unaudited.Swap(0); n > 0 {
			detail["unlogged_before"] = strconv.FormatInt(n, 10)
		}
	}
	s.record(peerActor(remote), audit.ContactRequest, remote, detail)
}

// serve takes one message from remote and returns the answer.
func (s *Service) serve(remote peer.ID, m *consent.Message) consent.Message {
	var (
		ans consent.Message
		err error
	)
	switch m.Kind {
	case consent.KindRequest:
		var c consent.Contact
		fresh := false // not a request the book holds already
		known := s.known(remote)
		err = s.apply(func(now time.Time) (recs []consent.Record, err error) {
			c, recs, err = s.book.IncomingRequest(remote, m.Request, known, now)
			fresh = slices.ContainsFunc(recs, func(r consent.Record) bool { return r.Peer == remote && !r.Delete })
			return recs, err
		})
		if err == nil {
			ans = consent.Message{Kind: consent.KindAck, ID: c.ID}
			if fresh {
				if known || c.Known {
					s.log.Info("contact request received", "from", remote.String(), "handle", c.Handle, "id", c.ID)
				} else {
					s.peerLogs.Log(s.log, slog.LevelInfo, "contact request received", "from", remote.String(), "handle", c.Handle, "id", c.ID)
				}
				s.auditRequest(remote, c, known || c.Known)
			}
			if s.cfg.AutoApprove != nil && c.State == consent.StatePendingIn && c.Offer == nil {
				s.decide(remote, c.ID, fresh)
			}
		}
	case consent.KindApprove:
		var sig []byte
		err = s.apply(func(now time.Time) (recs []consent.Record, err error) {
			sig, recs, err = s.book.Countersign(remote, m.Handle, m.Payload, m.Sig, now)
			return recs, err
		})
		if err == nil {
			ans = consent.Message{Kind: consent.KindCountersign, ID: m.ID, Sig: sig}
			s.log.Info("contact approved by peer", "peer", remote.String(), "id", m.ID)
			s.record(peerActor(remote), audit.ContactApprove, remote, map[string]string{"id": m.ID})
		}
	case consent.KindDeny:
		err = s.apply(func(now time.Time) ([]consent.Record, error) { return s.book.Denied(remote, m.ID, now) })
		if err == nil {
			ans = consent.Message{Kind: consent.KindAck, ID: m.ID}
			s.log.Info("contact request denied by peer", "peer", remote.String(), "id", m.ID)
			s.record(peerActor(remote), audit.ContactDeny, remote, map[string]string{"id": m.ID})
		}
	case consent.KindRevoke:
		var c consent.Contact
		err = s.apply(func(now time.Time) (recs []consent.Record, err error) {
			c, recs, err = s.book.ApplyRevocation(m.Revocation, now)
			return recs, err
		})
		switch {
		case err != nil:
		case bytes.Equal(c.Revocation, m.Revocation):
			// Our own revocation, shown back by a peer: this node runs on
			// an older copy of its home that forgot it.
			ans = consent.Message{Kind: consent.KindAck}
			s.log.Warn("own revocation taken back from a peer: this home was restored from an older copy",
				"peer", c.Peer.String(), "from", remote.String())
			s.record(peerActor(remote), audit.ContactRevoke, c.Peer, map[string]string{"restored": "own revocation shown back by " + remote.String()})
		case c.LastRevocationSeq == 0:
			// A stranger withdrew its own request: the book dropped it and
			// keeps nothing. Anyone with a fresh key can do that, so the
			// line is held to the strangers' audit budget.
			ans = consent.Message{Kind: consent.KindAck}
			s.peerLogs.Log(s.log, slog.LevelInfo, "contact request withdrawn by peer", "peer", c.Peer.String(), "id", c.ID)
			if s.strangerAudits.AllowN(s.now(), 1) {
				s.record(peerActor(remote), audit.ContactRevoke, c.Peer, map[string]string{"id": c.ID, "withdrawn": "request of a peer the node never dealt with"})
			} else {
				s.unaudited.Add(1)
				s.m.unaudited.Inc()
			}
		default:
			ans = consent.Message{Kind: consent.KindAck}
			s.log.Info("contact revoked by peer", "peer", c.Peer.String(), "from", remote.String(), "state", string(c.State))
			s.record(peerActor(remote), audit.ContactRevoke, c.Peer, nil)
		}
	case consent.KindCert:
		var (
			c        consent.Contact
			restored bool
			changed  bool
		)
		err = s.apply(func(now time.Time) (recs []consent.Record, err error) {
			c, restored, recs, err = s.book.RestoreCertificate(remote, m.Handle, m.Cert, now)
			changed = len(recs) > 0
			return recs, err
		})
		if err == nil {
			ans = consent.Message{Kind: consent.KindAck}
		}
		switch {
		case err != nil:
		case restored:
			// The approval this node made, whose countersignature it lost.
			s.log.Info("contact active: the peer showed the certificate this node approved", "peer", remote.String())
			s.record(peerActor(remote), audit.ContactApprove, remote, map[string]string{
				"restored": "certificate of this node's approval, shown back by the peer", "seq": strconv.FormatUint(c.Seq, 10)})
		case c.State == consent.StatePendingIn && changed:
			// A certificate this node signed that it does not hold: it may
			// run on an older copy of its home, or the peer was revoked
			// since and keeps that to itself. The user decides.
			s.log.Warn("a peer shows a contact certificate this node signed and does not hold (home restored from an older copy?): approve it to be contacts again, or deny",
				"peer", remote.String(), "id", c.ID)
			s.record(peerActor(remote), audit.ContactRequest, remote, map[string]string{
				"id": c.ID, "shown_cert": "a certificate this node signed, shown back by the peer; approve to take it back"})
		}
	default:
		err = fmt.Errorf("%w: a %s message cannot open an exchange", consent.ErrMalformed, m.Kind)
	}
	if err != nil {
		s.reject(remote, m.Kind, err)
		return consent.ErrorMessage(m.ID, err)
	}
	return ans
}

// reject counts and logs refused input from remote.
func (s *Service) reject(remote peer.ID, kind consent.Kind, err error) {
	reason := reasonOf(err)
	s.m.rejected.WithLabelValues(reason).Inc()
	s.peerLogs.Log(s.log, slog.LevelInfo, "contact message refused", "peer", remote.String(), "kind", string(kind), "reason", reason, "err", err)
}

// reasons maps errors to the reason label of parley_contact_rejected_total.
var reasons = []struct {
	err    error
	reason string
}{
	{consent.ErrRateLimited, "rate_limited"},
	{consent.ErrBadSignature, "bad_signature"},
	{consent.ErrWrongPeers, "wrong_peers"},
	{consent.ErrExpired, "expired"},
	{consent.ErrNotYetValid, "not_yet_valid"},
	{consent.ErrReplay, "replay"},
	{consent.ErrDenied, "denied"},
	{consent.ErrTooManyPending, "too_many_pending"},
	{consent.ErrAlreadyPending, "already_pending"},
	{consent.ErrAlreadyContact, "already_contact"},
	{consent.ErrTooLong, "too_long"},
	{consent.ErrFrameTooLarge, "too_large"},
	{consent.ErrMalformed, "malformed"},
	{consent.ErrNotRequested, "not_requested"},
	{consent.ErrNotFound, "not_found"},
	{consent.ErrState, "state"},
	{consent.ErrNoContact, "no_contact"},
}

func reasonOf(err error) string {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return "other"
}

// autoApprove asks AutoApprove about p's request id and approves it when
// told to. The actor in the audit log is "org".
// maxDeciding bounds the peers whose request AutoApprove is deciding (or
// will decide again) at once: beyond it, a new request waits for the user.
const maxDeciding = 32

// redecideEvery is the least time between two decisions on one peer's
// request: a repeat of it (the requester's user asked again, e.g. once its
// organisation trusts this node's) is decided again at most that often.
const redecideEvery = 5 * time.Second

// deciding is the decision on one peer's request under way.
type deciding struct {
	again bool   // a repeat came meanwhile: decide once more after it
	id    string // the request to decide then
}

// decide has AutoApprove decide p's request id: at once for a request newly
// recorded (fresh), and one decision per peer at a time. A repeat that
// comes while one is under way is decided once more after it, no sooner
// than redecideEvery, however many repeats came. Before, each repeat
// (acked again) opened one more decision, and its exchanges with the
// requester, at once.
func (s *Service) decide(p peer.ID, id string, fresh bool) {
	s.decideMu.Lock()
	defer s.decideMu.Unlock()
	if d := s.deciding[p]; d != nil {
		d.again, d.id = true, id
		return
	}
	if len(s.deciding) >= maxDeciding {
		s.log.Debug("organisation trust not asked: too many decisions under way; the request waits for the user", "peer", p.String())
		return
	}
	if s.deciding == nil {
		s.deciding = make(map[peer.ID]*deciding)
	}
	d := &deciding{}
	s.deciding[p] = d
	s.spawn(func() { s.decideLoop(p, d, id, fresh) })
}

func (s *Service) decideLoop(p peer.ID, d *deciding, id string, fresh bool) {
	defer func() {
		s.decideMu.Lock()
		if s.deciding[p] == d {
			delete(s.deciding, p)
		}
		s.decideMu.Unlock()
	}()
	wait := !fresh
	for {
		if wait {
			t := time.NewTimer(redecideEvery)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		if c, ok := s.book.Get(p, s.now()); ok && c.State == consent.StatePendingIn && c.Offer == nil && c.ID == id {
			s.autoApprove(p, id)
		}
		s.decideMu.Lock()
		if !d.again {
			delete(s.deciding, p)
			s.decideMu.Unlock()
			return
		}
		d.again, id, wait = false, d.id, true
		s.decideMu.Unlock()
	}
}

func (s *Service) autoApprove(p peer.ID, id string) {
	ctx, cancel := context.WithTimeout(s.ctx, deliverTimeout)
	defer cancel()
	scopes, until, ok := s.cfg.AutoApprove(ctx, p)
	if !ok {
		return
	}
	validFor := until.Sub(s.now())
	if validFor <= 0 {
		return
	}
	if _, err := s.approve(ctx, id, validFor, scopes, "org"); err != nil {
		s.log.Warn("approval by organisation trust failed", "peer", p.String(), "err", err)
		// AutoApprove noted the contact as the organisation's before
		// this approval; if the user decided meanwhile (approved by
		// hand), the contact is the user's.
		if c, ok := s.book.Get(p, s.now()); ok && c.State != consent.StatePendingIn && s.cfg.UserDecided != nil {
			s.cfg.UserDecided(p)
		}
		return
	}
	s.log.Info("contact approved by organisation trust", "peer", p.String(), "scopes", fmt.Sprint(scopes))
}
