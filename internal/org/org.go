// Package org keeps a node's organisation records and acts on them: the
// node's own membership certificate, the members and trusts of its
// organisation, revocations, and the contacts made through organisation
// trust.
//
// An organisation is a key kept apart from any node key (a file the user
// chooses, see `parley org`): it signs records (consent.OrgRecord) that the
// command line hands to the local node, which keeps them and pushes them to
// the organisation's members over /parley/org/1.
//
// # Wire protocol: /parley/org/1
//
// One frame each way (internal/frame): a one-byte operation, then a CBOR
// array of sealed records (consent.EncodeOrgRecords):
//
//	'p' push    the records, answered by 'a' with no records ('n' when
//	            none of them was taken)
//	'i' intro   no records; answered by 'r' with the node's membership
//	            certificate and its organisation's live trusts
//
// A pushed record is kept when it is about this node's organisation and is
// newer (Seq) than the one it replaces; a revocation of a member of
// another organisation is kept when that member is a contact made through
// that organisation, or when this node's organisation trusts that
// organisation (then it is passed on to this organisation's members, so
// that the member's old certificate gets it approved by none of them); a
// node that takes its own revocation passes it on to its contacts (those
// it met through trust may be no contacts of its organisation's nodes). This node's first membership certificate,
// pushed by a contact (with its organisation's trusts), waits for the
// user (Offers, Accept, Decline; at most MaxOffers): the organisation's
// trusts decide which strangers become contacts without the user, and
// anyone can make an organisation key.
//
// # Trust
//
// A contact request from a peer P is approved without the user when P's
// intro shows a live membership certificate of organisation X, not revoked
// here; this node's organisation Y trusts X (a live trust record of Y
// held here); and X trusts Y (a live trust record of X in P's intro). The
// certificate's scopes are those both trusts name, and it lasts no longer
// than P's membership or either trust. Untrusting X, or X revoking P,
// revokes such contacts at once, as a contact revocation does; so does a
// trust in X replaced by one that no longer covers them (fewer scopes, an
// earlier end): they may ask again.
//
// # Store
//
//	o/r/<org><group><subject>   the newest record of (org, group, subject)
//	o/c/<peer>                  a contact made through organisation trust → org
package org

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/frame"
	"github.com/parley-mesh/parley/internal/lograte"
	"github.com/parley-mesh/parley/internal/serving"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// ProtocolID is the organisation protocol.
const ProtocolID protocol.ID = "/parley/org/1"

// Errors.
var (
	ErrOtherOrg  = errors.New("org: the record is about another organisation")
	ErrNoOrg     = errors.New("org: this node is not a member of an organisation")
	ErrStale     = errors.New("org: a newer record is held")
	ErrNotMember = errors.New("org: not a live member")
	// ErrNotLive is returned for a membership of this node that does not
	// hold on its clock: not valid yet, or expired.
	ErrNotLive = errors.New("org: the membership does not hold on this node's clock")
	// ErrCard is returned by CheckCard for a certificate that is not a
	// live membership of the card's node.
	ErrCard = errors.New("org: the card's membership certificate does not hold")
)

// StaleError is ErrStale with the Seq of the record held, so that the
// organisation's key may sign again after it (a record signed on a machine
// whose clock was ahead holds a Seq from the future).
type StaleError struct{ Held uint64 }

func (e *StaleError) Error() string {
	return fmt.Sprintf("%v (its seq %d is not below the new record's)", ErrStale, e.Held)
}

// Is makes errors.Is(err, ErrStale) hold.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// Store is where records live; internal/store's DB implements it.
type Store interface {
	Lookup(key []byte) ([]byte, bool, error)
	ScanFrom(prefix, start []byte, reverse bool, fn func(key, val []byte) bool) error
	Apply(ops []schema.Op, durable bool) error
}

// Contacts is what the service needs of the contact service.
type Contacts interface {
	// Active reports whether p is an active contact.
	Active(p peer.ID) bool
	// Revoke revokes the contact with p as a revocation of the user does
	// (the audit log names the organisation as its actor).
	Revoke(ctx context.Context, p peer.ID) error
	// ActivePeers lists the active contacts.
	ActivePeers() []peer.ID
	// Requested reports whether this node asked p to be a contact and
	// waits for its answer (p may ask for this node's introduction).
	Requested(p peer.ID) bool
	// Granted returns the scopes and the end of the active contact with
	// p (ok false: not an active contact).
	Granted(p peer.ID) (scopes []string, until time.Time, ok bool)
}

// Config configures a Service.
type Config struct {
	Host     host.Host // required
	Store    Store     // required
	Contacts Contacts  // required
	FindPeer func(ctx context.Context, p peer.ID) (peer.AddrInfo, error)
	Logger   *slog.Logger
	Registry prometheus.Registerer
	Audit    func(audit.Record)
	Now      func() time.Time
}

// Service is one node's organisation records. Safe for concurrent use.
type Service struct {
	cfg  Config
	self peer.ID
	log  *slog.Logger

	mu sync.Mutex // serialises ingest (read, compare, write)

	limMu     sync.Mutex
	limits    map[peer.ID]*rate.Limiter // exchanges a peer may open
	strangers *rate.Limiter             // exchanges all the peers this node does not know may open
	memberSet map[peer.ID]bool          // the organisation's members at membersAt
	membersAt time.Time
	logs      *lograte.Limiter // lines about records peers pushed

	offerLim map[peer.ID]*rate.Limiter // offer writes of each contact (under mu)

	ctx      context.Context // ends with Close
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	notifiee *network.NotifyBundle
	synced   map[peer.ID]*memberSync // what each connected member was passed (under limMu)
	told     map[peer.ID]bool        // revoked members told of it in their connected period (under limMu)
	closed   bool                    // under limMu

	recMu   sync.Mutex
	recGen  uint64               // bumped by every write of a record
	recs    []*consent.OrgRecord // every stored record, parsed, as of recsGen
	recsGen uint64
	recsOK  bool

	refused *prometheus.CounterVec
	auto    *prometheus.CounterVec
}

// New builds the service. It starts nothing.
func New(cfg Config) (*Service, error) {
	if cfg.Host == nil || cfg.Store == nil || cfg.Contacts == nil {
		return nil, errors.New("org: config needs Host, Store and Contacts")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Service{cfg: cfg, self: cfg.Host.ID(), log: cfg.Logger,
		limits: make(map[peer.ID]*rate.Limiter), logs: lograte.New(logsPerMinute),
		strangers: rate.NewLimiter(strangerRate, strangerBurst),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_org_records_refused_total",
			Help: "Organisation records refused, by reason (malformed, forged, other_org, stale, not_contact, rate_limited, too_many, not_valid_yet and expired: a membership of this node its clock does not hold; on node cards also other_peer, expired, revoked).",
		}, []string{"reason"}),
		auto: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_org_auto_approvals_total",
			Help: "Contact requests decided by organisation trust, by result (approved, not_trusted, no_cert, revoked, expired).",
		}, []string{"result"}),
	}
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(s.refused, s.auto)
	}
	return s, nil
}

// Start serves /parley/org/1 and passes a member of this node's
// organisation the organisation's records when it connects, or when it
// starts serving /parley/org/1 (see connected).
func (s *Service) Start() {
	s.ctx, s.cancel = context.WithCancel(context.Background())
	// A member that connected while its organisation service was starting
	// refused the pass: it is passed the records once it serves the
	// protocol.
	if watch, err := serving.Watch(s.ctx, s.cfg.Host, ProtocolID, s.connected); err != nil {
		s.log.Warn("members that connect while they start are passed the organisation's records at their next connection", "err", err)
	} else {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			watch()
		}()
	}
	s.notifiee = &network.NotifyBundle{
		ConnectedF: func(_ network.Network, c network.Conn) { s.connected(c.RemotePeer()) },
		DisconnectedF: func(n network.Network, c network.Conn) {
			if len(n.ConnsToPeer(c.RemotePeer())) == 0 {
				s.gone(c.RemotePeer())
			}
		},
	}
	s.cfg.Host.Network().Notify(s.notifiee)
	s.cfg.Host.SetStreamHandler(ProtocolID, s.handle)
}

// Close stops serving and waits for the records being passed on.
func (s *Service) Close() {
	s.cfg.Host.RemoveStreamHandler(ProtocolID)
	if s.notifiee == nil {
		return
	}
	s.cfg.Host.Network().StopNotify(s.notifiee)
	s.limMu.Lock()
	s.closed = true
	s.limMu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// A member that was away (or runs on a home restored from an older copy)
// missed what was written meanwhile: it is passed the organisation's
// records (syncTo) when it connects. A pass that succeeded is not made
// again in the member's connected period (from its first connection until
// its last one closes) unless a record was written since; a pass that
// failed (the member does not serve /parley/org/1 yet: it connected while
// starting) is made again when it starts serving the protocol, or at its
// next connection.

// memberSync is what one member was passed in its connected period.
type memberSync struct {
	passed  bool   // a pass succeeded in this period
	gen     uint64 // the records' generation (recGen) that pass held
	running bool   // a pass runs
	again   bool   // asked again while it ran
	period  uint64 // bumped when the period ends while a pass runs
}

// connected passes member p the organisation's records: it just connected
// or started serving the protocol. It does nothing when p was passed them
// in its connected period and no record was written since, nor while a
// pass to p runs (then that pass is made again if it did not hold all).
func (s *Service) connected(p peer.ID) {
	if p == s.self {
		return
	}
	if !s.IsMember(p) {
		s.tellRevoked(p)
		return
	}
	s.limMu.Lock()
	defer s.limMu.Unlock()
	if s.closed {
		return
	}
	m := s.synced[p]
	if m == nil {
		if s.synced == nil {
			s.synced = make(map[peer.ID]*memberSync)
		}
		m = &memberSync{}
		s.synced[p] = m
	}
	if m.running {
		m.again = true
		return
	}
	if m.passed && m.gen == s.recordsGen() {
		return
	}
	m.running = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.pass(p, m)
	}()
}

// tellRevoked passes p its revocation when this node holds one of p's
// membership of its organisation: a node restored from a copy of its home
// made before the revocation holds its old membership (and its
// organisation's trusts) again, and would go on approving trusted
// organisations' members in the organisation's name. Once in p's
// connected period, when the pass succeeds.
func (s *Service) tellRevoked(p peer.ID) {
	mine := s.Mine()
	if mine == nil {
		return
	}
	rv := s.get(mine.Org, 'm', p)
	if rv == nil || rv.Kind != consent.OrgRevoke {
		return
	}
	s.limMu.Lock()
	defer s.limMu.Unlock()
	if s.closed || s.told[p] {
		return
	}
	if s.told == nil {
		s.told = make(map[peer.ID]bool)
	}
	s.told[p] = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		err := s.push(s.ctx, p, [][]byte{rv.Wire})
		if err != nil && !errors.Is(err, ErrNotTaken) {
			// Not serving the protocol yet: told when it starts to, or at
			// its next connection.
			s.limMu.Lock()
			delete(s.told, p)
			s.limMu.Unlock()
		}
	}()
}

// pass passes member p the records, again while it was asked to during
// the pass (connected) and what the member holds is not all there is.
func (s *Service) pass(p peer.ID, m *memberSync) {
	for {
		s.limMu.Lock()
		period := m.period
		s.limMu.Unlock()
		gen := s.recordsGen() // before syncTo reads them: a later write passes them again
		ok := s.syncTo(s.ctx, p)
		s.limMu.Lock()
		if ok && m.period == period {
			m.passed, m.gen = true, gen
		}
		again := m.again && !s.closed && !(m.passed && m.gen == s.recordsGen())
		m.again = false
		if !again {
			m.running = false
			s.limMu.Unlock()
			return
		}
		s.limMu.Unlock()
	}
}

// gone ends member p's connected period: its last connection closed.
func (s *Service) gone(p peer.ID) {
	s.limMu.Lock()
	defer s.limMu.Unlock()
	delete(s.told, p)
	m := s.synced[p]
	switch {
	case m == nil:
	case m.running:
		m.passed = false
		m.period++
	default:
		delete(s.synced, p)
	}
}

// recordsGen is the generation of the records held: it moves with every
// write of a record.
func (s *Service) recordsGen() uint64 {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	return s.recGen
}

// syncTo passes member p every record of this node's organisation and
// the revocations of trusted organisations' members it holds: a member
// that was away (or runs on a home restored from an older copy) missed
// the revocations and untrusts pushed meanwhile, and would go on
// approving the peers they cut off. Records it holds already cost it a
// signature check each.
// It reports whether p took them (or refused them all: not a member in its
// eyes).
func (s *Service) syncTo(ctx context.Context, p peer.ID) bool {
	mine := s.Mine()
	if mine == nil {
		return true
	}
	all := s.all()
	trusted := map[peer.ID]bool{} // organisations this one holds a trust in
	for _, r := range all {
		if r.Org == mine.Org && r.Kind == consent.OrgTrust {
			trusted[r.Subject] = true
		}
	}
	var wires [][]byte
	for _, r := range all {
		if r.Org == mine.Org || (r.Kind == consent.OrgRevoke && trusted[r.Org]) {
			wires = append(wires, r.Wire)
		}
	}
	for len(wires) > 0 {
		n := min(len(wires), consent.MaxOrgRecords)
		if err := s.push(ctx, p, wires[:n]); err != nil && !errors.Is(err, ErrNotTaken) {
			s.log.Debug("organisation records not passed to a member", "remote", p.String(), "err", err)
			return false
		}
		wires = wires[n:]
	}
	return true
}

func recKey(org peer.ID, group byte, subj peer.ID) []byte {
	return schema.OrgRecord([]byte(org), group, []byte(subj))
}

func tagKey(p peer.ID) []byte { return schema.OrgContact([]byte(p)) }

func earliest(ts ...time.Time) time.Time {
	out := ts[0]
	for _, t := range ts[1:] {
		if t.Before(out) {
			out = t
		}
	}
	return out
}

// all returns every stored record (shared: read only). The records are
// parsed and their signatures checked once for each write of a record
// (ingest bumps recGen): membership is asked for every contact message
// and relay request, strangers' too.
func (s *Service) all() []*consent.OrgRecord {
	s.recMu.Lock()
	if s.recsOK && s.recsGen == s.recGen {
		out := s.recs
		s.recMu.Unlock()
		return out
	}
	gen := s.recGen
	s.recMu.Unlock()
	out := s.scan()
	s.recMu.Lock()
	if gen == s.recGen {
		s.recs, s.recsGen, s.recsOK = out, gen, true
	}
	s.recMu.Unlock()
	return out
}

// written notes that r was written (ok) or may have been: the records
// held in memory take r in place of the one it replaces, so that a push
// of many records is not read and checked again for each.
func (s *Service) written(r *consent.OrgRecord, ok bool) {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	fresh := ok && s.recsOK && s.recsGen == s.recGen
	s.recGen++
	if !fresh {
		return
	}
	recs := make([]*consent.OrgRecord, 0, len(s.recs)+1)
	for _, o := range s.recs {
		if o.Org != r.Org || o.Group() != r.Group() || o.Subject != r.Subject {
			recs = append(recs, o)
		}
	}
	s.recs, s.recsGen = append(recs, r), s.recGen
}

// scan reads and checks every stored record.
func (s *Service) scan() []*consent.OrgRecord {
	var out []*consent.OrgRecord
	err := s.cfg.Store.ScanFrom(schema.OrgRecordPrefix(), nil, false, func(_, v []byte) bool {
		r, err := consent.ParseOrgRecord(v)
		if err != nil {
			s.log.Error("a stored organisation record is damaged", "err", err)
			return true
		}
		out = append(out, r)
		return true
	})
	if err != nil {
		s.log.Error("reading organisation records failed", "err", err)
	}
	return out
}

func (s *Service) get(org peer.ID, group byte, subj peer.ID) *consent.OrgRecord {
	v, ok, err := s.cfg.Store.Lookup(recKey(org, group, subj))
	if err != nil || !ok {
		return nil
	}
	r, err := consent.ParseOrgRecord(v)
	if err != nil {
		return nil
	}
	return r
}

// Mine returns this node's live membership certificate (nil: none).
func (s *Service) Mine() *consent.OrgRecord {
	now := s.cfg.Now()
	var best *consent.OrgRecord
	// The records are parsed once for each write (all): the name service
	// asks every few seconds.
	for _, r := range s.all() {
		if r.Kind == consent.OrgMember && r.Subject == s.self && r.LiveAt(now) && (best == nil || r.Seq > best.Seq) {
			best = r
		}
	}
	return best
}

// Members returns the live members of this node's organisation.
func (s *Service) Members() []*consent.OrgRecord {
	mine := s.Mine()
	if mine == nil {
		return nil
	}
	now := s.cfg.Now()
	var out []*consent.OrgRecord
	for _, r := range s.all() {
		if r.Org == mine.Org && r.Kind == consent.OrgMember && r.LiveAt(now) {
			out = append(out, r)
		}
	}
	return out
}

// IsMember reports whether p is a live member of this node's organisation.
func (s *Service) IsMember(p peer.ID) bool {
	return slices.ContainsFunc(s.Members(), func(r *consent.OrgRecord) bool { return r.Subject == p })
}

// Trusts returns this node's organisation's trust and untrust records.
func (s *Service) Trusts() []*consent.OrgRecord {
	mine := s.Mine()
	if mine == nil {
		return nil
	}
	var out []*consent.OrgRecord
	for _, r := range s.all() {
		if r.Org == mine.Org && r.Group() == 't' {
			out = append(out, r)
		}
	}
	return out
}

// forward passes a revocation of this organisation's member, pushed to
// this node, on to its contacts (members of other organisations may have
// met the member through this one).
func (s *Service) forward(ctx context.Context, r *consent.OrgRecord) {
	for _, p := range s.cfg.Contacts.ActivePeers() {
		if p == r.Subject {
			continue
		}
		if err := s.push(ctx, p, [][]byte{r.Wire}); err != nil {
			s.log.Debug("revocation not forwarded", "remote", p.String(), "err", err)
		}
	}
}

// notLive returns an error (ErrNotLive, counted) when r is a membership
// of this node that does not hold on this node's clock, saying when it
// holds and what the clock says: the machine that signed it, or this
// one, may have a clock hours off.
func (s *Service) notLive(r *consent.OrgRecord) error {
	now := s.cfg.Now()
	if r.Kind != consent.OrgMember || r.Subject != s.self || r.LiveAt(now) {
		return nil
	}
	why := "expired"
	if now.Before(r.NotBefore) {
		why = "not_valid_yet"
	}
	s.refused.WithLabelValues(why).Inc()
	return fmt.Errorf("%w: this node's membership of %s is valid from %s to %s, and this node's clock says %s (is a clock wrong?)",
		ErrNotLive, r.Name, r.NotBefore.UTC().Format(time.RFC3339), r.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
}

// MaxForeignRevocations bounds the revocations of one trusted
// organisation's members that a node keeps: that organisation signs them,
// and may sign without end.
const MaxForeignRevocations = 4096

// ErrTooMany is returned for a record over MaxForeignRevocations.
var ErrTooMany = errors.New("org: too many records of that organisation")

// countOf counts the records of org held.
func (s *Service) countOf(org peer.ID) int {
	n := 0
	for _, r := range s.all() {
		if r.Org == org {
			n++
		}
	}
	return n
}

// forwardToMembers passes a revocation of a member of a trusted
// organisation on to this node's organisation's members, but for the peer
// that pushed it.
func (s *Service) forwardToMembers(ctx context.Context, r *consent.OrgRecord, from peer.ID) {
	for _, m := range s.Members() {
		if p := m.Subject; p != s.self && p != from && p != r.Subject {
			if err := s.push(ctx, p, [][]byte{r.Wire}); err != nil {
				s.log.Debug("revocation not forwarded", "remote", p.String(), "err", err)
			}
		}
	}
}

// trusts reports whether organisation org holds a trust record (live or
// not) in organisation other.
func (s *Service) trusts(org, other peer.ID) bool {
	t := s.get(org, 't', other)
	return t != nil && t.Kind == consent.OrgTrust
}

// ingest keeps r if it is for this node and newer than what it replaces,
// and acts on it. from is the pushing peer ("" for the local user).
func (s *Service) ingest(ctx context.Context, r *consent.OrgRecord, from peer.ID) error {
	s.mu.Lock()
	mine := s.Mine()
	switch {
	case mine != nil && r.Org == mine.Org:
	case mine == nil && r.Kind == consent.OrgMember && r.Subject == s.self && from == "":
		// This node's first membership comes from its user (pushed by
		// a contact, it waits for the user: hold).
	case r.Kind == consent.OrgRevoke && s.taggedWith(r.Subject) == r.Org:
		// A member of another organisation, met through it, is revoked.
	case r.Kind == consent.OrgRevoke && mine != nil && s.trusts(mine.Org, r.Org):
		// A member of an organisation this one trusts is revoked: its
		// old certificate must not get it approved (decide, CheckCard).
		// Another organisation's records are bounded.
		if s.get(r.Org, r.Group(), r.Subject) == nil && s.countOf(r.Org) >= MaxForeignRevocations {
			s.mu.Unlock()
			s.refused.WithLabelValues("too_many").Inc()
			return fmt.Errorf("%w: %d revocations of %s's members held", ErrTooMany, MaxForeignRevocations, r.Org)
		}
	default:
		s.mu.Unlock()
		s.refused.WithLabelValues("other_org").Inc()
		return ErrOtherOrg
	}
	if old := s.get(r.Org, r.Group(), r.Subject); old != nil && old.Seq >= r.Seq {
		s.mu.Unlock()
		if bytes.Equal(old.Wire, r.Wire) {
			return nil
		}
		s.refused.WithLabelValues("stale").Inc()
		return &StaleError{Held: old.Seq}
	}
	err := s.cfg.Store.Apply([]schema.Op{{Key: recKey(r.Org, r.Group(), r.Subject), Val: r.Wire}}, true)
	s.written(r, err == nil)
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("org: store record: %w", err)
	}
	s.log.Info("organisation record kept", "org", r.Org.String(), "kind", string(r.Kind), "subject", r.Subject.String())
	s.act(ctx, r, from)
	return nil
}

// act applies a new record's effects on contacts and records it.
func (s *Service) act(ctx context.Context, r *consent.OrgRecord, from peer.ID) {
	actor := "human"
	if from != "" {
		actor = "peer:" + from.String()
	}
	detail := map[string]string{"org": r.Org.String(), "name": r.Name}
	switch r.Kind {
	case consent.OrgMember:
		detail["handle"] = r.Handle
		detail["expires"] = r.NotAfter.UTC().Format(time.RFC3339)
		s.record(actor, audit.OrgAdd, r.Subject, detail)
	case consent.OrgRevoke:
		s.record(actor, audit.OrgRemove, r.Subject, detail)
		if mine := s.Mine(); from != "" && mine != nil && mine.Org == r.Org {
			s.forward(ctx, r)
		} else if from != "" && r.Subject == s.self {
			// This node's own revocation (it is no member now, so the
			// case above does not hold): the members of other
			// organisations it met through trust hear of it from it, as
			// none of its organisation's nodes may be their contact.
			s.forward(ctx, r)
		} else if from != "" && mine != nil && s.trusts(mine.Org, r.Org) && !s.IsMember(from) {
			// The member told of it from outside tells the others (any
			// of them may be asked by the revoked member); they do not
			// tell each other again.
			s.forwardToMembers(ctx, r, from)
		}
		if s.taggedWith(r.Subject) == r.Org {
			s.revokeContact(ctx, r.Subject, "its organisation revoked its membership")
		}
	case consent.OrgTrust:
		detail["scopes"] = fmt.Sprint(r.Scopes)
		detail["expires"] = r.NotAfter.UTC().Format(time.RFC3339)
		s.record(actor, audit.OrgTrust, r.Subject, detail)
		// A trust replaced by a narrower one (fewer scopes, an earlier
		// end, not valid yet) ends the contacts made through it that it
		// no longer covers: they may ask again.
		now := s.cfg.Now()
		for _, p := range s.taggedPeers(r.Subject) {
			scopes, until, ok := s.cfg.Contacts.Granted(p)
			if !ok {
				continue
			}
			wider := slices.ContainsFunc(scopes, func(sc string) bool { return !slices.Contains(r.Scopes, sc) })
			// (A minute's slack: the contact's end was reckoned from the
			// trust's a moment before the approval.)
			if wider || until.After(r.NotAfter.Add(time.Minute)) || !r.LiveAt(now) {
				s.revokeContact(ctx, p, "the organisation trust was narrowed")
			}
		}
	case consent.OrgUntrust:
		s.record(actor, audit.OrgUntrust, r.Subject, detail)
		for _, p := range s.taggedPeers(r.Subject) {
			s.revokeContact(ctx, p, "the organisation trust was withdrawn")
		}
	}
}

func (s *Service) record(actor, action string, subj peer.ID, detail map[string]string) {
	if s.cfg.Audit != nil {
		s.cfg.Audit(audit.Record{Actor: actor, Action: action, Subject: subj.String(), Detail: detail})
	}
}

func (s *Service) revokeContact(ctx context.Context, p peer.ID, why string) {
	if err := s.cfg.Contacts.Revoke(ctx, p); err != nil {
		s.log.Warn("revoking a contact made through organisation trust failed", "remote", p.String(), "err", err)
	} else {
		s.log.Info("contact made through organisation trust revoked", "remote", p.String(), "why", why)
	}
	if err := s.cfg.Store.Apply([]schema.Op{{Key: tagKey(p), Delete: true}}, false); err != nil {
		s.log.Warn("dropping a contact's organisation tag failed", "remote", p.String(), "err", err)
	}
}

// taggedWith returns the organisation p became a contact through ("" none).
func (s *Service) taggedWith(p peer.ID) peer.ID {
	v, ok, err := s.cfg.Store.Lookup(tagKey(p))
	if err != nil || !ok {
		return ""
	}
	id, err := peer.IDFromBytes(v)
	if err != nil {
		return ""
	}
	return id
}

func (s *Service) taggedPeers(org peer.ID) []peer.ID {
	var out []peer.ID
	_ = s.cfg.Store.ScanFrom(schema.OrgContactPrefix(), nil, false, func(k, v []byte) bool {
		if bytes.Equal(v, []byte(org)) && len(k) > 5 {
			if p, err := peer.IDFromBytes(k[5:]); err == nil {
				out = append(out, p)
			}
		}
		return true
	})
	return out
}

// Publish takes a record signed by the organisation's key from the local
// user, keeps it and pushes it to the organisation's members (and, for a
// revocation, to the contacts made through this organisation). It returns
// how many peers took it.
func (s *Service) Publish(ctx context.Context, wire []byte) (*consent.OrgRecord, int, error) {
	r, err := consent.ParseOrgRecord(wire)
	if err != nil {
		s.refused.WithLabelValues("malformed").Inc()
		return nil, 0, err
	}
	if err := s.notLive(r); err != nil {
		return r, 0, err
	}
	if err := s.ingest(ctx, r, ""); err != nil {
		return r, 0, err
	}
	targets := map[peer.ID]bool{}
	for _, m := range s.Members() {
		targets[m.Subject] = true
	}
	if r.Kind == consent.OrgMember || r.Kind == consent.OrgRevoke {
		targets[r.Subject] = true
	}
	if r.Kind == consent.OrgRevoke {
		// Members of trusting organisations who met the revoked member
		// through this organisation must hear of it: every contact of
		// this node gets it (membership is no secret).
		for _, p := range s.cfg.Contacts.ActivePeers() {
			targets[p] = true
		}
	}
	delete(targets, s.self)
	// A new member gets the organisation's trusts and its own certificate.
	push := [][]byte{r.Wire}
	if r.Kind == consent.OrgMember {
		for _, t := range s.Trusts() {
			push = append(push, t.Wire)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for p := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.push(ctx, p, push); err != nil {
				s.log.Info("organisation record not delivered", "remote", p.String(), "err", err)
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return r, n, nil
}

const (
	opPush  = 'p'
	opAck   = 'a'
	opNone  = 'n' // a push of which nothing was taken
	opIntro = 'i'
	opReply = 'r'
)

// ErrNotTaken is returned by a push of which the peer took nothing: the
// records are about an organisation it is not in, or a membership was
// pushed by a node that is not its contact.
var ErrNotTaken = errors.New("org: the peer took none of the records (not in that organisation, or not a contact of this node)")

const maxFrame = 1 << 20

func (s *Service) exchange(ctx context.Context, p peer.ID, op byte, recs [][]byte) (byte, []*consent.OrgRecord, error) {
	return s.exchangeLimit(ctx, p, op, recs, maxFrame)
}

// exchangeLimit is exchange reading an answer of at most limit bytes.
func (s *Service) exchangeLimit(ctx context.Context, p peer.ID, op byte, recs [][]byte, limit int) (byte, []*consent.OrgRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	h := s.cfg.Host
	if h.Network().Connectedness(p) != network.Connected && h.Network().Connectedness(p) != network.Limited {
		ai := h.Peerstore().PeerInfo(p)
		if len(ai.Addrs) == 0 && s.cfg.FindPeer != nil {
			if found, err := s.cfg.FindPeer(ctx, p); err == nil {
				ai = found
			}
		}
		if err := h.Connect(ctx, ai); err != nil {
			return 0, nil, err
		}
	}
	st, err := h.NewStream(network.WithAllowLimitedConn(ctx, "org"), p, ProtocolID)
	if err != nil {
		return 0, nil, err
	}
	defer st.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = st.SetDeadline(dl)
	}
	body, err := consent.EncodeOrgRecords(recs)
	if err != nil {
		return 0, nil, err
	}
	if err := frame.Write(st, append([]byte{op}, body...)); err != nil {
		return 0, nil, err
	}
	if err := st.CloseWrite(); err != nil {
		return 0, nil, err
	}
	ans, err := frame.Read(io.LimitReader(st, int64(limit)+16), limit)
	if err != nil {
		return 0, nil, err
	}
	if len(ans) < 1 {
		return 0, nil, fmt.Errorf("org: empty answer from %s", p)
	}
	got, _, err := consent.DecodeOrgRecords(ans[1:])
	return ans[0], got, err
}

func (s *Service) push(ctx context.Context, p peer.ID, recs [][]byte) error {
	op, _, err := s.exchange(ctx, p, opPush, recs)
	if err != nil {
		return err
	}
	switch op {
	case opAck:
		return nil
	case opNone:
		return fmt.Errorf("%w: %s", ErrNotTaken, p)
	}
	return fmt.Errorf("org: %s answered %q", p, op)
}

// Limits on what peers may send.
const (
	// exchangeRate and exchangeBurst bound the exchanges one peer opens.
	exchangeRate  = 2 // a second
	exchangeBurst = 32
	// strangerRate and strangerBurst bound the exchanges that peers this
	// node does not know open, all of them together.
	strangerRate  = 1 // a second
	strangerBurst = 8
	// strangerFrame bounds what such a peer may push at once.
	strangerFrame = 16 << 10
	// logsPerMinute bounds the lines about records peers pushed.
	logsPerMinute = 20
)

// known reports whether p is a peer this node deals with for its
// organisation: an active contact, or a member of its organisation.
func (s *Service) known(p peer.ID) bool {
	if s.cfg.Contacts.Active(p) {
		return true
	}
	now := s.cfg.Now()
	s.limMu.Lock()
	fresh := s.memberSet != nil && now.Sub(s.membersAt) < 5*time.Second
	set := s.memberSet
	s.limMu.Unlock()
	if !fresh {
		set = map[peer.ID]bool{}
		for _, r := range s.Members() {
			set[r.Subject] = true
		}
		s.limMu.Lock()
		s.memberSet, s.membersAt = set, now
		s.limMu.Unlock()
	}
	return set[p]
}

// allow reports whether p may open one more exchange now.
func (s *Service) allow(p peer.ID) bool {
	s.limMu.Lock()
	defer s.limMu.Unlock()
	l := s.limits[p]
	if l == nil {
		if len(s.limits) >= 4096 {
			clear(s.limits)
		}
		l = rate.NewLimiter(exchangeRate, exchangeBurst)
		s.limits[p] = l
	}
	return l.Allow()
}

// handle serves ProtocolID. Records are signed by their organisation, and
// only this node's organisation's (and revocations of members met through
// another) are kept, whoever pushes them: the node that publishes may be
// a contact no longer. Peers this node does not know (not contacts, not
// members) share a small budget of exchanges and push at most
// strangerFrame at once, so they cannot make it check signatures without
// end. Its introduction (membership and trusts) goes to contacts,
// members, and nodes it asked to be contacts (which decide by
// organisation trust); a stranger asking for it is refused (not_contact).
func (s *Service) handle(st network.Stream) {
	defer st.Close()
	remote := st.Conn().RemotePeer()
	known := s.known(remote)
	// A node this node asked to be a contact asks for its introduction:
	// it is not held to the strangers' budget.
	requested := !known && s.cfg.Contacts.Requested(remote)
	limit := maxFrame
	if !known {
		if !requested && !s.strangers.Allow() {
			s.refused.WithLabelValues("rate_limited").Inc()
			_ = st.Reset()
			return
		}
		limit = strangerFrame
	}
	if !s.allow(remote) {
		s.refused.WithLabelValues("rate_limited").Inc()
		_ = st.Reset()
		return
	}
	_ = st.SetDeadline(time.Now().Add(20 * time.Second))
	b, err := frame.Read(io.LimitReader(st, int64(limit)+16), limit)
	if err != nil || len(b) < 1 {
		_ = st.Reset()
		return
	}
	recs, errs, err := consent.DecodeOrgRecords(b[1:])
	if err != nil {
		s.refused.WithLabelValues("malformed").Inc()
		_ = st.Reset()
		return
	}
	for range errs {
		s.refused.WithLabelValues("forged").Inc()
	}
	var reply []byte
	switch b[0] {
	case opPush:
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		// took: a record pushed is held here now (kept, held already or
		// newer, or waiting for the user); the pusher counts only those. A
		// push of no records at all is taken.
		took := len(recs) == 0 && len(errs) == 0
		// A membership of this node that does not hold on its clock is
		// refused as such (not as another organisation's), and does not
		// take the place of the one that holds.
		recs = slices.DeleteFunc(recs, func(r *consent.OrgRecord) bool {
			err := s.notLive(r)
			if err != nil {
				s.logs.Log(s.log, slog.LevelWarn, "pushed organisation membership refused", "remote", remote.String(), "err", err)
			}
			return err != nil
		})
		if s.Mine() == nil {
			// A first membership waits for the user, with the trusts
			// pushed with it; the rest is taken as usual.
			if o := s.offerFrom(recs, remote); o != nil {
				s.mu.Lock()
				if err := s.hold(o); err != nil {
					s.logs.Log(s.log, slog.LevelInfo, "pushed organisation membership refused", "remote", remote.String(), "err", err)
				} else {
					took = true
				}
				s.mu.Unlock()
				recs = slices.DeleteFunc(recs, func(r *consent.OrgRecord) bool { return r.Org == o.Member.Org })
			}
		}
		for _, r := range recs {
			err := s.ingest(ctx, r, remote)
			if err == nil || errors.Is(err, ErrStale) {
				took = true
			} else {
				s.logs.Log(s.log, slog.LevelInfo, "pushed organisation record refused", "remote", remote.String(), "err", err)
			}
		}
		cancel()
		op := byte(opAck)
		if !took {
			op = opNone
		}
		body, _ := consent.EncodeOrgRecords(nil)
		reply = append([]byte{op}, body...)
	case opIntro:
		if !known && !requested {
			s.refused.WithLabelValues("not_contact").Inc()
			_ = st.Reset()
			return
		}
		body, err := consent.EncodeOrgRecords(s.introRecords())
		if err != nil {
			_ = st.Reset()
			return
		}
		reply = append([]byte{opReply}, body...)
	default:
		_ = st.Reset()
		return
	}
	if err := frame.Write(st, reply); err != nil {
		_ = st.Reset()
		return
	}
	_ = st.CloseWrite()
}

// introRecords are this node's membership and its organisation's live
// trusts.
func (s *Service) introRecords() [][]byte {
	mine := s.Mine()
	if mine == nil {
		return nil
	}
	out := [][]byte{mine.Wire}
	now := s.cfg.Now()
	for _, t := range s.Trusts() {
		if t.LiveAt(now) {
			out = append(out, t.Wire)
		}
	}
	return out
}

// Decision is the outcome of AutoApprove.
type Decision struct {
	OK     bool
	Org    peer.ID // the requester's organisation
	Scopes []string
	Until  time.Time
	Why    string
}

// AutoApprove decides whether p's contact request is approved by
// organisation trust (see the package documentation).
func (s *Service) AutoApprove(ctx context.Context, p peer.ID) Decision {
	d := s.decide(ctx, p)
	res := "approved"
	if !d.OK {
		res = d.Why
	}
	s.auto.WithLabelValues(res).Inc()
	return d
}

func (s *Service) decide(ctx context.Context, p peer.ID) Decision {
	mine := s.Mine()
	if mine == nil {
		return Decision{Why: "not_trusted"}
	}
	now := s.cfg.Now()
	// This node's organisation's trusts, by trusted organisation.
	ours := map[peer.ID]*consent.OrgRecord{}
	for _, t := range s.Trusts() {
		ours[t.Subject] = t
	}
	if len(ours) == 0 {
		return Decision{Why: "not_trusted"}
	}
	// A requester this node does not know (anyone with a fresh key can
	// ask) is read as strangers' pushes are: at most strangerFrame.
	limit := maxFrame
	if !s.known(p) {
		limit = strangerFrame
	}
	op, recs, err := s.exchangeLimit(ctx, p, opIntro, nil, limit)
	if err != nil || op != opReply {
		return Decision{Why: "no_cert"}
	}
	var cert *consent.OrgRecord
	// The requester's organisations' trusts in this node's organisation
	// (an introduction holds every live trust of its organisation, one
	// for each organisation it trusts).
	theirs := map[peer.ID]*consent.OrgRecord{}
	for _, r := range recs {
		switch {
		case r.Kind == consent.OrgMember && r.Subject == p:
			cert = r
		case r.Kind == consent.OrgTrust && r.Subject == mine.Org:
			if old := theirs[r.Org]; old == nil || r.Seq > old.Seq {
				theirs[r.Org] = r
			}
		}
	}
	if cert == nil {
		return Decision{Why: "no_cert"}
	}
	if !cert.LiveAt(now) {
		return Decision{Why: "expired"}
	}
	if rv := s.get(cert.Org, 'm', p); rv != nil && rv.Kind == consent.OrgRevoke && rv.Seq >= cert.Seq {
		return Decision{Why: "revoked"}
	}
	t := ours[cert.Org]
	if t == nil || t.Kind != consent.OrgTrust || !t.LiveAt(now) {
		return Decision{Why: "not_trusted"}
	}
	back := theirs[cert.Org]
	if back == nil || back.Subject != mine.Org || !back.LiveAt(now) {
		return Decision{Why: "not_trusted"}
	}
	var scopes []string
	for _, sc := range t.Scopes {
		if slices.Contains(back.Scopes, sc) {
			scopes = append(scopes, sc)
		}
	}
	if len(scopes) == 0 {
		return Decision{Why: "not_trusted"}
	}
	until := earliest(cert.NotAfter, t.NotAfter, back.NotAfter, mine.NotAfter)
	return Decision{OK: true, Org: cert.Org, Scopes: scopes, Until: until}
}

// Tag notes that p became a contact through organisation org.
func (s *Service) Tag(p, org peer.ID) error {
	return s.cfg.Store.Apply([]schema.Op{{Key: tagKey(p), Val: []byte(org)}}, false)
}

// Untag forgets that p became a contact through an organisation (the
// user decided about the contact since).
func (s *Service) Untag(p peer.ID) error {
	if s.taggedWith(p) == "" {
		return nil
	}
	return s.cfg.Store.Apply([]schema.Op{{Key: tagKey(p), Delete: true}}, false)
}

// TaggedWith returns the organisation p became a contact through ("" none).
func (s *Service) TaggedWith(p peer.ID) peer.ID { return s.taggedWith(p) }

// CheckCard checks the membership certificate that p's node card shows:
// a member record, signed by its organisation, for p, live now and not
// revoked by a newer record this node holds. A refusal is counted in
// parley_org_records_refused_total (forged, malformed, other_peer,
// expired, revoked).
func (s *Service) CheckCard(p peer.ID, wire []byte) (*consent.OrgRecord, error) {
	r, err := consent.ParseOrgRecord(wire)
	switch {
	case err != nil && errors.Is(err, identity.ErrBadSignature):
		s.refused.WithLabelValues("forged").Inc()
		return nil, fmt.Errorf("org: the certificate on %s's card: %w", p, err)
	case err != nil:
		s.refused.WithLabelValues("malformed").Inc()
		return nil, fmt.Errorf("org: the certificate on %s's card: %w", p, err)
	case r.Kind != consent.OrgMember:
		s.refused.WithLabelValues("malformed").Inc()
		return nil, fmt.Errorf("%w: the record on %s's card is a %s, not a membership", ErrCard, p, r.Kind)
	case r.Subject != p:
		s.refused.WithLabelValues("other_peer").Inc()
		return nil, fmt.Errorf("%w: %s's card shows the membership of %s", ErrCard, p, r.Subject)
	case !r.LiveAt(s.cfg.Now()):
		s.refused.WithLabelValues("expired").Inc()
		return nil, fmt.Errorf("%w: %s's membership of %s is valid from %s to %s", ErrCard, p, r.Name,
			r.NotBefore.UTC().Format(time.RFC3339), r.NotAfter.UTC().Format(time.RFC3339))
	}
	s.mu.Lock()
	newer := s.get(r.Org, 'm', p)
	s.mu.Unlock()
	if newer != nil && newer.Kind == consent.OrgRevoke && newer.Seq > r.Seq {
		s.refused.WithLabelValues("revoked").Inc()
		return nil, fmt.Errorf("%w: %s's membership of %s is revoked", ErrCard, p, r.Name)
	}
	return r, nil
}
