package inbox

import (
	"errors"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/gitrepo"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/turns"
	"github.com/parley-mesh/parley/rooms"
	"github.com/parley-mesh/parley/rooms/board"
)

// scan brings an agent's state up to date: it reads the new events of the
// rooms that changed since its last scan (and of those left unfinished),
// and notes asks it owes, replies to its asks, invitations, and unread
// messages. Callers hold st.mu; they flush st.ops.
func (b *Inbox) scan(agent identity.AgentName, st *state) error {
	b.expireHands(st)
	changed, seq := b.rooms.ChangedSince(st.seen)
	for id := range st.dirty {
		if !slices.Contains(changed, id) {
			changed = append(changed, id)
		}
	}
	for id := range st.recount {
		if !slices.Contains(changed, id) {
			changed = append(changed, id)
		}
	}
	me := b.addr(agent)
	for _, id := range changed {
		rec, ok, err := b.rooms.AgentState(id, me)
		if errors.Is(err, rooms.ErrUnknownRoom) {
			b.forget(agent, st, id) // the node left it
			continue
		}
		if err != nil {
			return err
		}
		if agent == identity.HumanAgent {
			if err := b.nodeInvited(st, id); err != nil {
				return err
			}
		}
		_, tracked := st.scan[id]
		if !ok || !rec.In {
			delete(st.dirty, id)
			if tracked { // it left: nothing of the room is news to it now
				st.unread[id] = 0
				delete(st.recount, id)
				st.dropOwedIn(agent, id) // it cannot answer them there
				st.dropInvitationsTo(agent, id)
				if rec.Removed() && rec.RemovalDepth > st.removed[id] {
					b.removed(agent, st, id, rec)
				}
			}
			continue
		}
		// New here, or back after it left: what came before its membership
		// is history, not news.
		if start := rec.Arrival - min(rec.Arrival, 1); !tracked || st.scan[id] < start {
			st.setCursor(agent, "d", id, start)
			st.setCursor(agent, "r", id, max(st.read[id], start))
			delete(st.recount, id)
			st.unread[id] = 0
		}
		if st.recount[id] {
			if err := b.recount(st, id); err != nil {
				return err
			}
		}
		if err := b.scanRoom(agent, st, id, me); err != nil {
			return err
		}
	}
	st.seen = seq
	b.expire(agent, st)
	return nil
}

// nodeInviteKeep is how long after this node opened a room on an invite
// of it that invite is still told to the node's user as news, for a room
// opened before this database's inbox told node invites (Inbox.toldSince:
// a home of an older Parley, whose user is not told of all its rooms at
// once). A room opened since is told however late the user first looks.
// The age is judged by this node's clock (rooms.Info.Opened), not by the
// invite's date, which the inviting node's clock wrote: an inviter whose
// clock was days behind had its invite taken as history at once, and its
// room never told.
const nodeInviteKeep = 7 * 24 * time.Hour

// nodeInvited tells the node's user (human) that another node invited this
// node into room id by its peer ID (an invite with no agent named: `parley
// room invite ROOM PEER_ID`), once for each such invite that let it in:
// its depth is kept (the "i" cursor), so a rescan or a restart does not
// tell it again, and an invite that let the node back in later does. A
// room this node founded, one it came into by an invite naming an agent
// (noted as that agent's invitation), and one the user opened by accepting
// its waiting invite (`parley invites accept`: the user knows of it) give
// none. (The node's join, which it posts as human once the invite is
// stored, makes human a member: the scan then reads the room from after
// the join, and would not see the invite.) Callers hold st.mu.
func (b *Inbox) nodeInvited(st *state, id identity.RoomID) error {
	v, ok, err := b.rooms.Admission(id)
	if errors.Is(err, rooms.ErrUnknownRoom) || err == nil && !ok {
		return nil
	}
	if err != nil {
		return err
	}
	if v.Kind != rooms.KindInvite || v.To != "" || v.Target != b.self || v.Author == b.self || v.Depth <= st.invited[id] {
		return nil
	}
	in, err := b.rooms.Get(id)
	if errors.Is(err, rooms.ErrUnknownRoom) {
		return nil
	}
	if err != nil {
		return err
	}
	st.setCursor(identity.HumanAgent, "i", id, v.Depth)
	if in.Accepted || in.Opened.Before(b.toldSince) && b.now().Sub(in.Opened) > nodeInviteKeep {
		return nil
	}
	if isBoardRoom(in.Name) {
		// A contact's board, shared by inviting this node into its room:
		// Parley's plumbing, not a user asking this one to take part in a
		// conversation (its claims reach the agents as board notices).
		return nil
	}
	it := item(v, in.Name)
	it.Kind = "invitation"
	st.putNote(identity.HumanAgent, it)
	return nil
}

// removed tells the agent that the room's creator took it out of room id
// (a note of kind "removed"), once for each removal: its depth is kept (the
// "x" cursor), and a removal is later than the one before it.
func (b *Inbox) removed(agent identity.AgentName, st *state, id identity.RoomID, rec rooms.AgentMember) {
	v, err := b.rooms.Find(rec.Removal)
	if err != nil {
		st.dirty[id] = true // not readable yet: the next scan tells it
		return
	}
	st.setCursor(agent, "x", id, rec.RemovalDepth)
	name := ""
	if in, err := b.rooms.Get(id); err == nil {
		name = in.Name
	}
	it := item(v, name)
	it.Kind = "removed"
	st.putNote(agent, it)
}

// scanRoom reads one room's new events for the agent.
func (b *Inbox) scanRoom(agent identity.AgentName, st *state, id identity.RoomID, me string) error {
	delete(st.dirty, id)
	name := ""
	if in, err := b.rooms.Get(id); err == nil {
		name = in.Name
	}
	after := st.scan[id]
	for done := 0; ; {
		vs, err := b.rooms.Since(id, after, scanBatch)
		if err != nil {
			return err
		}
		for _, v := range vs {
			b.note(agent, st, v, name, me)
		}
		if len(vs) == 0 {
			break
		}
		after = vs[len(vs)-1].Arrival
		st.setCursor(agent, "d", id, after)
		if done += len(vs); done >= maxScan {
			st.dirty[id] = true
			break
		}
	}
	return nil
}

// note takes one new event into the agent's state.
func (b *Inbox) note(agent identity.AgentName, st *state, v rooms.View, roomName, me string) {
	id := v.ID.String()
	own := v.Author == b.self && v.Agent == agent
	if b.hidden(v) {
		return // a muted agent's event: nothing for this node's agents
	}
	if v.ReplyTo != nil {
		// A reply answers an ask of its own room only: a message of
		// another room that names the ask (a node removed from the ask's
		// room knows its ID) answers nothing.
		ask := v.ReplyTo.String()
		if a := st.owed[ask]; a != nil && a.Room == v.Room && from(v) != a.From {
			if own {
				// The agent's own answer, seen by a scan before its Say
				// noted it (Say counts it when it comes first). It read
				// the ask, and with it the invitation the ask stood for.
				b.cfg.Usage.Answered(string(agent), string(v.Room), b.now().Sub(time.UnixMilli(a.Time)))
				st.sawAsk(agent, ask)
				if _, held := st.notes[a.Invite]; held && a.Invite != "" {
					st.dropNote(agent, a.Invite)
				}
			}
			st.dropAsk(agent, "o", ask) // answered, by whoever came first
		}
		if a := st.asked[ask]; a != nil && a.Room == v.Room && a.Reply == nil && !own {
			reply := item(v, roomName)
			reply.Kind = "reply"
			a.Reply = &reply
			a.Text = b.askText(st, "q", ask) // for its record: memory drops it again
			st.putAsk(agent, "q", ask, a)
			st.putNote(agent, reply)
			return // shown as the reply, not as a message
		}
	}
	switch {
	case own:
		if v.Kind == rooms.KindAsk {
			if _, ok := st.asked[id]; !ok {
				st.putAsk(agent, "q", id, &askRec{Room: v.Room, From: me, Text: v.Text, To: v.To, Time: v.Time})
			}
		}
	case b.askFor(st, v):
		shown := v.Arrival <= st.read[v.Room] // Read showed it already
		rec := &askRec{Room: v.Room, From: from(v), Text: v.Text, To: v.To, Time: v.Time, Seen: b.now().UnixMilli(), Shown: shown}
		rec.Invite = b.foldInvite(st, v)
		rec.Brought = rec.Invite != ""
		st.putAsk(agent, "o", id, rec)
		st.news++
	case v.Kind == rooms.KindInvite && b.isMe(v.To, agent):
		it := item(v, roomName)
		it.Kind = "invitation"
		st.putNote(agent, it)
	case b.unreadMessage(st, v):
		if v.Arrival > st.read[v.Room] {
			st.unread[v.Room]++
			st.news++
		}
	}
}

// askFor reports whether v is an ask the agent owes (or owed) an answer:
// someone else's ask to it, or to a room it is in.
func (b *Inbox) askFor(st *state, v rooms.View) bool {
	return v.Kind == rooms.KindAsk && !(v.Author == b.self && v.Agent == st.agent) && (b.isMe(v.To, st.agent) || v.To == "")
}

// foldInvite returns the invitation the asker's node posted to bring the
// agent into the room for ask v, or "". Such an ask names that invite
// (its reply_to: Ask sets it to the invite it posted for the ask), and is
// the asker node's next event in the room. An invite made by hand and an
// ask after it, however soon, are two items, as is an ask of a node of an
// earlier build, which names no invite. The agent is asked, not invited:
// while the ask waits to be shown, it is one ask that says so (pending);
// the invitation itself is dropped only once the ask was shown, so an ask
// that ends unshown (expired, answered by another) leaves the invitation
// as it was.
func (b *Inbox) foldInvite(st *state, v rooms.View) string {
	if v.To == "" || v.ReplyTo == nil {
		return ""
	}
	id := v.ReplyTo.String()
	it, ok := st.notes[id]
	if !ok || it.Kind != "invitation" || it.Room != string(v.Room) || it.From != from(v) {
		return ""
	}
	inv, err := b.rooms.Find(*v.ReplyTo)
	if err != nil || inv.Kind != rooms.KindInvite || inv.Author != v.Author || inv.Seq+1 != v.Seq {
		return ""
	}
	return id
}

// isMe reports whether address to names agent of this node.
func (b *Inbox) isMe(to string, agent identity.AgentName) bool {
	if to == "" {
		return false
	}
	a, err := identity.ParseAgentAddr(to)
	return err == nil && a.Name == agent && (a.Peer == "" || a.Peer == b.self)
}

// recount counts a room's unread messages again (after a restart).
func (b *Inbox) recount(st *state, id identity.RoomID) error {
	delete(st.recount, id)
	n := 0
	for after := st.read[id]; after < st.scan[id]; {
		vs, err := b.rooms.Since(id, after, scanBatch)
		if err != nil || len(vs) == 0 {
			return err
		}
		for _, v := range vs {
			if v.Arrival > st.scan[id] {
				break
			}
			if b.unreadMessage(st, v) {
				n++
			}
		}
		after = vs[len(vs)-1].Arrival
	}
	st.unread[id] = n
	return nil
}

// unreadMessage reports whether v counts as a message for the agent to
// read: a message or ask of someone else, but not an ask it owes (or owed:
// one to it, or to its room), which is shown as an ask.
func (b *Inbox) unreadMessage(st *state, v rooms.View) bool {
	if st.replyToOwn(v) {
		return false
	}
	switch {
	case v.Author == b.self && v.Agent == st.agent:
		return false
	case b.hidden(v):
		return false
	case v.Kind == rooms.KindMessage:
		return true
	case v.Kind == rooms.KindAsk:
		return v.To != "" && !b.isMe(v.To, st.agent)
	}
	return false
}

// replyToOwn reports whether v is the reply noted to one of the agent's
// asks: it is shown as such (by the ask, parley_wait, or the pending items),
// not as a message.
func (st *state) replyToOwn(v rooms.View) bool {
	if v.ReplyTo == nil {
		return false
	}
	a := st.asked[v.ReplyTo.String()]
	return a != nil && a.Reply != nil && a.Reply.ID == v.ID.String()
}

// expire drops asks past their TTL.
func (b *Inbox) expire(agent identity.AgentName, st *state) {
	cut := b.now().Add(-b.cfg.AskTTL).UnixMilli()
	for id, a := range st.owed {
		if a.since() < cut {
			st.dropAsk(agent, "o", id)
		}
	}
	for id, a := range st.asked {
		if a.Time < cut {
			st.dropAsk(agent, "q", id)
		}
	}
}

// forget drops what an agent kept of a room this node is no longer in.
func (b *Inbox) forget(agent identity.AgentName, st *state, id identity.RoomID) {
	// An invitation of human to a room the node was invited into, which
	// human never spoke in (nodeInvited), is not tracked; it is no longer
	// true either.
	st.dropInvitationsTo(agent, id)
	if _, ok := st.scan[id]; !ok {
		return
	}
	delete(st.scan, id)
	delete(st.read, id)
	delete(st.unread, id)
	delete(st.recount, id)
	delete(st.dirty, id)
	st.dropOwedIn(agent, id)
	st.dropInvitationsTo(agent, id)
}

// pending builds what the agent has yet to see; with take it hands it out:
// new asks become reminders, notices go, and listed messages are read. A
// two-step hand-out (h) records what it handed out.
func (b *Inbox) pending(agent identity.AgentName, st *state, take bool, h *hand) (localapi.Pending, error) {
	var p localapi.Pending
	var handed []localapi.Item // what this take hands out (reminders are shown, not handed)
	names := map[identity.RoomID]string{}
	nameOf := func(id identity.RoomID) string {
		if n, ok := names[id]; ok {
			return n
		}
		n := ""
		if in, err := b.rooms.Get(id); err == nil {
			n = in.Name
		}
		names[id] = n
		return n
	}
	// The items given, against PendingBudget: an item that would pass it
	// waits (the first is always given). An item counts as its text and
	// ItemOverhead; before, an ask counted its text alone, and a member's
	// 1,500 one-character asks made one result of some 2 MB, which a
	// client refuses whole.
	used, counted := 0, 0
	fits := func(size int) bool {
		if counted > 0 && used+size > PendingBudget {
			return false
		}
		used += size
		counted++
		return true
	}
	// Asks owed: new ones first in full, then reminders; chosen in turns
	// by asking node (inTurns), so that a node's flood of asks does not
	// hold back another's; listed in the order they arrived here.
	owed := b.owedShown(st)
	// Reminders (a line each) are capped (MaxReminders), and what they
	// take is left out of the budget, but they never make the first item:
	// when one did, an item longer than the budget (a long reply) was
	// held back for as long as the agent owed an ask, and every wait
	// returned at once for it. Before, they were neither capped nor
	// counted, and 1,500 asks owed made every result some 1.3 MB.
	remind := map[string]bool{}
	for _, o := range inTurns(owed, func(o askRef) bool { return o.rec.Shown }) {
		if len(remind) == MaxReminders {
			p.OwedLeftOut++
			continue
		}
		remind[o.id] = true
		used += reminderText + ItemOverhead
	}
	folded := map[string]bool{} // invitations an ask shown in full now stands for
	full := map[string]localapi.Item{}
	for _, o := range inTurns(owed, func(o askRef) bool { return !o.rec.Shown }) {
		it := b.askItem(st, "o", o.id, o.rec, "ask", nameOf(o.rec.Room))
		if !fits(len(it.Text) + ItemOverhead) {
			p.OwedLeftOut++
			continue // shown in full in a later take
		}
		full[o.id] = it
	}
	for _, o := range owed {
		it, ok := full[o.id]
		if !ok {
			continue
		}
		p.Items = append(p.Items, it)
		if o.rec.Invite != "" {
			folded[o.rec.Invite] = true
		}
		if take {
			o.rec.Shown = true
			o.rec.Text = it.Text // for its record: memory drops it again
			st.putAsk(agent, "o", o.id, o.rec)
			handed = append(handed, it)
		}
	}
	for _, o := range owed {
		if remind[o.id] {
			p.Items = append(p.Items, b.askItem(st, "o", o.id, o.rec, "reminder", nameOf(o.rec.Room)))
		}
	}
	// Notices: invitations, then replies.
	notes := make([]*noteRec, 0, len(st.notes))
	for _, it := range st.notes {
		notes = append(notes, it)
	}
	sort.Slice(notes, func(i, j int) bool {
		if notes[i].Kind != notes[j].Kind {
			return notes[i].Kind == "invitation"
		}
		return notes[i].Time < notes[j].Time
	})
	for _, it := range notes {
		if folded[it.ID] {
			if take {
				st.dropNote(agent, it.ID)
			}
			continue
		}
		if it.Kind != "invitation" && !fits(it.size+ItemOverhead) {
			continue // a long reply: in a later take
		}
		cp := b.noteItem(st, it)
		if cp.Kind == "invitation" {
			// An invitation counts as what it brings: its room's purpose
			// and members, and the manual every client shows with it.
			// Before, it counted for nothing, and 60 invitations made one
			// result of some 400 KB, which a client refuses whole.
			b.describeRoom(&cp)
			if !fits(invitationSize(cp)) {
				continue // in a later take
			}
		}
		p.Items = append(p.Items, cp)
		if take {
			st.dropNote(agent, it.ID)
			handed = append(handed, cp)
		}
	}
	if b.cfg.Notices != nil {
		// Counted as the others are: before, a member's claims that lost
		// to this agent's were told whole in one result (NoticeContested).
		ns := b.cfg.Notices(agent, take, func(size int) bool { return fits(size + ItemOverhead) })
		p.Items = append(p.Items, ns...)
		if take {
			handed = append(handed, ns...)
		}
	}
	// Unread messages, oldest first per room, at most MaxMessages.
	var backlog []identity.RoomID
	for id, n := range st.unread {
		if n > 0 {
			backlog = append(backlog, id)
		}
	}
	slices.Sort(backlog)
	listed := 0
	for _, id := range backlog {
		if listed < MaxMessages {
			its, last, err := b.unreadOf(st, id, MaxMessages-listed, PendingBudget-used)
			if err != nil {
				return localapi.Pending{}, err
			}
			for i := range its {
				its[i].RoomName = nameOf(id)
			}
			p.Items = append(p.Items, its...)
			listed += len(its)
			for _, it := range its {
				used += len(it.Text)
			}
			rest := max(st.unread[id]-len(its), 0)
			if take {
				if last > st.read[id] {
					st.setCursor(agent, "r", id, last)
				}
				st.unread[id] = rest
				handed = append(handed, its...)
			}
			if rest > 0 {
				p.MoreUnread = append(p.MoreUnread, localapi.RoomCount{Room: string(id), RoomName: nameOf(id), Count: rest})
				if take {
					st.tell(id)
				}
			}
			continue
		}
		p.MoreUnread = append(p.MoreUnread, localapi.RoomCount{Room: string(id), RoomName: nameOf(id), Count: st.unread[id]})
		if take {
			st.tell(id)
		}
	}
	b.handed(st, h, handed)
	p.Cursor = b.cursor(st)
	return p.OrEmpty(), nil
}

// unreadOf lists up to n unread messages of a room after the read cursor,
// their texts within budget together, and the arrival of the last one
// listed. It stops at a message longer than MaxListedText or past the
// budget: that one and those after it stay unread, for a read.
func (b *Inbox) unreadOf(st *state, id identity.RoomID, n, budget int) ([]localapi.Item, uint64, error) {
	var out []localapi.Item
	var last uint64
	for after := st.read[id]; after < st.scan[id] && len(out) < n; {
		vs, err := b.rooms.Since(id, after, scanBatch)
		if err != nil {
			return nil, 0, err
		}
		if len(vs) == 0 {
			break
		}
		for _, v := range vs {
			if v.Arrival > st.scan[id] || len(out) == n {
				break
			}
			if b.unreadMessage(st, v) {
				if len(v.Text) > MaxListedText || len(v.Text) > budget {
					return out, last, nil
				}
				budget -= len(v.Text)
				it := item(v, "")
				it.Kind = "message" // an ask to someone else is a message to this agent
				out = append(out, it)
			}
			last = v.Arrival
		}
		after = vs[len(vs)-1].Arrival
	}
	return out, last, nil
}

// inTurns returns the asks of owed (in the order they arrived here) that
// keep holds, in turns by asking node (the peer of From): each node's
// oldest, then each one's next, and so on, the nodes in the order of
// their oldest. A take that cannot give them all gives the first.
func inTurns(owed []askRef, keep func(askRef) bool) []askRef {
	kept := make([]askRef, 0, len(owed))
	for _, o := range owed {
		if keep(o) {
			kept = append(kept, o)
		}
	}
	return turns.Order(kept, func(o askRef) string { return turns.Node(o.rec.From) })
}

type askRef struct {
	id  string
	rec *askRec
}

// owedShown returns the asks the agent owes in the order they arrived here,
// but those of a node cut off or an agent muted since the ask was noted:
// they stay owed (and count again if that ends), and are not shown.
func (b *Inbox) owedShown(st *state) []askRef {
	return slices.DeleteFunc(sortedAsks(st.owed), func(o askRef) bool { return b.hiddenFrom(o.rec.From) })
}

// sortedAsks orders asks by when this node took them in (since: Seen, this
// node's clock), then by their date, then by ID. An asker's node dates its
// asks as it likes (a time is checked only to be 0 or more): ordered by
// date, a member dating its asks an hour back put every one of them before
// an ask that came here first. An own ask keeps no Seen; its date is this
// node's.
func sortedAsks(m map[string]*askRec) []askRef {
	out := make([]askRef, 0, len(m))
	for id, a := range m {
		out = append(out, askRef{id, a})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].rec, out[j].rec
		if a.since() != b.since() {
			return a.since() < b.since()
		}
		if a.Time != b.Time {
			return a.Time < b.Time
		}
		return out[i].id < out[j].id
	})
	return out
}

// askItem is an ask of the agent's state (rec "o": owed, "q": its own) as
// an item; its text is read here (askText).
func (b *Inbox) askItem(st *state, rec, id string, a *askRec, kind, roomName string) localapi.Item {
	text := a.Text
	if text == "" {
		text = b.askText(st, rec, id)
	}
	it := localapi.Item{Kind: kind, ID: id, Room: string(a.Room), RoomName: roomName, From: a.From, Text: text,
		To: a.To, Time: a.Time, Expires: a.since() + b.cfg.AskTTL.Milliseconds(), Brought: a.Brought}
	if a.Brought && kind == "ask" {
		b.describeRoom(&it) // what its invitation would have said
	}
	return it
}

// tellApart gives the items and counts of rooms whose name another room of
// this node has, or one that differs only in case, width or invisible
// characters (fold), their room's creator: a member of a shared room can make a
// look-alike (same name and purpose) and invite this node, and a text that
// names only "api" would not say which.
func (b *Inbox) tellApart(items []localapi.Item, more []localapi.RoomCount) {
	if !slices.ContainsFunc(items, func(it localapi.Item) bool { return it.RoomName != "" }) &&
		!slices.ContainsFunc(more, func(m localapi.RoomCount) bool { return m.RoomName != "" }) {
		return
	}
	named := map[string]int{}
	creator := map[string]string{}
	for _, in := range b.rooms.List() {
		named[fold(in.Name)]++
		creator[string(in.ID)] = in.Creator.String()
	}
	twin := func(room, name string) string {
		if name == "" || named[fold(name)] < 2 {
			return ""
		}
		return creator[room]
	}
	for i := range items {
		items[i].RoomCreator = twin(items[i].Room, items[i].RoomName)
	}
	for i := range more {
		more[i].RoomCreator = twin(more[i].Room, more[i].RoomName)
	}
}

// InvitationManual is what an invitation costs of a take's budget
// (PendingBudget) beside its texts: the manual its client shows with it
// (how to read, post, ask and leave; manual.Invitation's is about 1,100
// bytes).
const InvitationManual = 1200

// invitationSize is what an invitation costs of a take's budget: its
// texts, its room's name, purpose and members, and the manual shown with
// it.
func invitationSize(it localapi.Item) int {
	n := InvitationManual + len(it.Text) + len(it.RoomName) + len(it.Purpose) + len(it.From)
	for _, m := range it.Members {
		n += len(m) + 2
	}
	return n
}

// describeRoom fills an invitation with the room's purpose and members.
func (b *Inbox) describeRoom(it *localapi.Item) {
	in, err := b.rooms.Get(identity.RoomID(it.Room))
	if err != nil {
		return
	}
	it.RoomName, it.Purpose = in.Name, in.Purpose
	it.Members = slices.Clone(in.Agents)
}

// item is an event as an agent's item.
func item(v rooms.View, roomName string) localapi.Item {
	it := localapi.Item{Kind: string(v.Kind), ID: v.ID.String(), Room: string(v.Room), RoomName: roomName,
		From: from(v), Text: v.Text, To: v.To, Time: v.Time}
	if v.Kind == rooms.KindClaim || v.Kind == rooms.KindRelease {
		it.Text = board.Describe(string(v.Kind), v.Body)
	}
	if v.ReplyTo != nil {
		it.ReplyTo = v.ReplyTo.String()
	}
	switch v.Kind {
	case rooms.KindCreate:
		it.Purpose = v.Purpose
	case rooms.KindInvite, rooms.KindLeave:
		if v.Target != "" {
			it.Target = v.Target.String()
		}
	}
	return it
}

// tell records that a take reported the room's unread messages (and left
// them unread): a Wait counts them as new again only once the room's scan
// got past where it is now. Callers hold st.mu.
func (st *state) tell(id identity.RoomID) {
	if st.told == nil {
		st.told = map[identity.RoomID]uint64{}
	}
	st.told[id] = st.scan[id]
}

// untold reports whether the agent has unread messages no take reported
// yet: in a room never reported, or one whose scan got past the report.
func (st *state) untold() bool {
	for id, n := range st.unread {
		if n <= 0 {
			continue
		}
		if at, ok := st.told[id]; !ok || st.scan[id] > at {
			return true
		}
	}
	return false
}

// isBoardRoom reports whether a room of this name is a project's board
// room: "board:" and the project's key. Its joins, claims and releases are
// the board's (parley_board and the board's notices), not a conversation.
func isBoardRoom(name string) bool {
	key, ok := strings.CutPrefix(name, board.RoomPrefix)
	return ok && gitrepo.CheckKey(key) == nil
}
