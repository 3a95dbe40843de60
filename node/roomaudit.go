package node

import (
	"maps"
	"strconv"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/time/rate"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/ratelimit"
	"github.com/parley-mesh/parley/rooms"
)

// roomAuditBatch is how many events the room auditor reads at once.
const roomAuditBatch = 512

// RoomAudits is how many decisions a minute of one other node about third
// nodes (invites, removals, leaves) the room auditor records. A member can
// invite without end, one event each; past this bound its decisions are
// counted, and the next line recorded for it says how many were left out
// (unlogged_before). The same bound holds for invites of this node's agents
// into a room it is in (a member can name agent after agent). Only the
// decisions that let this node into a room or put it out of one are always
// recorded: each happens once until the other does. The room keeps every
// event: Since and the log show them all.
const RoomAudits = 20

// RoomAuditsInAll bounds those lines across deciding nodes, a minute: a
// member can bring in nodes of its own making (fresh keys), each with a
// RoomAudits of its own. Past it, decisions are counted as past
// RoomAudits are.
const RoomAuditsInAll = 3 * RoomAudits

// maxUnlogged bounds the nodes whose left-out decisions are counted.
const maxUnlogged = 4096

// roomAuditor records in the node's audit log the membership decisions other
// nodes take in its rooms, as their events arrive: this node invited into a
// room or removed from one, an agent of it removed by the room's creator,
// and, in rooms it is in, other nodes invited, removed or leaving (actor
// peer:<the deciding node>), and invites from nodes that are not contacts,
// held for the user (room.held). The node's own decisions are recorded
// where it takes them (internal/inbox).
//
// It follows the rooms' arrival logs from where they stood when the node
// started (what came before was recorded by an earlier run); a room joined
// since is read from its start, and there only decisions about this node, and
// those made after the invite that brought it in, are recorded (not the
// room's history). Events stored while the node starts, before the auditor
// takes its place, are not recorded.
type roomAuditor struct {
	n      *Node
	self   peer.ID
	cursor map[identity.RoomID]uint64 // room → the last arrival read
	// joined is, per room, the depth after which other nodes' decisions
	// about third nodes are recorded (0 for rooms the node was in at start;
	// absent until the invite that brought the node in was seen).
	joined map[identity.RoomID]uint64
	// lim bounds the lines per deciding node (RoomAudits a minute), and
	// unlogged counts the decisions it left out since that node's last
	// line (at most maxUnlogged nodes).
	lim      *ratelimit.Limiter[peer.ID]
	all      *rate.Limiter // RoomAuditsInAll a minute
	unlogged map[peer.ID]int
	// out holds the rooms this node was removed from (since its last
	// admission): a removal of it there is no news, an invite of it is.
	out map[identity.RoomID]bool
}

// startRoomAudit starts the room auditor (once the rooms run).
func (n *Node) startRoomAudit() {
	a := newRoomAuditor(n)
	changes, stop := n.rooms.Changes()
	_, seen := n.rooms.ChangedSince(^uint64(0))
	for _, in := range n.rooms.List() {
		a.cursor[in.ID] = in.Events
		a.joined[in.ID] = 0
	}
	held := map[identity.RoomID]time.Time{}
	for _, w := range n.rooms.Invites() {
		held[w.Room] = w.At
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer stop()
		tick := time.NewTicker(heldAuditInterval)
		defer tick.Stop()
		for {
			select {
			case <-n.ctx.Done():
				return
			case <-tick.C:
				a.held(held)
				continue
			case <-changes:
			}
			var ids []identity.RoomID
			ids, seen = n.rooms.ChangedSince(seen)
			for _, id := range ids {
				a.read(id)
			}
		}
	}()
}

func newRoomAuditor(n *Node) *roomAuditor {
	return &roomAuditor{n: n, self: n.id, cursor: map[identity.RoomID]uint64{}, joined: map[identity.RoomID]uint64{},
		lim: ratelimit.New[peer.ID](RoomAudits, 0), all: rate.NewLimiter(rate.Limit(float64(RoomAuditsInAll)/60), RoomAuditsInAll), unlogged: map[peer.ID]int{}, out: map[identity.RoomID]bool{}}
}

// heldAuditInterval is how often the auditor looks for new invites that
// wait for the user.
const heldAuditInterval = 2 * time.Second

// held records the invites that came to wait for the user since the last
// look (seen: those already recorded, by room and arrival time).
func (a *roomAuditor) held(seen map[identity.RoomID]time.Time) {
	now := map[identity.RoomID]time.Time{}
	for _, w := range a.n.rooms.Invites() {
		now[w.Room] = w.At
		if at, ok := seen[w.Room]; ok && at.Equal(w.At) {
			continue
		}
		a.n.Audit(audit.Record{Actor: "peer:" + w.Inviter.String(), Action: audit.RoomHeld, Subject: string(w.Room),
			Detail: map[string]string{"name": w.Name, "expires": w.Expires.UTC().Format(time.RFC3339)}})
	}
	clear(seen)
	maps.Copy(seen, now)
}

// read records the decisions among room's events that arrived since the
// last read.
func (a *roomAuditor) read(room identity.RoomID) {
	for {
		evs, err := a.n.rooms.SinceKept(room, a.cursor[room], roomAuditBatch)
		if err != nil {
			return // gone meanwhile
		}
		for _, e := range evs {
			a.cursor[room] = e.Arrival
			a.event(e)
		}
		if len(evs) < roomAuditBatch {
			return
		}
	}
}

// event records e when it is another node's decision that changes who can
// reach whom.
func (a *roomAuditor) event(e rooms.View) {
	if e.Author == a.self && e.Kind == rooms.KindLeave && e.Target == a.self {
		a.out[e.Room] = true // this node left: an invite back lets it in again
	}
	if e.Author == a.self || (e.Kind != rooms.KindInvite && e.Kind != rooms.KindLeave) {
		return
	}
	if e.Target == "" {
		if e.Kind == rooms.KindLeave {
			a.agentRemoved(e)
		}
		return
	}
	about := e.Target == a.self
	// always: the decisions that let this node in or put it out, once each
	always := false
	if about {
		_, known := a.joined[e.Room]
		if e.Kind == rooms.KindInvite {
			always = !known || a.out[e.Room] // an admission (maybe by an invite of one of its agents)
			if !known {
				a.joined[e.Room] = e.Depth
			}
			delete(a.out, e.Room)
		} else {
			always = !a.out[e.Room] // a removal
			a.out[e.Room] = true
		}
	}
	if since, ok := a.joined[e.Room]; !about && (!ok || e.Depth <= since) {
		return
	}
	r := audit.Record{Actor: "peer:" + e.Author.String(), Subject: string(e.Room), Detail: map[string]string{"event": e.ID.String()}}
	switch {
	case e.Kind == rooms.KindInvite:
		r.Action, r.Detail["member"] = audit.RoomInvite, e.Target.String()
		if e.To != "" {
			r.Detail["agent"] = e.To
		}
	case e.Target == e.Author:
		r.Action, r.Detail["peer"] = audit.RoomLeave, e.Target.String()
	default:
		r.Action, r.Detail["peer"] = audit.RoomRemove, e.Target.String()
	}
	a.write(r, e.Author, always)
}

// agentRemoved records leave event e when another node (the room's
// creator) takes an agent of this node out of the room by it: a leave that
// names the agent (To) rather than a node. An agent that leaves by itself
// names no one. Its node records the removal as it records the invite that
// brought the agent in; like other nodes' decisions, within RoomAudits a
// minute of the deciding node.
func (a *roomAuditor) agentRemoved(e rooms.View) {
	agent, err := identity.ParseAgentAddr(e.To)
	if err != nil || agent.Peer != a.self {
		return
	}
	if since, ok := a.joined[e.Room]; !ok || e.Depth <= since {
		return // before this node was in the room: its history
	}
	a.write(audit.Record{Actor: "peer:" + e.Author.String(), Action: audit.RoomRemove, Subject: string(e.Room),
		Detail: map[string]string{"event": e.ID.String(), "peer": a.self.String(), "agent": e.To}}, e.Author, false)
}

// write hands r, a decision of node by, to the audit log: always when
// always is set (this node's admission or removal), else within by's
// RoomAudits a minute (counting the ones left out, said on its next line).
func (a *roomAuditor) write(r audit.Record, by peer.ID, always bool) {
	if now := time.Now(); !always && (!a.lim.Allow(by, now) || !a.all.AllowN(now, 1)) {
		if _, ok := a.unlogged[by]; ok || len(a.unlogged) < maxUnlogged {
			a.unlogged[by]++
		}
		return
	}
	if n := a.unlogged[by]; n > 0 {
		r.Detail["unlogged_before"] = strconv.Itoa(n)
		delete(a.unlogged, by)
	}
	a.n.Audit(r)
}
