package inbox

import (
	"context"
	"errors"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/rooms"
	"github.com/parley-mesh/parley/rooms/board"
)

// The local API's room views (localapi.Rooms).

func roomInfo(in rooms.Info) localapi.RoomInfo {
	out := localapi.RoomInfo{RoomID: string(in.ID), Name: in.Name, Purpose: in.Purpose, Creator: in.Creator.String(),
		Members: make([]string, len(in.Members)), Agents: append([]string{}, in.Agents...), Events: in.Events,
		Heads: in.Heads, Opened: in.Opened}
	for i, p := range in.Members {
		out.Members[i] = p.String()
	}
	if in.InvitedBy != "" {
		out.InvitedBy = in.InvitedBy.String()
	}
	return out
}

// event is a stored event in the API's terms.
func event(v rooms.View) localapi.Event {
	e := localapi.Event{ID: v.ID.String(), Room: string(v.Room), Author: v.Author.String(), Agent: string(v.Agent),
		From: from(v), Seq: v.Seq, Depth: v.Depth, Kind: string(v.Kind), Text: v.Text, Purpose: v.Purpose, To: v.To, Time: v.Time}
	if v.ReplyTo != nil {
		e.ReplyTo = v.ReplyTo.String()
	}
	if v.Target != "" {
		e.Target = v.Target.String()
	}
	if v.Kind == rooms.KindClaim || v.Kind == rooms.KindRelease {
		e.Text = board.Describe(string(v.Kind), v.Body)
	}
	return e
}

// List implements localapi.Rooms.
func (b *Inbox) List(ctx context.Context) []localapi.RoomInfo {
	ins := b.rooms.List()
	out := make([]localapi.RoomInfo, len(ins))
	for i, in := range ins {
		out[i] = roomInfo(in)
	}
	return out
}

// Get implements localapi.Rooms.
func (b *Inbox) Get(ctx context.Context, room string) (localapi.RoomInfo, error) {
	in, err := b.resolve(room)
	if err != nil {
		return localapi.RoomInfo{}, err
	}
	return roomInfo(in), nil
}

// Log implements localapi.Rooms.
func (b *Inbox) Log(ctx context.Context, room string, limit int, before string) ([]localapi.Event, error) {
	in, err := b.resolve(room)
	if err != nil {
		return nil, err
	}
	var bp *rooms.ID
	if before != "" {
		id, err := rooms.ParseID(before)
		if err != nil && len(before) >= rooms.MinIDPrefix && len(before) < len(id.String()) {
			// The first characters of an ID, as the log shows it (as
			// --reply-to takes them).
			id, err = b.rooms.EventByPrefix(in.ID, before)
			if err != nil && !errors.Is(err, rooms.ErrMalformed) {
				return nil, b.roomErr(in.ID, err)
			}
		}
		if err != nil {
			return nil, localapi.BadRequest("--before %q is not an event ID (give it whole, or its first %d characters or more, as `parley room log ROOM` shows them)", before, rooms.MinIDPrefix)
		}
		bp = &id
	}
	vs, err := b.rooms.Log(in.ID, limit, bp)
	if err != nil {
		return nil, apiError(err)
	}
	out := make([]localapi.Event, len(vs))
	for i, v := range vs {
		out[i] = event(v)
	}
	return out, nil
}

// Tail implements localapi.Rooms.
func (b *Inbox) Tail(ctx context.Context, room string) (<-chan localapi.Event, func(), error) {
	in, err := b.resolve(room)
	if err != nil {
		return nil, nil, err
	}
	ch, stop, err := b.rooms.Subscribe(in.ID, 4096)
	if err != nil {
		return nil, nil, apiError(err)
	}
	out := make(chan localapi.Event)
	done := make(chan struct{})
	go func() {
		defer close(out)
		for v := range ch {
			select {
			case out <- event(v):
			case <-done:
				return
			}
		}
	}()
	return out, func() {
		stop()
		close(done)
	}, nil
}

// Remove implements localapi.Rooms.
func (b *Inbox) Remove(ctx context.Context, room string, req localapi.RemoveRequest) (localapi.EventID, error) {
	in, err := b.resolve(room)
	if err != nil {
		return localapi.EventID{}, err
	}
	by := identity.HumanAgent
	if req.Agent != "" {
		if by, err = parseAgent(req.Agent); err != nil {
			return localapi.EventID{}, err
		}
		// As for a node's leave: an agent that left the room is told so;
		// the node's user removes for its node whether or not it left.
		if by != identity.HumanAgent {
			if err := b.mustBeIn(by, in); err != nil {
				return localapi.EventID{}, err
			}
		}
		if err := b.mustBeKnown(ctx, by, &in); err != nil {
			return localapi.EventID{}, err
		}
		// A removal is a post of the agent's: a muted or killed agent
		// removes nobody (its node's user still does).
		if by != identity.HumanAgent {
			if err := b.checkPost(by); err != nil {
				return localapi.EventID{}, err
			}
		}
	}
	s := strings.TrimSpace(req.PeerID)
	if !strings.Contains(s, "@") {
		p, err := peer.Decode(s)
		if err != nil {
			return localapi.EventID{}, localapi.BadRequest("%.100q is not a peer ID or an agent's address NAME@PEER_ID (`parley room list --json` lists each room's member nodes and agents)", req.PeerID)
		}
		eid, err := b.rooms.Remove(ctx, in.ID, p, by)
		if err != nil {
			return localapi.EventID{}, apiError(err)
		}
		b.record(by, audit.RoomRemove, in.ID, map[string]string{"peer": p.String(), "event": eid.String()})
		return localapi.EventID{ID: eid.String()}, nil
	}
	m, err := b.parseMember(s)
	if err != nil {
		return localapi.EventID{}, err
	}
	eid, err := b.rooms.RemoveAgent(ctx, in.ID, identity.AgentAddr{Name: m.name, Peer: m.peer}, by)
	if err != nil {
		return localapi.EventID{}, apiError(err)
	}
	b.record(by, audit.RoomRemove, in.ID, map[string]string{"peer": m.peer.String(), "agent": m.String(), "event": eid.String()})
	if m.peer == b.self {
		b.leftRoom(m.name, in.ID)
	}
	return localapi.EventID{ID: eid.String()}, nil
}

// Event implements localapi.Rooms.
func (b *Inbox) Event(ctx context.Context, id string) (localapi.Event, error) {
	v, err := b.find(id, "") // the node's user's view: every room
	if err != nil {
		return localapi.Event{}, err
	}
	return event(v), nil
}
