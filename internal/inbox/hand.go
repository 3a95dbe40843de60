package inbox

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/store/schema"
	"github.com/parley-mesh/parley/rooms"
)

// Two-step hand-outs. A call made with localapi.TwoStep marks what it hands
// out as a one-step call does (the next take does not hand it again), and
// also keeps a record of it under a token the answer gives
// (localapi.Pending.Hand). The caller confirms the token (Ack) once the
// items reached the agent: the record goes. A record not confirmed within
// Config.HandWait is a hand-out that may never have reached the agent (its
// MCP server killed before it wrote the result, the client gone): its items
// are offered again, at the agent's next call that scans (take, peek,
// read, wait), and a Wait already waiting wakes for them: at the record's
// wait, which it watches from the moment the record is made, as at a
// confirmation that offers items again at once (Ack with Shown). Shown
// twice, never lost.

// Defaults and bounds of two-step hand-outs.
const (
	// DefaultHandWait is Config.HandWait's default.
	DefaultHandWait = 30 * time.Second
	// MaxHands is the most open hand-outs one agent keeps past their
	// caller's grace: a new one past it offers the oldest's items again at
	// once if that one is overdue (made a quarter of Config.HandWait ago or
	// more), so that a caller that never confirms grows neither memory nor
	// disk.
	MaxHands = 16
	// MaxFreshHands is the most open hand-outs one agent has, those still
	// in their caller's grace included: a caller holds a confirmation back
	// for a while (parley mcp waits up to mcp.CancelGrace, at most a
	// quarter of the hand wait, for a cancellation of the call), and one
	// that hands out more than MaxHands in that while must not be shown
	// their items again. Past it, the oldest is offered again all the same.
	MaxFreshHands = 1024
	// maxHandBytes bounds the records of one agent's open hand-outs
	// together (their JSON), as MaxHands does their number; the newest is
	// kept whatever its size.
	maxHandBytes = 256 << 10
)

// handRec is an open two-step hand-out (h/<token>).
type handRec struct {
	At    int64      `json:"at"`    // when it was made (unix ms): the oldest goes first past the caps
	Until int64      `json:"until"` // when its items are offered again (unix ms, this node's clock)
	Items []handItem `json:"items"`
	size  int        // its record's bytes
}

// handItem is one item a hand-out gave. An item made from an event is kept
// by reference (its room's log holds its text), and made again from the
// event when it is offered again; another (a board notice) is kept whole.
// Short keys keep a take's record (a dozen items) under Badger's value
// threshold (1 KiB), in the LSM tree, which compacts, rather than in the
// value log, which the node never reclaims.
type handItem struct {
	Kind string         `json:"k"`
	ID   string         `json:"id"`
	Item *localapi.Item `json:"it,omitempty"`
}

// hand is one call's two-step hand-out; nil for a one-step call.
type hand struct {
	token string
	used  bool // something was handed out, and recorded
}

// handFor returns the hand-out of a call made with ctx: nil unless it asks
// for two steps.
func handFor(ctx context.Context) *hand {
	if !localapi.TwoStep(ctx) {
		return nil
	}
	return &hand{token: strings.ToLower(rand.Text())}
}

// tokenIfUsed is what the answer's Pending.Hand says: the token once something
// was handed out, else "".
func (h *hand) tokenIfUsed() string {
	if h == nil || !h.used {
		return ""
	}
	return h.token
}

// setHand gives p the token of h, if it handed something out, and the
// hand wait its confirmation has.
func (b *Inbox) setHand(p *localapi.Pending, h *hand) {
	p.Hand, p.HandWaitMS = h.tokenIfUsed(), 0
	if p.Hand != "" {
		p.HandWaitMS = b.cfg.HandWait.Milliseconds()
	}
}

// eventKinds are the kinds of items made from an event of a room's log.
var eventKinds = []string{"ask", "message", "reply", "invitation", "removed",
	string(rooms.KindCreate), string(rooms.KindInvite), string(rooms.KindJoin), string(rooms.KindLeave),
	string(rooms.KindClaim), string(rooms.KindRelease)}

// handed records what a call hands out (items as given) under its
// hand-out, in the state's pending writes: the marks and the record are
// saved together. Callers hold st.mu.
func (b *Inbox) handed(st *state, h *hand, items []localapi.Item) {
	if h == nil || len(items) == 0 {
		return
	}
	rec := st.hands[h.token]
	if rec == nil {
		b.makeRoom(st)
		rec = &handRec{At: b.now().UnixMilli()}
		if st.hands == nil {
			st.hands = map[string]*handRec{}
		}
		st.hands[h.token] = rec
	}
	for _, it := range items {
		hi := handItem{Kind: it.Kind, ID: it.ID}
		if _, err := rooms.ParseID(it.ID); err != nil || !slices.Contains(eventKinds, it.Kind) {
			cp := it
			hi.Item = &cp
		}
		rec.Items = append(rec.Items, hi)
	}
	rec.Until = b.now().Add(b.cfg.HandWait).UnixMilli()
	raw, err := json.Marshal(rec)
	if err != nil {
		return // plain strings and numbers: cannot fail
	}
	rec.size = len(raw)
	st.ops = append(st.ops, schema.Op{Key: schema.AgentItem(string(st.agent), "h", h.token), Val: raw})
	h.used = true
	st.poke() // a Wait waiting watches the record's wait
}

// makeRoom offers the oldest open hand-outs again until a new one fits in
// MaxHands and maxHandBytes: in MaxFreshHands while the oldest is still in
// its caller's grace (made less than a quarter of the hand wait ago),
// whose confirmation may yet come, so that its items are not shown twice.
// Callers hold st.mu.
func (b *Inbox) makeRoom(st *state) {
	fresh := b.now().Add(-b.cfg.HandWait / 4).UnixMilli()
	for len(st.hands) > 0 {
		total := 0
		oldest := ""
		for tok, r := range st.hands {
			total += r.size
			if o := st.hands[oldest]; oldest == "" || r.At < o.At || r.At == o.At && tok < oldest {
				oldest = tok
			}
		}
		n := len(st.hands)
		if total < maxHandBytes && (n < MaxHands || n < MaxFreshHands && st.hands[oldest].At > fresh) {
			return
		}
		b.offerAgain(st, oldest, "too many hand-outs wait for their confirmation")
	}
}

// expireHands offers the items of the hand-outs whose wait passed again.
// Callers hold st.mu (scan calls it).
func (b *Inbox) expireHands(st *state) {
	now := b.now().UnixMilli()
	var due []string
	for tok, r := range st.hands {
		if r.Until <= now {
			due = append(due, tok)
		}
	}
	slices.SortFunc(due, func(x, y string) int { return cmp.Or(cmp.Compare(st.hands[x].At, st.hands[y].At), cmp.Compare(x, y)) })
	for _, tok := range due {
		b.offerAgain(st, tok, "not confirmed in time")
	}
}

// nextHand is when the first open hand-out's wait passes; zero when none is
// open. Callers hold st.mu.
func (st *state) nextHand() time.Time {
	var next int64
	for _, r := range st.hands {
		if next == 0 || r.Until < next {
			next = r.Until
		}
	}
	if next == 0 {
		return time.Time{}
	}
	return time.UnixMilli(next)
}

// offerAgain drops hand-out tok and offers its items to the agent again
// (offerItems). Callers hold st.mu.
func (b *Inbox) offerAgain(st *state, tok, why string) {
	if rec := b.dropHand(st, tok); rec != nil {
		b.offerItems(st, rec.Items, why)
	}
}

// dropHand drops hand-out tok, in memory and on disk, and returns its
// record (nil when it is not open). Callers hold st.mu.
func (b *Inbox) dropHand(st *state, tok string) *handRec {
	rec := st.hands[tok]
	delete(st.hands, tok)
	st.ops = append(st.ops, schema.Op{Key: schema.AgentItem(string(st.agent), "h", tok), Delete: true})
	return rec
}

// offerItems offers items of a hand-out to the agent again: an ask it
// still owes is shown in full again (not twice over); any other item comes
// back as a notice to show once (n/<id>, as invitations and replies are),
// made again from its event. An item whose event this node no longer holds
// (a room it left) has nothing left to offer. Callers hold st.mu.
func (b *Inbox) offerItems(st *state, items []handItem, why string) {
	if len(items) == 0 {
		return
	}
	agent := st.agent
	for _, hi := range items {
		if hi.Item != nil {
			st.putNote(agent, *hi.Item)
			continue
		}
		if a := st.owed[hi.ID]; a != nil && hi.Kind == "ask" {
			if a.Shown {
				a.Shown = false
				a.Text = b.askText(st, "o", hi.ID)
				st.putAsk(agent, "o", hi.ID, a)
				st.news++
			}
			continue
		}
		eid, err := rooms.ParseID(hi.ID)
		if err != nil {
			continue
		}
		v, err := b.rooms.Find(eid)
		if err != nil || b.hidden(v) {
			continue // the node left the room, or its user muted the author since
		}
		name := ""
		if in, err := b.rooms.Get(v.Room); err == nil {
			name = in.Name
		}
		it := item(v, name)
		switch hi.Kind {
		case "ask":
			it.Kind = "message" // no longer owed (answered, expired): the text alone
		case "invitation", "reply", "removed", "message":
			it.Kind = hi.Kind
		}
		if it.Kind == "invitation" {
			b.describeRoom(&it)
		}
		st.putNote(agent, it)
	}
	st.poke() // a Wait waiting takes them now
	b.log.Info("inbox: the items of a two-step hand-out are offered again", "why", why,
		"agent", string(agent), "items", len(items))
}

// Ack implements localapi.Edge: it confirms a two-step hand-out, whose
// items are then not offered again. With req.Shown it confirms the items
// of those IDs alone, and offers the others again at once.
func (b *Inbox) Ack(ctx context.Context, agent string, req localapi.AckRequest) (localapi.AckResult, error) {
	a, err := parseAgent(agent)
	if err != nil {
		return localapi.AckResult{}, err
	}
	st, err := b.lock(a)
	if err != nil {
		return localapi.AckResult{}, err
	}
	defer b.unlock(st)
	if _, ok := st.hands[req.Hand]; !ok {
		return localapi.AckResult{}, nil
	}
	rec := b.dropHand(st, req.Hand)
	if req.Shown != nil {
		shown := make(map[string]bool, len(req.Shown))
		for _, id := range req.Shown {
			shown[id] = true
		}
		var rest []handItem
		for _, hi := range rec.Items {
			if !shown[hi.ID] {
				rest = append(rest, hi)
			}
		}
		b.offerItems(st, rest, "its caller did not show them")
	}
	// A refused write (a full disk) leaves the record on disk alone: after
	// a restart its items are offered again (twice, never lost); the items
	// offered again at once are so in memory, for this run.
	if err := b.flush(st); err != nil {
		b.log.Warn("inbox: a confirmed hand-out is not saved as confirmed; its items may be offered again after a restart",
			"agent", string(a), "err", err)
	}
	return localapi.AckResult{Acked: true}, nil
}

// loadHand reads one open hand-out's record.
func loadHand(v []byte) (*handRec, error) {
	var r handRec
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, err
	}
	r.size = len(v)
	return &r, nil
}

// OpenHands returns how many of agent's two-step hand-outs wait for their
// confirmation.
func (b *Inbox) OpenHands(agent string) int {
	a, err := parseAgent(agent)
	if err != nil {
		return 0
	}
	st, err := b.lock(a)
	if err != nil {
		return 0
	}
	defer b.unlock(st)
	return len(st.hands)
}
