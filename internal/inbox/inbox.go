// Package inbox keeps what each local agent has yet to see: asks addressed
// to it (someone is blocked on it), invitations of this node into rooms, and
// unread messages in the rooms it takes part in. The MCP server hands these
// out inside every tool result (piggy-back), once each, while parley_read
// keeps its own cursor so everything stays readable.
//
// Cursors follow each room's local arrival log (rooms.Manager.Since), which
// only grows, so an event that arrives late through catch-up is not missed.
// They live in the store under s/a/<agent>/{d,r,j}/<room>; session keys map
// to agent names under s/k/<session>.
package inbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/store/schema"
	"github.com/parley-mesh/parley/rooms"
)

// Rooms is what the inbox needs of the rooms service.
type Rooms interface {
	List() []rooms.Info
	Since(id identity.RoomID, after uint64, limit int) ([]rooms.View, error)
	Find(eid rooms.ID) (rooms.View, error)
	Changes() (<-chan struct{}, func())
	Self() peer.ID
}

var _ Rooms = (*rooms.Manager)(nil)

// Limits of one piggy-back.
const (
	maxUrgent   = 20 // asks listed in one result
	maxMessages = 10 // unread messages listed in one result; the rest are counted
	scanBatch   = 1000
)

// ErrUnknownAgent is returned when a session or agent name is unusable.
var ErrUnknownAgent = errors.New("inbox: unknown agent")

// Item is one thing an agent should see.
type Item struct {
	ID       string `json:"id"`
	Room     string `json:"room"`
	RoomName string `json:"room_name,omitempty"`
	From     string `json:"from"`
	Text     string `json:"text"`
	Urgent   bool   `json:"urgent"`
	Kind     string `json:"kind"` // ask, invitation or message
	ReplyTo  string `json:"reply_to,omitempty"`
	Answer   string `json:"answer"` // the exact call that answers it
}

// Pending is what a tool result carries.
type Pending struct {
	Items []Item `json:"items"`
	// More counts unread messages per room that were not listed.
	More map[string]int `json:"more,omitempty"`
}

// Empty reports whether there is nothing to show.
func (p Pending) Empty() bool { return len(p.Items) == 0 && len(p.More) == 0 }

// Inbox serves every local agent's pending items.
type Inbox struct {
	rooms Rooms
	db    rooms.Store

	mu sync.Mutex // serializes cursor reads and writes
}

// New returns an inbox over the node's rooms and store.
func New(r Rooms, db rooms.Store) *Inbox { return &Inbox{rooms: r, db: db} }

func (b *Inbox) cursor(agent identity.AgentName, kind string, room identity.RoomID) (uint64, bool) {
	v, ok, err := b.db.Lookup(schema.AgentCursor(string(agent), kind, string(room)))
	if err != nil || !ok {
		return 0, false
	}
	if len(v) != 8 {
		return 0, true
	}
	return beUint(v), true
}

func beUint(v []byte) uint64 {
	var n uint64
	for _, c := range v {
		n = n<<8 | uint64(c)
	}
	return n
}

// Joined marks agent as taking part in room: its messages become the
// agent's unread items.
func (b *Inbox) Joined(agent identity.AgentName, room identity.RoomID) error {
	return b.db.Apply([]schema.Op{{Key: schema.AgentCursor(string(agent), "j", string(room)), Val: []byte{}}}, false)
}

func (b *Inbox) joined(agent identity.AgentName, room identity.RoomID) bool {
	_, ok := b.cursor(agent, "j", room)
	return ok
}

// addressedTo reports whether a message's To names agent of this node.
func (b *Inbox) addressedTo(to string, agent identity.AgentName) bool {
	if to == "" {
		return false
	}
	a, err := identity.ParseAgentAddr(to)
	if err != nil {
		return false
	}
	return a.Name == agent && (a.Peer == "" || a.Peer == b.rooms.Self())
}

// From formats an event's sender as an agent address.
func From(v rooms.View) string { return string(v.Agent) + "@" + v.Author.String() }

// Take returns the agent's new items and marks them delivered.
func (b *Inbox) Take(agent identity.AgentName) (Pending, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	self := b.rooms.Self()
	var out Pending
	var urgent, invites, msgs []Item
	var ops []schema.Op
	for _, info := range b.rooms.List() {
		d, _ := b.cursor(agent, "d", info.ID)
		in := b.joined(agent, info.ID)
		vs, err := b.rooms.Since(info.ID, d, scanBatch)
		if err != nil {
			return Pending{}, err
		}
		if len(vs) == 0 {
			continue
		}
		for _, v := range vs {
			own := v.Author == self && v.Agent == agent
			it := Item{ID: v.ID.String(), Room: string(info.ID), RoomName: info.Name, From: From(v), Text: v.Text}
			if v.ReplyTo != nil {
				it.ReplyTo = v.ReplyTo.String()
			}
			switch {
			case own:
			case v.Kind == rooms.KindMessage && b.addressedTo(v.To, agent):
				it.Kind, it.Urgent = "ask", true
				it.Answer = fmt.Sprintf(`parley_reply {"message_id":%q,"text":"<your answer>"}`, it.ID)
				urgent = append(urgent, it)
				if !in {
					in = true
					ops = append(ops, schema.Op{Key: schema.AgentCursor(string(agent), "j", string(info.ID)), Val: []byte{}})
				}
			case v.Kind == rooms.KindInvite && v.Target == self && !in:
				it.Kind = "invitation"
				it.Text = fmt.Sprintf("%s invited this node into room %q", it.From, info.Name)
				it.Answer = fmt.Sprintf(`parley_read {"room":%q}, then parley_say {"room":%q,"text":"..."}`, info.ID, info.ID)
				invites = append(invites, it)
			case in && v.Kind == rooms.KindMessage:
				it.Kind = "message"
				it.Answer = fmt.Sprintf(`parley_reply {"message_id":%q,"text":"..."} or parley_say {"room":%q,"text":"..."}`, it.ID, info.ID)
				msgs = append(msgs, it)
			}
		}
		ops = append(ops, schema.Op{Key: schema.AgentCursor(string(agent), "d", string(info.ID)), Val: schema.BE8(vs[len(vs)-1].Arrival)})
	}
	if len(urgent) > maxUrgent {
		for _, it := range urgent[maxUrgent:] {
			out.more(it.Room)
		}
		urgent = urgent[:maxUrgent]
	}
	if len(msgs) > maxMessages {
		for _, it := range msgs[:len(msgs)-maxMessages] {
			out.more(it.Room)
		}
		msgs = msgs[len(msgs)-maxMessages:] // the newest
	}
	out.Items = slices.Concat(urgent, invites, msgs)
	if len(ops) > 0 {
		if err := b.db.Apply(ops, false); err != nil {
			return Pending{}, fmt.Errorf("inbox: save cursors: %w", err)
		}
	}
	return out, nil
}

func (p *Pending) more(room string) {
	if p.More == nil {
		p.More = make(map[string]int)
	}
	p.More[room]++
}

// Read returns up to limit events the agent has not read, in one room or
// (room empty) in every room it takes part in, and moves its read cursor.
// more says that there is more to read.
func (b *Inbox) Read(agent identity.AgentName, room identity.RoomID, limit int) (out []rooms.View, more bool, err error) {
	if limit <= 0 || limit > 500 {
		limit = 50
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var ids []identity.RoomID
	if room != "" {
		ids = []identity.RoomID{room}
	} else {
		for _, info := range b.rooms.List() {
			if b.joined(agent, info.ID) {
				ids = append(ids, info.ID)
			}
		}
	}
	var ops []schema.Op
	for _, id := range ids {
		left := limit - len(out)
		if left <= 0 {
			more = true
			break
		}
		r, _ := b.cursor(agent, "r", id)
		vs, err := b.rooms.Since(id, r, left+1)
		if err != nil {
			return nil, false, err
		}
		if len(vs) > left {
			vs, more = vs[:left], true
		}
		out = append(out, vs...)
		ops = append(ops, schema.Op{Key: schema.AgentCursor(string(agent), "j", string(id)), Val: []byte{}})
		if len(vs) > 0 {
			ops = append(ops, schema.Op{Key: schema.AgentCursor(string(agent), "r", string(id)), Val: schema.BE8(vs[len(vs)-1].Arrival)})
		}
	}
	if len(ops) > 0 {
		if err := b.db.Apply(ops, false); err != nil {
			return nil, false, fmt.Errorf("inbox: save cursors: %w", err)
		}
	}
	return out, more, nil
}

// WaitReply blocks until a reply to ask (a message whose reply_to is ask,
// from anyone but the asker) is stored, or until wait passes (nil, nil).
func (b *Inbox) WaitReply(ctx context.Context, ask rooms.ID, wait time.Duration) (*rooms.View, error) {
	av, err := b.rooms.Find(ask)
	if err != nil {
		return nil, err
	}
	changes, stop := b.rooms.Changes()
	defer stop()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var after uint64
	for {
		for {
			vs, err := b.rooms.Since(av.Room, after, scanBatch)
			if err != nil {
				return nil, err
			}
			for _, v := range vs {
				if v.Kind == rooms.KindMessage && v.ReplyTo != nil && *v.ReplyTo == ask &&
					!(v.Author == av.Author && v.Agent == av.Agent) {
					return &v, nil
				}
			}
			if len(vs) == 0 {
				break
			}
			after = vs[len(vs)-1].Arrival
		}
		select {
		case <-changes:
		case <-timer.C:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Wait blocks until the agent has pending items or wait passes, and takes
// them.
func (b *Inbox) Wait(ctx context.Context, agent identity.AgentName, wait time.Duration) (Pending, error) {
	changes, stop := b.rooms.Changes()
	defer stop()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		p, err := b.Take(agent)
		if err != nil || !p.Empty() {
			return p, err
		}
		select {
		case <-changes:
		case <-timer.C:
			return Pending{}, nil
		case <-ctx.Done():
			return Pending{}, ctx.Err()
		}
	}
}

// Bind maps a session key to an agent name and returns the name: the one
// bound before, else name if given, else fallback.
func (b *Inbox) Bind(session string, name, fallback identity.AgentName) (identity.AgentName, error) {
	if session == "" || len(session) > 256 || strings.ContainsAny(session, "/\x00") {
		return "", fmt.Errorf("%w: bad session key %q", ErrUnknownAgent, session)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	key := schema.Session(session)
	if name == "" {
		if v, ok, err := b.db.Lookup(key); err == nil && ok {
			if a, err := identity.ParseAgentName(string(v)); err == nil {
				return a, nil
			}
		}
		name = fallback
	}
	if _, err := identity.ParseAgentName(string(name)); err != nil {
		return "", err
	}
	if err := b.db.Apply([]schema.Op{{Key: key, Val: []byte(name)}}, false); err != nil {
		return "", err
	}
	return name, nil
}
