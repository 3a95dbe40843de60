package contacts

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/sec"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/dialerr"
)

// reach makes sure there is a connection to ai.ID: it uses the given
// addresses, then the peerstore's, then the DHT.
func (s *Service) reach(ctx context.Context, ai peer.AddrInfo) error {
	h := s.cfg.Host
	if c := h.Network().Connectedness(ai.ID); c == network.Connected || c == network.Limited {
		return nil // a relayed connection carries contact messages
	}
	var errs []error
	try := func(ai peer.AddrInfo) bool {
		ctx, cancel := context.WithTimeout(ctx, dialTimeout)
		defer cancel()
		err := h.Connect(network.WithAllowLimitedConn(ctx, "contact"), ai)
		if err != nil {
			errs = append(errs, err)
		}
		return err == nil
	}
	if len(ai.Addrs) > 0 {
		h.Peerstore().AddAddrs(ai.ID, ai.Addrs, peerstore.TempAddrTTL)
	}
	if len(h.Peerstore().Addrs(ai.ID)) > 0 && try(peer.AddrInfo{ID: ai.ID}) {
		return nil
	}
	// Another node answers at an address given: that is the whole story,
	// in one line; the DHT would only add its own failures.
	if len(ai.Addrs) > 0 {
		for _, err := range errs {
			if other, at, ok := mismatchAt(err, nil); ok {
				return fmt.Errorf("%w: %w, %s, answers at %s (peer ID mismatch: check the address's /p2p/ part)", ErrUnreachable, errOtherNode, other, at)
			}
		}
	}
	if s.cfg.FindPeer != nil && ctx.Err() == nil {
		fctx, cancel := context.WithTimeout(ctx, dialTimeout)
		found, err := s.cfg.FindPeer(fctx, ai.ID)
		cancel()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("DHT lookup: %w", err))
		case len(found.Addrs) == 0:
			errs = append(errs, errors.New("DHT lookup found no addresses"))
		default:
			if try(found) {
				return nil
			}
		}
	}
	if len(errs) == 0 {
		errs = append(errs, errors.New("no known address"))
	}
	// The caller names the peer (a request's error is "contacts: request
	// PEER: …"), so the reasons follow the sentinel alone.
	return fmt.Errorf("%w: %w", ErrUnreachable, dialerr.Errors(errs))
}

// errOtherNode is reach's error when another node answers at an address
// given.
var errOtherNode = errors.New("another node")

// mismatchAt finds in a dial's error a peer ID mismatch, and the address
// it was met at (at is the innermost address seen above it).
func mismatchAt(err error, at ma.Multiaddr) (peer.ID, ma.Multiaddr, bool) {
	switch e := err.(type) {
	case nil:
		return "", nil, false
	case sec.ErrPeerIDMismatch:
		return e.Actual, at, true
	case *sec.ErrPeerIDMismatch:
		return e.Actual, at, true
	case *swarm.TransportError:
		at = e.Address
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return mismatchAt(u.Unwrap(), at)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if p, a, ok := mismatchAt(e, at); ok {
				return p, a, true
			}
		}
	}
	return "", nil, false
}

// exchange sends m to p and returns the answer. A peer that cannot be
// reached or does not answer gives ErrUnreachable; an error answer gives an
// error wrapping consent.ErrRemote.
func (s *Service) exchange(ctx context.Context, p peer.ID, m consent.Message) (*consent.Message, error) {
	if err := s.reach(ctx, peer.AddrInfo{ID: p}); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	ctx, cancel := context.WithTimeout(ctx, exchangeTimeout)
	defer cancel()
	st, err := s.cfg.Host.NewStream(network.WithAllowLimitedConn(ctx, "contact"), p, consent.ProtocolID)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnreachable, p, err)
	}
	defer st.Close()
	_ = st.SetDeadline(time.Now().Add(exchangeTimeout))
	if err := consent.WriteFrame(st, m); err != nil {
		_ = st.Reset()
		return nil, fmt.Errorf("%w: %s: %w", ErrUnreachable, p, err)
	}
	_ = st.CloseWrite()
	b, err := consent.ReadFrame(st, consent.MaxFrame)
	if err != nil {
		_ = st.Reset()
		return nil, fmt.Errorf("%w: %s did not answer: %w", ErrUnreachable, p, err)
	}
	ans, err := consent.DecodeMessage(b)
	if err != nil {
		s.reject(p, "", err)
		return nil, fmt.Errorf("contacts: bad answer from %s: %w", p, err)
	}
	if err := ans.Err(); err != nil {
		text := ans.Text
		if text == "" {
			text = ans.Code
		}
		if errors.Is(err, consent.ErrDenied) {
			text = deniedText(ans.Text)
		} else {
			text = peerWords(text)
		}
		return nil, &remoteError{peer: p, text: text, err: err}
	}
	return ans, nil
}

// deniedUntil finds the end of a cool-down in a "denied" answer's text
// ("...: until 2026-12-06T05:52:16Z").
var deniedUntil = regexp.MustCompile(`until (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)`)

// deniedText says, to this node's user, what a peer's "denied" answer
// means: the peer's text is its own node's error ("consent: incoming
// request THIS_NODE: consent: denied, try again later: until T"), which
// read backwards here.
func deniedText(peerText string) string {
	const what = "its user denied this node's request, or revoked the contact"
	m := deniedUntil.FindStringSubmatch(peerText)
	if m == nil {
		return what + "; this node may ask again later"
	}
	t, err := time.Parse(time.RFC3339, m[1])
	if err != nil {
		return what + "; this node may ask again later"
	}
	return what + "; this node may ask again after " + t.UTC().Format("2006-01-02 15:04 MST")
}

// peerWords is a text a peer wrote, for an error of this node's: as it
// is when it is plain, else quoted with every line break, tab and
// character strconv.Quote does not take for printable (format characters
// such as a bidi override, the line separators) escaped, so that it cannot
// start a line of its own, or reorder one, where the error is printed.
func peerWords(s string) string {
	if q := strconv.Quote(s); q[1:len(q)-1] != s {
		return q
	}
	return s
}

// remoteError is a peer's refusal: it reads as the peer's own words and
// wraps consent.ErrRemote and the sentinel of the answer's code.
type remoteError struct {
	peer peer.ID
	text string
	err  error
}

func (e *remoteError) Error() string { return fmt.Sprintf("%s refused: %s", e.peer, e.text) }
func (e *remoteError) Unwrap() error { return e.err }

// deliveryKey names one thing to deliver, for the done set.
func deliveryKey(kind consent.Kind, b []byte) string {
	return string(kind) + ":" + consent.RequestID(b)
}

func (s *Service) isDone(key string) bool {
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	return s.done[key]
}

func (s *Service) markDone(key string) {
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	s.done[key] = true
}

// forgetRevocationSent lets the revocation between this node and p (its own
// or p's, as workFor picks it) be sent again: a peer that connects may run
// on an older copy of its home that lost it. One exchange per connection
// with a revoked contact; a peer that knows it refuses it as a replay.
func (s *Service) forgetRevocationSent(p peer.ID) {
	c, ok := s.book.Get(p, s.now())
	if !ok {
		return
	}
	revs := c.Revocations()
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	for _, wire := range revs {
		delete(s.done, deliveryKey(consent.KindRevoke, wire))
	}
}

// showCert shows p, an active contact that connected, the certificate
// this node holds with it, once while p stays connected: a peer started on
// an older copy of its home takes it back (consent.Book.RestoreCertificate),
// one that holds it answers at once.
func (s *Service) showCert(ctx context.Context, p peer.ID) {
	c, ok := s.book.Get(p, s.now())
	if !ok || c.State != consent.StateActive || c.Cert == nil {
		return
	}
	key := deliveryKey(consent.KindCert, c.Cert)
	s.stateMu.Lock()
	if s.shown[p] == key {
		s.stateMu.Unlock()
		return
	}
	s.shown[p] = key
	s.stateMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, deliverTimeout)
	defer cancel()
	_, err := s.exchange(ctx, p, consent.Message{Kind: consent.KindCert, Cert: c.Cert, Handle: s.cfg.Handle})
	if err == nil {
		return
	}
	s.log.Debug("certificate not taken by the contact", "peer", p.String(), "err", err)
	if !errors.Is(err, consent.ErrReplay) {
		// Not answered (the peer just starting, perhaps), or not taken
		// now (rate limited, its pending requests full, its own
		// certificate still live): retryLoop shows it again while the
		// peer stays connected. A replay is final: it holds newer.
		s.stateMu.Lock()
		if s.shown[p] == key {
			delete(s.shown, p)
		}
		s.stateMu.Unlock()
	}
}

// showCerts shows their certificates to the connected active contacts
// that have not answered one since they connected (retryLoop).
func (s *Service) showCerts(now time.Time) {
	for _, c := range s.book.List(now) {
		if c.State != consent.StateActive || c.Cert == nil {
			continue
		}
		p := c.Peer
		if s.cfg.Host.Network().Connectedness(p) != network.Connected {
			continue
		}
		s.stateMu.Lock()
		shown := s.shown[p] == deliveryKey(consent.KindCert, c.Cert)
		s.stateMu.Unlock()
		if !shown {
			s.spawn(func() { s.showCert(s.ctx, p) })
		}
	}
}

// work is what this node still has to tell p: one of a request, an
// approval (offer) or a revocation.
type work struct {
	kind    consent.Kind
	key     string
	msg     consent.Message
	renewed bool // a fresh offer made after a lost countersignature; not renewed again
}

// workFor returns what c still needs delivered, if anything.
func (s *Service) workFor(c consent.Contact) (work, bool) {
	var w work
	switch {
	case c.State == consent.StatePendingOut && c.OutRequest != nil:
		w = work{kind: consent.KindRequest, msg: consent.Message{Kind: consent.KindRequest, Request: c.OutRequest}}
		w.key = deliveryKey(w.kind, c.OutRequest)
	case c.State == consent.StatePendingIn && c.Offer != nil:
		w = work{kind: consent.KindApprove, msg: consent.Message{
			Kind: consent.KindApprove, ID: c.ID, Payload: c.Offer, Sig: c.OfferSig, Handle: s.cfg.Handle,
		}}
		w.key = deliveryKey(w.kind, c.Offer)
	case c.State == consent.StateRevoked:
		// This node's revocation, then the peer's own shown back to it
		// (a node restored from an older copy of its home takes it back
		// in): the first not yet answered.
		revs := c.Revocations()
		if len(revs) == 0 {
			return work{}, false
		}
		for _, wire := range revs {
			w = work{kind: consent.KindRevoke, key: deliveryKey(consent.KindRevoke, wire),
				msg: consent.Message{Kind: consent.KindRevoke, Revocation: wire}}
			if !s.isDone(w.key) {
				return w, true
			}
		}
	default:
		return work{}, false
	}
	return w, !s.isDone(w.key)
}

func (s *Service) hasWork(p peer.ID) bool {
	c, ok := s.book.Get(p, s.now())
	if !ok {
		return false
	}
	_, ok = s.workFor(c)
	return ok
}

// deliver sends w to p and takes the answer. It returns ErrUnreachable
// (wrapped) if p should be tried again later; any answer, a refusal too,
// marks w done. The caller holds p's lock.
func (s *Service) deliver(ctx context.Context, p peer.ID, w work) error {
	ans, err := s.exchange(ctx, p, w.msg)
	if errors.Is(err, ErrUnreachable) {
		return err
	}
	s.markDone(w.key)
	if w.kind == consent.KindApprove && errors.Is(err, consent.ErrReplay) && !w.renewed {
		// The requester holds a certificate as new as this offer: it
		// countersigned it, and the countersignature was lost. A fresh
		// offer with the same end renews it (see consent's Book).
		return s.reoffer(ctx, p, w)
	}
	if err != nil {
		if w.kind == consent.KindRequest && errors.Is(err, consent.ErrDenied) {
			// The peer denied us while we were away: record it.
			id := consent.RequestID(w.msg.Request)
			if derr := s.apply(func(now time.Time) ([]consent.Record, error) { return s.book.Denied(p, id, now) }); derr != nil {
				s.log.Debug("denial not recorded", "peer", p.String(), "err", derr)
			}
		}
		return err
	}
	switch w.kind {
	case consent.KindApprove:
		if ans.Kind != consent.KindCountersign {
			err := fmt.Errorf("%w: answered an approval with %s", consent.ErrMalformed, ans.Kind)
			s.reject(p, ans.Kind, err)
			return fmt.Errorf("contacts: %s: %w", p, err)
		}
		err := s.apply(func(now time.Time) ([]consent.Record, error) { return s.book.Complete(p, ans.Sig, now) })
		if errors.Is(err, consent.ErrState) {
			// The requester, active once it countersigned, may show
			// this node the certificate (showCert) before its answer
			// here comes back: the offer was taken in by that, and the
			// contact is active. The approval did what it was for.
			if c, ok := s.book.Get(p, s.now()); ok && c.State == consent.StateActive && c.Cert != nil {
				s.log.Info("contact active: the peer showed the certificate before its countersignature came back", "peer", p.String())
				return nil
			}
		}
		if err != nil {
			s.reject(p, ans.Kind, err)
			return err
		}
		s.log.Info("contact active", "peer", p.String())
	default:
		if ans.Kind != consent.KindAck {
			return fmt.Errorf("contacts: %s: %w: answered %s with %s", p, consent.ErrMalformed, w.kind, ans.Kind)
		}
	}
	return nil
}

// reoffer replaces the outstanding offer w, which the requester already
// countersigned, by a fresh one ending at the same time, and delivers it.
func (s *Service) reoffer(ctx context.Context, p peer.ID, w work) error {
	old, err := consent.ParseCertPayload(w.msg.Payload)
	if err != nil {
		return err
	}
	var a consent.Approval
	err = s.apply(func(now time.Time) (recs []consent.Record, err error) {
		left := old.NotAfter.Sub(now)
		if left <= 0 {
			return nil, fmt.Errorf("%w: the approval ran out before it was countersigned", consent.ErrExpired)
		}
		// The same scopes as the certificate the requester holds: it
		// countersigns no renewal wider than that.
		a, recs, err = s.book.ApproveScoped(w.msg.ID, left, old.Scopes, now)
		return recs, err
	})
	if err != nil {
		return fmt.Errorf("contacts: renew approval of %s: %w", p, err)
	}
	next := work{kind: consent.KindApprove, key: deliveryKey(consent.KindApprove, a.Payload), renewed: true, msg: consent.Message{
		Kind: consent.KindApprove, ID: a.ID, Payload: a.Payload, Sig: a.Sig, Handle: s.cfg.Handle,
	}}
	return s.deliver(ctx, p, next)
}

// redeliver sends p what it missed, if anything.
func (s *Service) redeliver(ctx context.Context, p peer.ID) {
	if !s.hasWork(p) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, deliverTimeout)
	defer cancel()
	unlock, err := s.lockPeer(ctx, p)
	if err != nil {
		return
	}
	defer unlock()
	// A revoked contact may have two revocations to send (this node's,
	// then the peer's own), one after the other: any answer marks one done.
	for range 3 {
		c, ok := s.book.Get(p, s.now())
		if !ok {
			return
		}
		w, ok := s.workFor(c)
		if !ok {
			return
		}
		if err := s.deliver(ctx, p, w); err != nil {
			s.log.Debug("contact re-send failed", "peer", p.String(), "kind", string(w.kind), "err", err)
			if errors.Is(err, ErrUnreachable) || w.kind != consent.KindRevoke {
				return
			}
			continue
		}
		s.log.Info("contact message re-sent", "peer", p.String(), "kind", string(w.kind))
		if w.kind != consent.KindRevoke {
			return
		}
	}
}

// retryFor is how long after the last change retryLoop keeps dialling a
// peer; after that only its connecting triggers a re-send.
const retryFor = 30 * 24 * time.Hour

// retryLoop re-sends undelivered messages every RetryInterval, dialling
// peers that are not connected.
func (s *Service) retryLoop() {
	t := time.NewTicker(s.cfg.RetryInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		s.expire()
		now := s.now()
		s.showCerts(now)
		for _, c := range s.book.List(now) {
			if now.Sub(c.Updated) > retryFor {
				continue // gone for a month: wait until it connects
			}
			if _, ok := s.workFor(c); ok {
				p := c.Peer
				s.spawn(func() { s.redeliver(s.ctx, p) })
			}
		}
	}
}
