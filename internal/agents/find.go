package agents

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/parley-mesh/parley/discovery"
	"github.com/parley-mesh/parley/identity"
)

// ProtocolCards is the stream protocol on which a node hands out its live
// agent cards (see the package documentation).
const ProtocolCards protocol.ID = "/parley/cards/1"

// Lookup limits. Anyone may announce any provider key, so a query meets
// strangers' providers that have no card under it, answer nothing or hold
// the stream open: each fetch gets fetchTimeout, far under FindTimeout;
// fetchWorkers run at once, so a few stalled fetches leave the others
// going; contacts are asked first and providers that gave nothing lately
// last; and a query takes many providers, so that strangers' cannot fill
// its places. What one Find costs stays bounded: at most maxProviders
// providers a query (a free word runs three), fetchWorkers fetches at once,
// each at most fetchTimeout, all within FindTimeout.
const (
	// maxProviders is the most providers taken per provider key.
	maxProviders = 200
	// fetchWorkers bounds the card fetches of one query running at once.
	fetchWorkers = 16
	// fetchTimeout bounds asking one provider: the dial, the
	// /parley/cards/1 exchange, and for agent: the DHT lookup of its card.
	fetchTimeout = 2 * time.Second
	// cardsTimeout bounds serving one /parley/cards/1 exchange.
	cardsTimeout = 10 * time.Second
	// emptyFor is how long a provider that gave no valid card is asked
	// after the others; at most maxEmpty such providers are remembered.
	emptyFor = 10 * time.Minute
	maxEmpty = 4096
	// lookupQuorum is how many DHT answers a card get waits for after the
	// first (the best, by seq, wins): a full lookup takes ~5x as long on
	// loopback (p50 ~3 ms against ~10 ms in a 50-node testnet), and each put
	// reaches every one of the closest nodes.
	lookupQuorum = 3
)

// handleCards writes this node's live cards, one frame each.
func (s *Service) handleCards(st network.Stream) {
	defer st.Close()
	p := st.Conn().RemotePeer()
	if s.ctx.Err() != nil || !s.limCards.Allow(p, s.now()) {
		s.m.rejected.WithLabelValues("cards_rate_limited").Inc()
		_ = st.Reset()
		return
	}
	_ = st.SetDeadline(time.Now().Add(cardsTimeout))
	for _, w := range s.localWires() {
		if err := discovery.WriteFrame(st, w); err != nil {
			_ = st.Reset()
			return
		}
	}
}

// fetchCards asks ai for its live cards and returns the valid ones.
func (s *Service) fetchCards(ctx context.Context, ai peer.AddrInfo) ([]*discovery.Card, error) {
	// A DHT answer's provider comes with the addresses the answer gave,
	// as many as fit in a message: only those the filter keeps are dialled.
	if addrs := s.cfg.AddrFilter(ai.Addrs); len(addrs) > 0 {
		s.cfg.Host.Peerstore().AddAddrs(ai.ID, addrs, peerstore.TempAddrTTL)
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	st, err := s.cfg.Host.NewStream(network.WithAllowLimitedConn(ctx, "cards"), ai.ID, ProtocolCards)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	_ = st.CloseWrite()
	if dl, ok := ctx.Deadline(); ok {
		_ = st.SetReadDeadline(dl)
	}
	var out []*discovery.Card
	for range discovery.MaxAgents {
		b, err := discovery.ReadFrame(st)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			_ = st.Reset()
			return out, err
		}
		c, err := s.checkCard(ai.ID, b)
		if err != nil {
			s.rejectCard(ai.ID, err)
			continue
		}
		if !withdrawn(c) {
			out = append(out, c)
		}
	}
	_ = st.Reset() // more than a node may have
	return out, nil
}

// checkCard decodes wire and checks it as the DHT does: valid under the
// record key of its agent on peer p.
func (s *Service) checkCard(p peer.ID, wire []byte) (*discovery.Card, error) {
	c, err := discovery.DecodeCard(wire)
	if err != nil {
		return nil, err
	}
	if err := (discovery.Validator{Now: s.now}).Validate(discovery.CardKey(p, c.Agent), wire); err != nil {
		return nil, err
	}
	return c, nil
}

func (s *Service) rejectCard(p peer.ID, err error) {
	reason := "invalid"
	switch {
	case errors.Is(err, discovery.ErrKeyMismatch), errors.Is(err, discovery.ErrBadSignature):
		reason = "forged"
	case errors.Is(err, discovery.ErrExpired), errors.Is(err, discovery.ErrLifetime):
		reason = "expired"
	}
	s.m.rejected.WithLabelValues("card_" + reason).Inc()
	s.log.Debug("agent card refused", "remote", p.String(), "err", err)
}

// dhtCard gets p's card of agent name from the DHT. It returns nil, nil for
// a withdrawn card.
func (s *Service) dhtCard(ctx context.Context, p peer.ID, name identity.AgentName) (*discovery.Card, error) {
	wire, err := s.cfg.Routing.GetValue(ctx, discovery.CardKey(p, name), dht.Quorum(lookupQuorum))
	if err != nil {
		return nil, err
	}
	c, err := s.checkCard(p, wire)
	if err != nil {
		s.rejectCard(p, err)
		return nil, err
	}
	if withdrawn(c) {
		return nil, nil
	}
	return c, nil
}

// Find looks agents up through the DHT by query: "cap:go", "agent:NAME",
// "handle:NAME" or a free word tried as all three (see
// discovery.ParseQuery). It returns the valid public cards found within
// Config.FindTimeout (or ctx); nothing
// found gives an empty list, and a query that cannot match anything
// ("cap:", an empty one) ErrBadInput, saying why. It keeps at most
// maxCardsPerPeer cards of a stranger's node and maxFound in all, this
// node's cards first, then its contacts', then strangers' (the order of
// the result; within each, by handle, agent and peer). Search says, too,
// how many cards it left out.
func (s *Service) Find(ctx context.Context, q string) ([]CardView, error) {
	res, err := s.Search(ctx, q)
	return res.Cards, err
}

// Search is Find, saying how many cards found were left out over each of
// its limits.
func (s *Service) Search(ctx context.Context, q string) (Found, error) {
	if err := s.alive(); err != nil {
		return Found{}, err
	}
	start := time.Now()
	qs := discovery.ParseQuery(q)
	if len(qs) == 0 {
		return Found{}, fmt.Errorf("%w: %w", ErrBadInput, discovery.CheckQuery(q))
	}
	contact := s.contactOf()
	res := newFound(s.self, contact)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.FindTimeout)
	defer cancel()
	f := &fetcher{s: s, contact: contact, peers: make(map[peer.ID]*peerFetch)}
	var wg sync.WaitGroup
	for _, q := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.findQuery(ctx, q, f, res)
		}()
	}
	wg.Wait()
	s.m.find.Observe(time.Since(start).Seconds())
	out := res.views()
	if out.LeftOutPerNode+out.LeftOutInAll > 0 {
		s.log.Debug("find: cards left out", "query", q, "kept", len(out.Cards), "left_out_per_node", out.LeftOutPerNode,
			"left_out_in_all", out.LeftOutInAll)
	}
	return out, nil
}

// contactOf returns whether a peer is an active contact of this node, as
// Active lists them now, that Allowed lets in. Allowed alone is not
// enough: it lets in every member of a room this node shares, and any
// member may invite a stranger.
func (s *Service) contactOf() func(peer.ID) bool {
	active := make(map[peer.ID]bool)
	for _, c := range s.cfg.Contacts.Active() {
		active[c.Peer] = true
	}
	return func(p peer.ID) bool { return active[p] && s.cfg.Contacts.Allowed(p) == nil }
}

// FindCard gets p's card of agent name from the DHT (nil if withdrawn).
func (s *Service) FindCard(ctx context.Context, p peer.ID, name identity.AgentName) (*discovery.Card, error) {
	c, err := s.dhtCard(ctx, p, name)
	if err != nil {
		return nil, fmt.Errorf("agents: find card %s: %w", discovery.CardKey(p, name), err)
	}
	return c, nil
}

func (s *Service) findQuery(ctx context.Context, q discovery.Query, f *fetcher, res *found) {
	key, err := q.Key()
	if err != nil {
		return
	}
	for _, c := range s.localCards() {
		if matches(c, q) {
			res.add(c)
		}
	}
	// Providers are queued as the DHT finds them and handed to the
	// workers, contacts first and those that gave nothing lately last;
	// a stalled fetch holds one worker for fetchTimeout at most.
	work := make(chan peer.AddrInfo)
	var wg sync.WaitGroup
	for range fetchWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ai := range work {
				s.findAt(ctx, q, ai, f, res)
			}
		}()
	}
	var queue providerQueue
	in, taken := s.cfg.Routing.FindProvidersAsync(ctx, key, maxProviders), 0
loop:
	for in != nil || queue.len() > 0 {
		var out chan peer.AddrInfo
		var next peer.AddrInfo
		if queue.len() > 0 {
			out, next = work, queue.peek()
		}
		select {
		case ai, ok := <-in:
			switch {
			case !ok:
				in = nil
			case ai.ID == s.self:
			default:
				queue.push(ai, s.providerRank(ai.ID, f.contact))
				if taken++; taken == maxProviders {
					in = nil
				}
			}
		case out <- next:
			queue.pop()
		case <-ctx.Done():
			break loop
		}
	}
	close(work)
	wg.Wait()
}

// Provider ranks: the order in which a query asks its providers.
const (
	rankContact = iota // the node's contacts
	rankOther
	rankEmpty // gave no valid card lately
	numRanks
)

func (s *Service) providerRank(p peer.ID, contact func(peer.ID) bool) int {
	if contact(p) {
		return rankContact
	}
	s.emptyMu.Lock()
	defer s.emptyMu.Unlock()
	if until, ok := s.empty[p]; ok && s.now().Before(until) {
		return rankEmpty
	}
	return rankOther
}

// fetched notes whether p gave a valid card: one that gave none is asked
// after the others for emptyFor. At most maxEmpty peers are remembered,
// the expired dropped first, then any.
func (s *Service) fetched(p peer.ID, gave bool) {
	s.emptyMu.Lock()
	defer s.emptyMu.Unlock()
	if gave {
		delete(s.empty, p)
		return
	}
	now := s.now()
	if _, ok := s.empty[p]; !ok && len(s.empty) >= maxEmpty {
		for q, until := range s.empty {
			if !now.Before(until) {
				delete(s.empty, q)
			}
		}
		for q := range s.empty {
			if len(s.empty) < maxEmpty {
				break
			}
			delete(s.empty, q)
		}
	}
	s.empty[p] = now.Add(emptyFor)
}

// providerQueue holds a query's providers not yet asked, first in first
// out within each rank.
type providerQueue struct {
	q [numRanks][]peer.AddrInfo
}

func (pq *providerQueue) len() int {
	n := 0
	for _, q := range pq.q {
		n += len(q)
	}
	return n
}

func (pq *providerQueue) push(ai peer.AddrInfo, rank int) { pq.q[rank] = append(pq.q[rank], ai) }

// peek returns the next provider; the queue must not be empty.
func (pq *providerQueue) peek() peer.AddrInfo {
	for _, q := range pq.q {
		if len(q) > 0 {
			return q[0]
		}
	}
	panic("agents: peek at an empty provider queue")
}

func (pq *providerQueue) pop() {
	for i, q := range pq.q {
		if len(q) > 0 {
			pq.q[i] = q[1:]
			return
		}
	}
}

// findAt adds the cards of provider ai that match q.
func (s *Service) findAt(ctx context.Context, q discovery.Query, ai peer.AddrInfo, f *fetcher, res *found) {
	if q.Kind == discovery.KindAgent {
		lctx, cancel := context.WithTimeout(ctx, fetchTimeout)
		c, err := s.dhtCard(lctx, ai.ID, identity.AgentName(q.Value))
		cancel()
		if err == nil {
			if c != nil {
				res.add(c)
			}
			return
		}
		// Not in the DHT (yet): ask the provider.
	}
	for _, c := range f.cards(ctx, ai) {
		if matches(c, q) {
			res.add(c)
		}
	}
}

// matches reports whether c answers q.
func matches(c *discovery.Card, q discovery.Query) bool {
	switch q.Kind {
	case discovery.KindAgent:
		return string(c.Agent) == q.Value
	case discovery.KindCap:
		return slices.Contains(c.Capabilities, q.Value)
	case discovery.KindHandle:
		return c.Handle != "" && strings.ToLower(strings.TrimSpace(c.Handle)) == q.Value
	}
	return false
}

// fetcher asks each provider for its cards at most once per Find.
type fetcher struct {
	s       *Service
	contact func(peer.ID) bool // an active contact (Service.contactOf)
	mu      sync.Mutex         // protects peers
	peers   map[peer.ID]*peerFetch
}

type peerFetch struct {
	done  chan struct{}
	cards []*discovery.Card
}

func (f *fetcher) cards(ctx context.Context, ai peer.AddrInfo) []*discovery.Card {
	f.mu.Lock()
	pf := f.peers[ai.ID]
	if pf == nil {
		pf = &peerFetch{done: make(chan struct{})}
		f.peers[ai.ID] = pf
		f.mu.Unlock()
		cards, err := f.s.fetchCards(ctx, ai)
		if err != nil {
			f.s.log.Debug("cards not fetched", "remote", ai.ID.String(), "err", err)
		}
		if ctx.Err() == nil {
			f.s.fetched(ai.ID, len(cards) > 0)
		}
		pf.cards = cards
		close(pf.done)
		return cards
	}
	f.mu.Unlock()
	select {
	case <-pf.done:
		return pf.cards
	case <-ctx.Done():
		return nil
	}
}

type cardID struct {
	peer  peer.ID
	agent identity.AgentName
}

// What one Find keeps. Cards come from anyone: a stranger's node hands
// out up to 64, and a query takes 200 providers, so a Find keeps at most
// maxCardsPerPeer of a provider that is neither this node nor a contact,
// and maxFound in all, this node's and its contacts' cards first: a
// stranger's card gives its place to theirs, so strangers cannot crowd
// them out.
const (
	maxCardsPerPeer = 16
	maxFound        = 256
)

// Card ranks in a Find's result: the order in which cards are kept and
// listed.
const (
	cardSelf = iota
	cardContact
	cardOther
)

// found collects the cards of one Find, the highest seq per agent, within
// maxCardsPerPeer and maxFound.
type found struct {
	self    peer.ID
	contact func(peer.ID) bool
	mu      sync.Mutex // protects what follows
	cards   map[cardID]foundCard
	perPeer map[peer.ID]int
	// dropped holds the cards left out and the limit each was left out
	// over (dropPerNode or dropInAll); a card is counted once however
	// many of a free word's queries meet it. It holds at most the cards
	// of the providers of a Find's queries.
	dropped map[cardID]int
}

// Why a card was left out.
const (
	dropPerNode = iota + 1 // maxCardsPerPeer of its stranger's node
	dropInAll              // maxFound
)

type foundCard struct {
	c    *discovery.Card
	rank int
}

func newFound(self peer.ID, contact func(peer.ID) bool) *found {
	return &found{self: self, contact: contact, cards: make(map[cardID]foundCard), perPeer: make(map[peer.ID]int),
		dropped: make(map[cardID]int)}
}

func (f *found) rank(p peer.ID) int {
	switch {
	case p == f.self:
		return cardSelf
	case f.contact != nil && f.contact(p):
		return cardContact
	}
	return cardOther
}

func (f *found) add(c *discovery.Card) {
	rank := f.rank(c.Peer)
	f.mu.Lock()
	defer f.mu.Unlock()
	id := cardID{c.Peer, c.Agent}
	if old, ok := f.cards[id]; ok {
		if old.c.Seq < c.Seq {
			f.cards[id] = foundCard{c, rank}
		}
		return
	}
	if rank == cardOther && f.perPeer[c.Peer] >= maxCardsPerPeer {
		f.dropped[id] = dropPerNode
		return
	}
	if len(f.cards) >= maxFound {
		// Full: a card of a worse rank gives its place, or c is left out.
		var worst cardID
		wr := rank
		for id, fc := range f.cards {
			if fc.rank > wr {
				worst, wr = id, fc.rank
			}
		}
		if wr == rank {
			f.dropped[id] = dropInAll
			return
		}
		delete(f.cards, worst)
		f.perPeer[worst.peer]--
		f.dropped[worst] = dropInAll
	}
	delete(f.dropped, id)
	f.cards[id] = foundCard{c, rank}
	f.perPeer[c.Peer]++
}

// views returns the cards kept, this node's first, then its contacts',
// then the others', each sorted by handle, agent and peer; and how many
// were left out over each limit.
func (f *found) views() Found {
	f.mu.Lock()
	defer f.mu.Unlock()
	type ranked struct {
		v    CardView
		rank int
	}
	rs := make([]ranked, 0, len(f.cards))
	for _, fc := range f.cards {
		rs = append(rs, ranked{cardView(fc.c), fc.rank})
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		if c := strings.Compare(a.v.Handle, b.v.Handle); c != 0 {
			return c
		}
		if c := strings.Compare(a.v.Agent, b.v.Agent); c != 0 {
			return c
		}
		return strings.Compare(a.v.PeerID, b.v.PeerID)
	})
	out := make([]CardView, len(rs))
	for i, r := range rs {
		out[i] = r.v
	}
	res := Found{Cards: out}
	for _, why := range f.dropped {
		if why == dropPerNode {
			res.LeftOutPerNode++
		} else {
			res.LeftOutInAll++
		}
	}
	return res
}

func cardView(c *discovery.Card) CardView {
	return CardView{
		PeerID: c.Peer.String(), Handle: c.Handle, Agent: string(c.Agent),
		Capabilities: orEmpty(c.Capabilities), Client: c.Client, Expires: jsonTime(time.UnixMilli(c.Expires)),
		Member: c.Member,
	}
}
