package org

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/time/rate"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// MaxOffers bounds the memberships held for the user's answer: a contact
// that pushes more organisations than this is refused.
const MaxOffers = 8

// MaxOfferTrusts bounds the trusts kept with an offer (the newest of each
// trusted organisation, the first pushed): the store never reclaims a
// value of 1 KiB or more written over, and a contact may push an offer
// again and again.
const MaxOfferTrusts = 16

// offerEvery is how often one contact's pushes may write an offer (a new
// one, or a newer one in place of its organisation's), after MaxOffers at
// once.
const offerEvery = time.Minute

// maxOfferPushers bounds the contacts whose offer limiters are kept.
const maxOfferPushers = 1024

// Errors of offers.
var (
	ErrNoOffer      = errors.New("org: no membership of that organisation waits for an answer")
	ErrOffersFull   = errors.New("org: too many memberships wait for an answer")
	ErrOfferExpired = errors.New("org: the membership that waited has expired")
	ErrOfferTooSoon = errors.New("org: that contact pushed too many membership offers (one a minute)")
)

// Offer is a membership certificate of this node that a contact pushed: it
// waits for the user (Accept or Decline), because an organisation's trusts
// decide which strangers become contacts without the user, and anyone can
// make an organisation key.
type Offer struct {
	Member *consent.OrgRecord   // this node's membership
	Trusts []*consent.OrgRecord // the organisation's trusts pushed with it
	From   peer.ID              // the contact that pushed it
}

// offerFrom picks the membership of this node in a push (the newest live
// one) and the records of its organisation pushed with it; nil if there is
// no such membership.
func (s *Service) offerFrom(recs []*consent.OrgRecord, from peer.ID) *Offer {
	now := s.cfg.Now()
	var o *Offer
	for _, r := range recs {
		if r.Kind == consent.OrgMember && r.Subject == s.self && r.LiveAt(now) && (o == nil || r.Seq > o.Member.Seq) {
			o = &Offer{Member: r, From: from}
		}
	}
	if o == nil {
		return nil
	}
	for _, r := range recs {
		if r.Org != o.Member.Org || r.Group() != 't' {
			continue
		}
		if i := slices.IndexFunc(o.Trusts, func(t *consent.OrgRecord) bool { return t.Subject == r.Subject }); i >= 0 {
			if r.Seq > o.Trusts[i].Seq {
				o.Trusts[i] = r
			}
		} else if len(o.Trusts) < MaxOfferTrusts {
			o.Trusts = append(o.Trusts, r)
		}
	}
	return o
}

// sameOffer reports whether a and b hold the same records.
func sameOffer(a, b *Offer) bool {
	return a.From == b.From && bytes.Equal(a.Member.Wire, b.Member.Wire) &&
		slices.EqualFunc(a.Trusts, b.Trusts, func(x, y *consent.OrgRecord) bool { return bytes.Equal(x.Wire, y.Wire) })
}

// hold keeps a pushed membership for the user's answer. Its caller holds
// s.mu.
func (s *Service) hold(o *Offer) error {
	if !s.cfg.Contacts.Active(o.From) {
		s.refused.WithLabelValues("not_contact").Inc()
		return fmt.Errorf("%w: a membership pushed by %s, who is not a contact", ErrOtherOrg, o.From)
	}
	s.pruneOffers()
	old, ok := s.offer(o.Member.Org)
	switch {
	case ok && sameOffer(old, o):
		return nil
	case ok && old.Member.Seq > o.Member.Seq:
		s.refused.WithLabelValues("stale").Inc()
		return ErrStale
	case !ok && len(s.offers()) >= MaxOffers:
		s.refused.WithLabelValues("offers_full").Inc()
		return ErrOffersFull
	case !s.offerLimiter(o.From).AllowN(s.cfg.Now(), 1):
		// MaxOffers writes at once for each contact, then one a minute,
		// whatever the organisation: a contact that made a fresh
		// organisation (or a new seq) for each push would otherwise
		// write an offer on every push, and the store never reclaims a
		// value written over.
		s.refused.WithLabelValues("rate_limited").Inc()
		return fmt.Errorf("%w (from %s)", ErrOfferTooSoon, o.From)
	}
	wires := [][]byte{o.Member.Wire}
	for _, t := range o.Trusts {
		wires = append(wires, t.Wire)
	}
	body, err := consent.EncodeOrgRecords(wires)
	if err != nil {
		return err
	}
	v := binary.AppendUvarint(nil, uint64(len(o.From)))
	v = append(append(v, o.From...), body...)
	if err := s.cfg.Store.Apply([]schema.Op{{Key: schema.OrgOffer([]byte(o.Member.Org)), Val: v}}, true); err != nil {
		return fmt.Errorf("org: store offer: %w", err)
	}
	s.log.Info("organisation membership offered; it waits for the user (parley org accept)",
		"org", o.Member.Org.String(), "name", o.Member.Name, "remote", o.From.String())
	s.record("peer:"+o.From.String(), audit.OrgOffered, o.Member.Subject, map[string]string{
		"org": o.Member.Org.String(), "name": o.Member.Name, "handle": o.Member.Handle})
	return nil
}

// offerLimiter returns contact p's limiter of offer writes. Its caller
// holds s.mu.
func (s *Service) offerLimiter(p peer.ID) *rate.Limiter {
	if l := s.offerLim[p]; l != nil {
		return l
	}
	if s.offerLim == nil || len(s.offerLim) >= maxOfferPushers {
		s.offerLim = make(map[peer.ID]*rate.Limiter) // only contacts push offers
	}
	l := rate.NewLimiter(rate.Every(offerEvery), MaxOffers)
	s.offerLim[p] = l
	return l
}

func (s *Service) parseOffer(v []byte) (*Offer, error) {
	n, k := binary.Uvarint(v)
	if k <= 0 || uint64(len(v)-k) < n {
		return nil, errors.New("org: damaged offer")
	}
	from, err := peer.IDFromBytes(v[k : k+int(n)])
	if err != nil {
		return nil, fmt.Errorf("org: damaged offer: %w", err)
	}
	recs, errs, err := consent.DecodeOrgRecords(v[k+int(n):])
	if err != nil || len(errs) > 0 {
		return nil, fmt.Errorf("org: damaged offer: %v %v", err, errs)
	}
	o := s.offerFrom(recs, from)
	if o == nil {
		return nil, ErrOfferExpired
	}
	return o, nil
}

// pruneOffers drops the offers that expired (or are damaged), so pushes of
// short-lived memberships do not pile up. Its caller holds s.mu.
func (s *Service) pruneOffers() {
	var ops []schema.Op
	err := s.cfg.Store.ScanFrom(schema.OrgOfferPrefix(), nil, false, func(k, v []byte) bool {
		if _, err := s.parseOffer(v); err != nil {
			ops = append(ops, schema.Op{Key: append([]byte(nil), k...), Delete: true})
		}
		return true
	})
	if err == nil && len(ops) > 0 {
		err = s.cfg.Store.Apply(ops, true)
	}
	if err != nil {
		s.log.Warn("dropping expired organisation offers failed", "err", err)
	}
}

// offer returns the membership of org waiting for the user.
func (s *Service) offer(org peer.ID) (*Offer, bool) {
	v, ok, err := s.cfg.Store.Lookup(schema.OrgOffer([]byte(org)))
	if err != nil || !ok {
		return nil, false
	}
	o, err := s.parseOffer(v)
	if err != nil {
		return nil, false
	}
	return o, true
}

func (s *Service) offers() []*Offer {
	var out []*Offer
	err := s.cfg.Store.ScanFrom(schema.OrgOfferPrefix(), nil, false, func(_, v []byte) bool {
		if o, err := s.parseOffer(v); err == nil {
			out = append(out, o)
		}
		return true
	})
	if err != nil {
		s.log.Error("reading organisation offers failed", "err", err)
	}
	return out
}

// Offers returns the memberships that wait for the user's answer (live
// ones; an expired one is not shown).
func (s *Service) Offers() []*Offer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offers()
}

// Accept makes the membership of org that waited this node's own, with the
// trusts pushed with it, as if the user had handed them to the node; the
// other offers are dropped (a node is in one organisation).
func (s *Service) Accept(ctx context.Context, org peer.ID) (*consent.OrgRecord, error) {
	s.mu.Lock()
	o, ok := s.offer(org)
	s.mu.Unlock()
	if !ok {
		return nil, ErrNoOffer
	}
	if err := s.ingest(ctx, o.Member, ""); err != nil {
		return nil, err
	}
	for _, t := range o.Trusts {
		if err := s.ingest(ctx, t, ""); err != nil && !errors.Is(err, ErrStale) {
			s.log.Warn("a trust pushed with the membership was not kept", "org", org.String(), "err", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var ops []schema.Op
	for _, other := range s.offers() {
		ops = append(ops, schema.Op{Key: schema.OrgOffer([]byte(other.Member.Org)), Delete: true})
	}
	ops = append(ops, schema.Op{Key: schema.OrgOffer([]byte(org)), Delete: true})
	if err := s.cfg.Store.Apply(ops, true); err != nil {
		return o.Member, fmt.Errorf("org: drop offers: %w", err)
	}
	return o.Member, nil
}

// Decline drops the membership of org that waited for the user.
func (s *Service) Decline(org peer.ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok, err := s.cfg.Store.Lookup(schema.OrgOffer([]byte(org)))
	if err != nil {
		return err
	}
	if !ok {
		return ErrNoOffer
	}
	if err := s.cfg.Store.Apply([]schema.Op{{Key: schema.OrgOffer([]byte(org)), Delete: true}}, true); err != nil {
		return fmt.Errorf("org: drop offer: %w", err)
	}
	detail := map[string]string{"org": org.String()}
	if o, err := s.parseOffer(v); err == nil {
		detail["name"] = o.Member.Name
	}
	s.record("human", audit.OrgDecline, s.self, detail)
	return nil
}
