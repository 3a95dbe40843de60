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
	defer st.mu.Unlock()
	out := []localapi.Item{}
	for _, q := range sortedAsks(st.asked) {
		if q.rec.Reply != nil {
			continue
		}
		out = append(out, b.askItem(q.id, q.rec, "ask", ""))
	}
	return out, nil
}
