package agents

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"

	"github.com/parley-mesh/parley/discovery"
)

// Presence timing.
const (
	// sendTimeout bounds one presence message: dial, stream, write.
	sendTimeout = 10 * time.Second
	// readTimeout bounds the wait for the next frame on a presence stream.
	readTimeout = 30 * time.Second
	// probeTimeout bounds the dial that checks whether a contact whose
	// connection dropped is still there.
	probeTimeout = 5 * time.Second
)

// errNotSealed is a send's error when the presence message could not be
// sealed.
var errNotSealed = errors.New("presence not sealed")

// outState is what this node sent one contact.
type outState struct {
	last    time.Time // when the last message was sent (or tried)
	version uint64    // s.version it carried
	// force sends at once (a new contact, a new connection, a contact that
	// starts serving presence), from retry on: a forced send that failed
	// while the contact stays connected goes again after wait, which
	// doubles from MinInterval up to Heartbeat.
	force   bool
	retry   time.Time
	wait    time.Duration
	sending bool
}

// remoteState is what this node last heard from one contact.
type remoteState struct {
	heard   time.Time // when the last message was taken
	offline bool      // the contact dropped and could not be dialled
	agents  []discovery.AgentState
}

// presenceLoop sends presence to contacts: to new and reconnected ones at
// once, on change (at most once per MinInterval) and every Heartbeat. It
// also forgets contacts that fell silent.
func (s *Service) presenceLoop() {
	t := time.NewTicker(s.cfg.MinInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.presKick:
		case <-t.C:
		}
		s.presenceRound(s.ctx)
		s.forgetSilent()
	}
}

// presenceRound sends the current presence to every contact it is due to.
func (s *Service) presenceRound(ctx context.Context) {
	contacts := s.cfg.Contacts.Active()
	now := s.now()
	s.mu.Lock()
	version := s.version
	s.mu.Unlock()

	var due []peer.ID
	forced := make(map[peer.ID]bool)
	s.outMu.Lock()
	active := make(map[peer.ID]bool, len(contacts))
	for _, c := range contacts {
		if c.Peer == s.self || !c.Presence {
			continue
		}
		active[c.Peer] = true
		o := s.out[c.Peer]
		if o == nil {
			o = &outState{force: true}
			s.out[c.Peer] = o
		}
		if o.sending {
			continue
		}
		changed := o.version < version && now.Sub(o.last) >= s.cfg.MinInterval
		force := o.force && !now.Before(o.retry)
		if force || changed || now.Sub(o.last) >= s.cfg.Heartbeat {
			due = append(due, c.Peer)
			o.sending = true
			// Taken: a force that comes during the send (the contact
			// connects again) sends again after it.
			forced[c.Peer], o.force = o.force, false
		}
	}
	for p := range s.out {
		if !active[p] {
			delete(s.out, p)
		}
	}
	s.outMu.Unlock()
	if len(due) == 0 {
		return
	}

	wire, version, err := s.sealPresence(now)
	if err != nil {
		// It cannot happen with the agents a registration lets in
		// (presenceFits): logged, and the version is not taken as sent.
		s.log.Error("presence not sealed", "err", err)
	}
	// Sends run on their own: a contact that does not answer holds up no
	// other (its sending flag keeps it out of later rounds meanwhile).
	for _, p := range due {
		s.spawn(func() {
			var err error
			if wire == nil {
				err = errNotSealed
			} else if err = s.cfg.Contacts.Allowed(p); err == nil {
				err = s.sendPresence(ctx, p, wire)
			}
			s.sent(p, version, now, forced[p], err)
		})
	}
}

// sent records a send (forced: it was made at once, for a new contact or
// connection). A failed one is not retried before the contact connects
// again, starts serving presence, or the next heartbeat; but a forced one
// to a contact still connected (it may be starting: its agent service
// not up yet) stays due, after a wait that doubles.
func (s *Service) sent(p peer.ID, version uint64, at time.Time, forced bool, err error) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	o := s.out[p]
	if o != nil {
		o.sending, o.last = false, at
		if !errors.Is(err, errNotSealed) {
			// A message that was never made carried no version.
			o.version = version
		}
		if err == nil {
			o.wait = 0
		} else if forced && !o.force && s.connectedTo(p) {
			o.wait = min(max(2*o.wait, s.cfg.MinInterval), s.cfg.Heartbeat)
			o.force, o.retry = true, at.Add(o.wait)
		}
		if o.force {
			kick(s.presKick)
		}
	}
	if err == nil {
		s.m.sent.WithLabelValues("ok").Inc()
		return
	}
	s.m.sent.WithLabelValues("error").Inc()
	if s.ctx.Err() == nil {
		s.log.Debug("presence not sent", "remote", p.String(), "err", err)
	}
}

// connectedTo reports whether p is connected, directly or through a relay.
func (s *Service) connectedTo(p peer.ID) bool {
	c := s.cfg.Host.Network().Connectedness(p)
	return c == network.Connected || c == network.Limited
}

// presenceFits are the ever smaller forms presence takes when the agents'
// full states do not fit in one message (discovery.MaxPresenceWire): each
// agent's working_on clipped to wo characters and its capabilities to
// caps, the same for every agent. Every agent's name, state and role stay
// in all of them: at most 64 agents of a 64-byte name and a 64-byte role
// take some 12 KiB, so the last form always fits and every agent stays
// visible to contacts.
var presenceFits = []struct{ wo, caps int }{
	{discovery.MaxWorkingOn, discovery.MaxCapabilities},
	{200, discovery.MaxCapabilities},
	{200, 8},
	{80, 8},
	{80, 0},
	{0, 0},
}

// sealPresence signs the current state of every live local agent. When
// the full states pass the size of one message, what each agent works on
// and its capabilities are clipped (presenceFits) rather than nothing sent.
func (s *Service) sealPresence(now time.Time) ([]byte, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	as := s.reg.list(now)
	p := &discovery.Presence{Peer: s.self, Seq: s.nextSeq(now), Time: now.UnixMilli()}
	var (
		wire []byte
		err  error
	)
	for i, fit := range presenceFits {
		p.Agents = p.Agents[:0]
		for _, a := range as {
			st := a.state()
			st.WorkingOn = clipRunes(st.WorkingOn, fit.wo)
			if len(st.Capabilities) > fit.caps {
				st.Capabilities = st.Capabilities[:fit.caps]
			}
			p.Agents = append(p.Agents, st)
		}
		wire, err = discovery.SealPresence(s.cfg.Key, p)
		if !errors.Is(err, discovery.ErrTooLarge) {
			break
		}
		if i+1 < len(presenceFits) {
			s.log.Debug("presence clipped to fit", "agents", len(as), "working_on", presenceFits[i+1].wo, "capabilities", presenceFits[i+1].caps)
		}
	}
	return wire, s.version, err
}

// clipRunes returns s cut to at most n characters (runes).
func clipRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// sendPresence sends one message on a new stream.
func (s *Service) sendPresence(ctx context.Context, p peer.ID, wire []byte) error {
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	h := s.cfg.Host
	if h.Network().Connectedness(p) != network.Connected && len(h.Peerstore().Addrs(p)) == 0 {
		// A contact this node has not met since it started: ask the DHT.
		ai, err := s.cfg.Routing.FindPeer(ctx, p)
		if err != nil {
			return fmt.Errorf("find contact: %w", err)
		}
		h.Peerstore().AddAddrs(p, ai.Addrs, peerstore.TempAddrTTL)
	}
	st, err := h.NewStream(network.WithAllowLimitedConn(ctx, "presence"), p, discovery.ProtocolPresence)
	if err != nil {
		return err
	}
	_ = st.SetDeadline(time.Now().Add(sendTimeout))
	if err := discovery.WriteFrame(st, wire); err != nil {
		_ = st.Reset()
		return err
	}
	return st.Close()
}

// connected makes presence go out at once to a contact that connects, or
// that starts serving presence (it connected while its agent service was
// starting, and refused what was sent then).
func (s *Service) connected(p peer.ID) {
	s.outMu.Lock()
	o := s.out[p]
	if o != nil {
		o.force, o.retry, o.wait = true, time.Time{}, 0
	}
	s.outMu.Unlock()
	if o != nil {
		kick(s.presKick)
	}
}

// disconnected checks, when the last connection to a contact that showed
// agents drops, whether it can still be dialled; if not, its agents are
// offline at once rather than after three heartbeats.
func (s *Service) disconnected(p peer.ID) {
	if s.cfg.Host.Network().Connectedness(p) == network.Connected {
		return
	}
	s.inMu.Lock()
	r := s.remote[p]
	if r == nil || r.offline || s.probing[p] {
		s.inMu.Unlock()
		return
	}
	s.probing[p] = true
	s.inMu.Unlock()
	s.spawn(func() {
		ctx, cancel := context.WithTimeout(s.ctx, probeTimeout)
		defer cancel()
		err := s.cfg.Host.Connect(ctx, peer.AddrInfo{ID: p})
		s.inMu.Lock()
		defer s.inMu.Unlock()
		delete(s.probing, p)
		if err != nil && s.ctx.Err() == nil {
			if r := s.remote[p]; r != nil {
				r.offline = true
				s.log.Info("contact unreachable: its agents are offline", "remote", p.String())
			}
		}
	})
}

// isContact reports whether p is an active contact that passes Allowed
// and whose certificate grants presence.
func (s *Service) isContact(p peer.ID) bool {
	if s.cfg.Contacts.Allowed(p) != nil {
		return false
	}
	return slices.ContainsFunc(s.cfg.Contacts.Active(), func(c Contact) bool { return c.Peer == p && c.Presence })
}

// handlePresence takes presence messages from a contact.
func (s *Service) handlePresence(st network.Stream) {
	defer st.Close()
	p := st.Conn().RemotePeer()
	if s.ctx.Err() != nil {
		_ = st.Reset()
		return
	}
	if !s.isContact(p) {
		s.rejectPresence(p, "not_contact", nil)
		_ = st.Reset()
		return
	}
	for {
		_ = st.SetReadDeadline(time.Now().Add(readTimeout))
		b, err := discovery.ReadFrame(st)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			s.rejectPresence(p, "frame", err)
			_ = st.Reset()
			return
		}
		// The limit comes before decoding: a flood costs no more than reading.
		if !s.limPresence.Allow(p, s.now()) {
			s.rejectPresence(p, "rate_limited", nil)
			_ = st.Reset()
			return
		}
		msg, err := discovery.DecodePresence(b)
		if err != nil {
			s.rejectPresence(p, "malformed", err)
			_ = st.Reset()
			return
		}
		if msg.Peer != p {
			s.rejectPresence(p, "wrong_peer", nil)
			_ = st.Reset()
			return
		}
		if !s.take(p, msg) {
			s.rejectPresence(p, "replay", nil)
		}
	}
}

func (s *Service) rejectPresence(p peer.ID, reason string, err error) {
	s.m.rejected.WithLabelValues("presence_" + reason).Inc()
	s.log.Debug("presence refused", "remote", p.String(), "reason", reason, "err", err)
}

// take stores msg from p if its seq is new.
func (s *Service) take(p peer.ID, msg *discovery.Presence) bool {
	s.inMu.Lock()
	defer s.inMu.Unlock()
	if msg.Seq <= s.lastSeq[p] {
		return false
	}
	s.lastSeq[p] = msg.Seq
	s.remote[p] = &remoteState{heard: s.now(), agents: msg.Agents}
	s.m.received.Inc()
	return true
}

// staleAfter is how long a contact may stay silent before its agents are
// offline.
func (s *Service) staleAfter() time.Duration { return MissedHeartbeats * s.cfg.Heartbeat }

// live reports whether r's agents are shown.
func (s *Service) live(r *remoteState, now time.Time) bool {
	return !r.offline && now.Sub(r.heard) <= s.staleAfter()
}

// forgetSilent drops what stale contacts said, and the seqs of peers that
// are no longer contacts.
func (s *Service) forgetSilent() {
	now := s.now()
	s.inMu.Lock()
	defer s.inMu.Unlock()
	for p, r := range s.remote {
		if !s.live(r, now) {
			delete(s.remote, p)
		}
	}
	if len(s.lastSeq) > 4*discovery.MaxAgents+len(s.remote) {
		for p := range s.lastSeq {
			if s.remote[p] == nil {
				delete(s.lastSeq, p)
			}
		}
	}
}

// Heard reports whether this node holds live presence of contact p: the
// contact told it lately which agents it runs, none perhaps. A contact it
// has not heard from (offline, silent, or not a contact) tells nothing.
func (s *Service) Heard(p peer.ID) bool {
	if !s.isContact(p) {
		return false
	}
	s.inMu.Lock()
	defer s.inMu.Unlock()
	r := s.remote[p]
	return r != nil && s.live(r, s.now())
}

// Who returns the live local agents, then the live agents of contacts
// (what they work on included), sorted by handle, peer and agent.
// Non-contacts never appear: their presence is never taken.
func (s *Service) Who(ctx context.Context) []WhoEntry {
	now := s.now()
	out := []WhoEntry{}
	s.mu.Lock()
	for _, a := range s.reg.list(now) {
		out = append(out, WhoEntry{
			PeerID: s.self.String(), Handle: s.cfg.Handle, Agent: string(a.Name), State: string(a.State),
			WorkingOn: a.WorkingOn, LastSeen: jsonTime(a.LastSeen), Local: true, Role: a.Role,
			Capabilities: orEmpty(a.Caps),
		})
	}
	s.mu.Unlock()

	var remote []WhoEntry
	contacts := s.cfg.Contacts.Active()
	s.inMu.Lock()
	for _, c := range contacts {
		r := s.remote[c.Peer]
		if r == nil || !c.Presence || !s.live(r, now) || s.cfg.Contacts.Allowed(c.Peer) != nil {
			continue
		}
		for _, a := range r.agents {
			if a.State == discovery.StateOffline {
				continue
			}
			remote = append(remote, WhoEntry{
				PeerID: c.Peer.String(), Handle: c.Handle, Agent: string(a.Agent), State: string(a.State),
				WorkingOn: a.WorkingOn, LastSeen: jsonTime(time.UnixMilli(a.LastSeen)), Role: a.Role,
				Capabilities: orEmpty(a.Capabilities),
			})
		}
	}
	s.inMu.Unlock()
	slices.SortFunc(remote, func(a, b WhoEntry) int {
		if c := strings.Compare(a.Handle, b.Handle); c != 0 {
			return c
		}
		if c := strings.Compare(a.PeerID, b.PeerID); c != 0 {
			return c
		}
		return strings.Compare(a.Agent, b.Agent)
	})
	return append(out, remote...)
}
