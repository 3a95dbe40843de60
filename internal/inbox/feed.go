package inbox

import (
	"context"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/localapi"
)

// A feed of every room, for a live view (the dashboard): which rooms changed,
// and their events in the order this node stored them.

// Changes returns a channel that receives whenever events are stored in any
// room, and a function to stop.
func (b *Inbox) Changes() (<-chan struct{}, func()) { return b.rooms.Changes() }

// ChangedSince returns the rooms that changed after change number after (all
// rooms for 0) and the latest change number.
func (b *Inbox) ChangedSince(after uint64) ([]string, uint64) {
	ids, n := b.rooms.ChangedSince(after)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out, n
}

// Since returns up to limit events of room in the order this node stored
// them, after the after-th, and the place of the last one returned (after
// when there is none).
func (b *Inbox) Since(room string, after uint64, limit int) ([]localapi.Event, uint64, error) {
	vs, err := b.rooms.Since(identity.RoomID(room), after, limit)
	if err != nil {
		return nil, after, apiError(err)
	}
	out := make([]localapi.Event, len(vs))
	for i, v := range vs {
		out[i] = event(v)
		after = v.Arrival
	}
	return out, after, nil
}

// Asked lists the agent's own asks that have no reply yet, oldest first:
// whom it waits on.
func (b *Inbox) Asked(ctx context.Context, agent string) ([]localapi.Item, error) {
	a, err := parseAgent(agent)
	if err != nil {
		return nil, err
	}
	st, err := b.lock(a)
	if err != nil {
		return nil, err
	}
	defer b.unlock(st)
	out := []localapi.Item{}
	for _, q := range sortedAsks(st.asked) {
		if q.rec.Reply != nil {
			continue
		}
		out = append(out, b.askItem(st, "q", q.id, q.rec, "ask", ""))
	}
	return out, nil
}

// checkSpent refuses a report of negative or absurd spending.
func checkSpent(s *localapi.Spend) error {
	if s == nil {
		return nil
	}
	for _, v := range []*int64{s.TokensIn, s.TokensOut, s.CacheReadTokens, s.CacheWriteTokens} {
		if v != nil && (*v < 0 || *v > 1<<40) {
			return localapi.BadRequest("spent: token counts must be 0 to 2^40, got %d", *v)
		}
	}
	if s.TokensIn != nil && (s.CacheReadTokens != nil || s.CacheWriteTokens != nil) {
		var cached int64
		for _, v := range []*int64{s.CacheReadTokens, s.CacheWriteTokens} {
			if v != nil {
				cached += *v
			}
		}
		if cached > *s.TokensIn {
			return localapi.BadRequest("spent: cache_read_tokens and cache_write_tokens are part of tokens_in (%d), got %d", *s.TokensIn, cached)
		}
	}
	if c := s.CostUSD; c != nil && !(*c >= 0 && *c <= 1e9) {
		return localapi.BadRequest("spent: cost_usd must be 0 to 1e9, got %v", *c)
	}
	return nil
}

// Spent records what the agent's client reported it spent (tokens and
// cost): an agent with no report shows them as unknown.
func (b *Inbox) Spent(ctx context.Context, agent string, s localapi.Spend) error {
	a, err := parseAgent(agent)
	if err != nil {
		return err
	}
	if err := checkSpent(&s); err != nil {
		return err
	}
	b.spent(a, &s)
	return nil
}

func (b *Inbox) spent(a identity.AgentName, s *localapi.Spend) {
	if s == nil {
		return
	}
	in, out, cost := int64(-1), int64(-1), -1.0
	if s.TokensIn != nil {
		in = *s.TokensIn
	}
	if s.TokensOut != nil {
		out = *s.TokensOut
	}
	if s.CostUSD != nil {
		cost = *s.CostUSD
	}
	b.cfg.Usage.Spent(string(a), in, out, cost)
	read, write := int64(-1), int64(-1)
	if s.CacheReadTokens != nil {
		read = *s.CacheReadTokens
	}
	if s.CacheWriteTokens != nil {
		write = *s.CacheWriteTokens
	}
	b.cfg.Usage.Cached(string(a), read, write)
}
