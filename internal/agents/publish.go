package agents

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/parley-mesh/parley/discovery"
	"github.com/parley-mesh/parley/identity"
)

// Publishing timing.
const (
	// publishTimeout bounds one card's put and provides.
	publishTimeout = time.Minute
	// retryMin and retryMax bound the back-off after a failed publish.
	retryMin = time.Second
	retryMax = 5 * time.Minute
	// tombstoneTries is how often a withdrawal is tried before it is left
	// to the old card's expiry.
	tombstoneTries = 5
	// publishWorkers bounds the publishes running at once.
	publishWorkers = 8
)

// pubState is the publishing state of one local agent's card.
type pubState struct {
	gen       uint64    // bumped when the card's fields change
	next      time.Time // when to publish next; zero: never (in flight)
	fails     int       // failures in a row
	published bool      // a card was put in the DHT at least once
	wire      []byte    // the last card sealed (served on /parley/cards/1)
	card      *discovery.Card
}

// tombstone is a withdrawal waiting to be published.
type tombstone struct {
	next  time.Time
	tries int
}

// backoff returns the wait after fails failures in a row.
func backoff(fails int) time.Duration {
	d := retryMin << min(fails-1, 20)
	return min(d, retryMax)
}

// publishLoop publishes due cards and withdrawals.
func (s *Service) publishLoop() {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.pubKick:
		case <-t.C:
		}
		wait := s.publishDue(s.ctx)
		resetTimer(t, wait)
	}
}

type job struct {
	name      identity.AgentName
	gen       uint64
	card      *discovery.Card
	wire      []byte
	tombstone bool
}

// publishDue seals and publishes every due card and withdrawal, then
// returns how long to wait for the next.
func (s *Service) publishDue(ctx context.Context) time.Duration {
	jobs := s.dueJobs()
	if len(jobs) > 0 {
		var wg sync.WaitGroup
		sem := make(chan struct{}, publishWorkers)
		for _, j := range jobs {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				err := s.put(ctx, j)
				s.published(j, err)
			}()
		}
		wg.Wait()
	}
	return s.nextPublish()
}

// dueJobs seals the cards and tombstones that are due.
func (s *Service) dueJobs() []job {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var jobs []job
	for name, p := range s.pub {
		a := s.reg.get(name, now)
		if a == nil || p.next.IsZero() || p.next.After(now) {
			continue
		}
		// No role: a public card carries the handle, the agent's name,
		// capabilities, client and organisation; the role goes to
		// contacts only, with presence (docs/ARCHITECTURE.md).
		c := &discovery.Card{
			Peer: s.self, Handle: s.handle, Agent: name, Capabilities: a.Caps, Client: a.Client,
			Seq: s.nextSeq(now), Expires: now.Add(s.cfg.CardTTL).UnixMilli(),
		}
		if s.cfg.Member != nil {
			if m := s.cfg.Member(); len(m) <= discovery.MaxCardMember {
				c.Member = m
			}
		}
		wire, err := discovery.SealCard(s.cfg.Key, c)
		if err != nil { // checked at registration: a programming error
			s.log.Error("agent card not sealed", "agent", string(name), "err", err)
			p.next = now.Add(retryMax)
			continue
		}
		p.wire, p.card, p.next = wire, c, time.Time{}
		jobs = append(jobs, job{name: name, gen: p.gen, card: c, wire: wire})
	}
	for name, tb := range s.tombs {
		if tb.next.IsZero() || tb.next.After(now) {
			continue
		}
		if s.reg.get(name, now) != nil {
			delete(s.tombs, name)
			continue
		}
		seq := s.nextSeq(now)
		c := &discovery.Card{Peer: s.self, Agent: name, Seq: seq, Expires: int64(seq) + WithdrawTTL.Milliseconds()}
		wire, err := discovery.SealCard(s.cfg.Key, c)
		if err != nil {
			s.log.Error("tombstone not sealed", "agent", string(name), "err", err)
			delete(s.tombs, name)
			continue
		}
		tb.next = time.Time{}
		jobs = append(jobs, job{name: name, card: c, wire: wire, tombstone: true})
	}
	return jobs
}

// put puts a card in the DHT and, for a live card, provides its keys
// (each at most once per half card lifetime).
func (s *Service) put(ctx context.Context, j job) error {
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	if err := s.cfg.Routing.PutValue(ctx, j.card.Key(), j.wire); err != nil {
		return err
	}
	if j.tombstone {
		return nil
	}
	keys, err := j.card.ProviderKeys()
	if err != nil {
		return err
	}
	now := s.now()
	var (
		wg   sync.WaitGroup
		emu  sync.Mutex // protects errs
		errs []error
	)
	for _, k := range keys {
		ks := k.KeyString()
		s.mu.Lock()
		fresh := now.Sub(s.provided[ks]) < s.cfg.CardTTL/2
		s.mu.Unlock()
		if fresh {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.cfg.Routing.Provide(ctx, k, true); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
				return
			}
			s.mu.Lock()
			s.provided[ks] = now
			s.mu.Unlock()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// published records the outcome of a job.
func (s *Service) published(j job, err error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if j.tombstone {
		tb := s.tombs[j.name]
		if tb == nil || !tb.next.IsZero() {
			return // re-registered since, or queued again
		}
		if err == nil {
			delete(s.tombs, j.name)
			s.m.publish.WithLabelValues("withdraw", "ok").Inc()
			return
		}
		s.m.publish.WithLabelValues("withdraw", "error").Inc()
		tb.tries++
		if tb.tries >= tombstoneTries || s.ctx.Err() != nil {
			s.log.Warn("agent card not withdrawn; it expires by itself", "agent", string(j.name), "err", err)
			delete(s.tombs, j.name)
			return
		}
		tb.next = now.Add(backoff(tb.tries))
		return
	}
	p := s.pub[j.name]
	if p == nil {
		return // unregistered meanwhile; its tombstone has a higher seq
	}
	if err == nil {
		p.published = true
		s.m.publish.WithLabelValues("card", "ok").Inc()
	} else {
		s.m.publish.WithLabelValues("card", "error").Inc()
	}
	if p.gen != j.gen {
		return // changed meanwhile: already due again
	}
	if err == nil {
		p.fails = 0
		p.next = now.Add(s.cfg.CardTTL / 2)
		return
	}
	p.fails++
	if s.ctx.Err() == nil {
		s.log.Debug("agent card not published; retrying", "agent", string(j.name), "err", err, "fails", p.fails)
	}
	p.next = now.Add(backoff(p.fails))
	// A card about to expire is sealed again on the next try anyway.
}

// nextPublish returns how long until the next card or withdrawal is due.
func (s *Service) nextPublish() time.Duration {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	next := now.Add(time.Hour)
	for name, p := range s.pub {
		if !p.next.IsZero() && p.next.Before(next) && s.reg.get(name, now) != nil {
			next = p.next
		}
	}
	for _, tb := range s.tombs {
		if !tb.next.IsZero() && tb.next.Before(next) {
			next = tb.next
		}
	}
	for k, at := range s.provided {
		if now.Sub(at) > s.cfg.CardTTL {
			delete(s.provided, k)
		}
	}
	return max(next.Sub(now), time.Millisecond)
}

// localCards returns the sealed cards of the live local agents.
func (s *Service) localCards() []*discovery.Card {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*discovery.Card
	for _, a := range s.reg.list(now) {
		if p := s.pub[a.Name]; p != nil && p.card != nil && p.card.Expires > now.UnixMilli() {
			out = append(out, p.card)
		}
	}
	return out
}

// localWires returns the wire forms of the live local agents' cards.
func (s *Service) localWires() [][]byte {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]byte
	for _, a := range s.reg.list(now) {
		if p := s.pub[a.Name]; p != nil && p.wire != nil && p.card.Expires > now.UnixMilli() {
			out = append(out, p.wire)
		}
	}
	return out
}

// withdrawn reports whether c is a tombstone (see WithdrawTTL).
func withdrawn(c *discovery.Card) bool {
	return c.Expires-int64(c.Seq) <= WithdrawTTL.Milliseconds()
}
