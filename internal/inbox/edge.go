package inbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/dialerr"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/near"
	"github.com/parley-mesh/parley/rooms"
)

// withPending fills a call's answer's pending items: with take it scans and
// takes them. A two-step call (h) gets its hand-out's token, if the call
// handed anything out (here, or before: a read's messages).
func (b *Inbox) withPending(agent identity.AgentName, take bool, h *hand, p *localapi.Pending) error {
	*p = p.OrEmpty()
	if take {
		got, err := b.takeLocked(agent, true, h)
		if err != nil {
			return err
		}
		*p = got
	}
	b.setHand(p, h)
	return nil
}

// takeLocked scans and builds the agent's pending items; with take and h
// it records its hand-out.
func (b *Inbox) takeLocked(agent identity.AgentName, take bool, h *hand) (localapi.Pending, error) {
	st, err := b.lock(agent)
	if err != nil {
		return localapi.Pending{}, err
	}
	defer b.unlock(st)
	if err := b.scan(agent, st); err != nil {
		b.discard(st)
		return localapi.Pending{}, apiError(err)
	}
	p, err := b.pending(agent, st, take, h)
	if err != nil {
		b.discard(st) // what it marked before the error was not handed out
		return localapi.Pending{}, apiError(err)
	}
	b.setHand(&p, h)
	// What this take handed out is marked in memory; a refused save is
	// logged (see keep): an error here would lose it until a restart.
	b.keep(st)
	b.tellApart(p.Items, p.MoreUnread)
	return p, nil
}

// mustHaveInbox refuses a look at the inbox of a name this node knows
// nothing of: not human, not registered here, with no membership record in
// a room of the node, and nothing pending (before, a mistyped --as was told
// "nothing waits for you"). An agent that unregistered may still have
// items pending, asks it owes among them: it is shown them.
func (b *Inbox) mustHaveInbox(ctx context.Context, agent identity.AgentName) error {
	if agent == identity.HumanAgent || b.registered(ctx, agent) || b.hasRecord(agent) {
		return nil
	}
	p, err := b.takeLocked(agent, false, nil)
	if err != nil || len(p.Items) > 0 || len(p.MoreUnread) > 0 {
		return err
	}
	return localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownAgent,
		"no agent %q is registered on this node, nor a member of any room here, and nothing waits for it: `parley agent list` lists this node's agents (a name mistyped?)", agent)
}

// Take implements localapi.Edge.
func (b *Inbox) Take(ctx context.Context, agent string) (localapi.Pending, error) {
	a, err := parseAgent(agent)
	if err != nil {
		return localapi.Pending{}, err
	}
	if err := b.mustHaveInbox(ctx, a); err != nil {
		return localapi.Pending{}, err
	}
	return b.takeLocked(a, true, handFor(ctx))
}

// Peek implements localapi.Edge.
func (b *Inbox) Peek(ctx context.Context, agent string) (localapi.Pending, error) {
	a, err := parseAgent(agent)
	if err != nil {
		return localapi.Pending{}, err
	}
	if err := b.mustHaveInbox(ctx, a); err != nil {
		return localapi.Pending{}, err
	}
	return b.takeLocked(a, false, nil)
}

// Owed implements localapi.Edge: the asks agent owes now, in the order they
// arrived at this node.
func (b *Inbox) Owed(ctx context.Context, agent string) ([]localapi.Item, error) {
	st, err := b.scanned(agent)
	if err != nil {
		return nil, err
	}
	defer b.unlock(st)
	out := []localapi.Item{}
	for _, o := range b.owedShown(st) {
		name := ""
		if in, err := b.rooms.Get(o.rec.Room); err == nil {
			name = in.Name
		}
		out = append(out, b.askItem(st, "o", o.id, o.rec, "ask", name))
	}
	b.tellApart(out, nil)
	b.keep(st) // the scan's bookkeeping: the list is true without it
	return out, nil
}

// Unread lists the owed items agent has not read yet, for the wake-up
// service (localapi.Unread): at most max of them (max > 0), chosen in turns
// by asking node, handing nothing out. An item leaves it once the agent
// reads it (a take shows it), answers it or dismisses it, never for want
// of room as an item left out of a take's budget does. Of the IDs in
// check, those the agent still owes are given (Unread.Owed).
func (b *Inbox) Unread(ctx context.Context, agent string, max int, check []string) (localapi.Unread, error) {
	st, err := b.scanned(agent)
	if err != nil {
		return localapi.Unread{}, err
	}
	defer b.unlock(st)
	u := localapi.Unread{}
	for _, id := range check {
		if n := st.notes[id]; st.owed[id] != nil || n != nil && n.Kind == "invitation" {
			u.Owed = append(u.Owed, id)
		}
	}
	owed := b.owedShown(st)
	folded := map[string]bool{}
	for _, o := range owed {
		if !o.rec.Shown && o.rec.Invite != "" {
			folded[o.rec.Invite] = true
		}
	}
	listed := map[string]bool{}
	for _, o := range inTurns(owed, func(o askRef) bool { return !o.rec.Shown }) {
		if len(listed) == max {
			u.LeftOut++
			continue
		}
		listed[o.id] = true
	}
	names := map[identity.RoomID]string{}
	for _, o := range owed {
		if !listed[o.id] {
			continue
		}
		name, ok := names[o.rec.Room]
		if !ok {
			if in, err := b.rooms.Get(o.rec.Room); err == nil {
				name = in.Name
			}
			names[o.rec.Room] = name
		}
		it := b.askItem(st, "o", o.id, o.rec, "ask", name)
		it.Text = clipRunes(it.Text, localapi.UnreadText)
		u.Items = append(u.Items, it)
	}
	var invites []localapi.Item
	for _, n := range st.notes {
		if n.Kind != "invitation" || folded[n.ID] {
			continue
		}
		if len(u.Items)+len(invites) >= max {
			u.LeftOut++
			continue
		}
		cp := b.noteItem(st, n)
		cp.Text = clipRunes(cp.Text, localapi.UnreadText)
		b.describeRoom(&cp)
		invites = append(invites, cp)
	}
	slices.SortFunc(invites, func(x, y localapi.Item) int { return cmp.Or(cmp.Compare(x.Time, y.Time), cmp.Compare(x.ID, y.ID)) })
	u.Items = append(u.Items, invites...)
	b.tellApart(u.Items, nil)
	b.keep(st) // the scan's bookkeeping: the list is true without it
	return u, nil
}

// clipRunes cuts s to at most n characters.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if i == n {
			return s[:k]
		}
		i++
	}
	return s
}

// Waiting counts what waits for agent: the asks it owes (shown or not)
// and the invitations not yet shown (an invitation an ask not yet shown
// brought the agent in by is that ask's). A take lists them within
// PendingBudget; this counts them all, for the node's status.
func (b *Inbox) Waiting(ctx context.Context, agent string) (asks, invitations int, err error) {
	st, err := b.scanned(agent)
	if err != nil {
		return 0, 0, err
	}
	defer b.unlock(st)
	owed := b.owedShown(st)
	folded := map[string]bool{}
	for _, o := range owed {
		if !o.rec.Shown && o.rec.Invite != "" {
			folded[o.rec.Invite] = true
		}
	}
	for id, n := range st.notes {
		if n.Kind == "invitation" && !folded[id] {
			invitations++
		}
	}
	b.keep(st) // the scan's bookkeeping: the count is true without it
	return len(owed), invitations, nil
}

// scanned locks agent's state and brings it up to date with its rooms,
// for a list that hands nothing out; the caller unlocks it.
func (b *Inbox) scanned(agent string) (*state, error) {
	a, err := parseAgent(agent)
	if err != nil {
		return nil, err
	}
	st, err := b.lock(a)
	if err != nil {
		return nil, err
	}
	if err := b.scan(a, st); err != nil {
		b.discard(st)
		b.unlock(st)
		return nil, apiError(err)
	}
	return st, nil
}

// Invitations lists the invitations waiting in agent's inbox, as a peek
// gives them (with the room's purpose and members; an invitation an ask
// stands for is left to the ask), oldest first, handing nothing out: what
// the dashboard shows of human's.
func (b *Inbox) Invitations(ctx context.Context, agent string) ([]localapi.Item, error) {
	st, err := b.scanned(agent)
	if err != nil {
		return nil, err
	}
	defer b.unlock(st)
	folded := map[string]bool{}
	for _, o := range b.owedShown(st) {
		if o.rec.Invite != "" {
			folded[o.rec.Invite] = true
		}
	}
	out := []localapi.Item{}
	for _, it := range st.notes {
		if it.Kind == "invitation" && !folded[it.ID] {
			cp := b.noteItem(st, it)
			b.describeRoom(&cp)
			out = append(out, cp)
		}
	}
	slices.SortFunc(out, func(x, y localapi.Item) int { return cmp.Or(cmp.Compare(x.Time, y.Time), cmp.Compare(x.ID, y.ID)) })
	b.tellApart(out, nil)
	b.keep(st) // the scan's bookkeeping: the list is true without it
	return out, nil
}

// TakeInvitation implements localapi.Edge: the agent's invitations to the
// room are taken from its inbox (up to date first: one the room's events
// bring is taken too), nothing else handed out. The dashboard calls it when
// the user opens the room (from the invitation's row or the room list) or
// dismisses the invitation, and `parley room log` when the user reads the
// room; before, only a take of the whole inbox (`parley inbox --take`) or a
// leave did, and the rows stayed.
func (b *Inbox) TakeInvitation(ctx context.Context, agent string, req localapi.InvitationRequest) (localapi.InvitationResult, error) {
	var res localapi.InvitationResult
	a, err := parseAgent(agent)
	if err != nil {
		return res, err
	}
	if err := b.mustHaveInbox(ctx, a); err != nil {
		return res, err
	}
	in, err := b.resolveFor(a, req.Room)
	if err != nil {
		return res, err
	}
	st, err := b.scanned(agent)
	if err != nil {
		return res, err
	}
	defer b.unlock(st)
	for _, it := range st.notes {
		if it.Kind == "invitation" && it.Room == string(in.ID) {
			res.Taken++
		}
	}
	st.dropInvitationsTo(a, in.ID)
	if err := b.flush(st); err != nil {
		// Refused, the invitations stay in memory too (see keep), and the
		// user, told it failed, can take them again once the disk has room.
		b.discard(st)
		return localapi.InvitationResult{}, apiError(err)
	}
	return res, nil
}

// Wait implements localapi.Edge. With take it returns (and hands out) the
// agent's items as soon as there is something other than reminders; without
// it returns once something arrived after req.After (or after the call
// began), handing out nothing: what a wake-up adapter needs.
func (b *Inbox) Wait(ctx context.Context, agent string, req localapi.WaitRequest) (localapi.Pending, error) {
	a, err := parseAgent(agent)
	if err != nil {
		return localapi.Pending{}, err
	}
	wait := time.Duration(req.Seconds * float64(time.Second))
	if wait < 0 || wait > localapi.MaxWait {
		return localapi.Pending{}, localapi.BadRequest("wait must be 0 to %s", localapi.MaxWait)
	}
	if err := b.mustHaveInbox(ctx, a); err != nil {
		return localapi.Pending{}, err
	}
	changes, stop := b.rooms.Changes()
	defer stop()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	// Besides the rooms' changes, the call listens on the agent's state
	// (woken): items offered again come by no room.
	defer b.release(b.hold(a))
	after, known := b.parseCursor(req.After)
	var h *hand
	if req.Take {
		h = handFor(ctx)
	}
	for first := true; ; first = false {
		st, err := b.lock(a)
		if err != nil {
			return localapi.Pending{}, err
		}
		err = b.scan(a, st)
		if first && !known {
			after = st.news
		}
		fresh := false
		if err == nil {
			if req.Take {
				fresh = len(st.notes) > 0 || slices.ContainsFunc(b.owedShown(st), func(r askRef) bool { return !r.rec.Shown })
				// Unread counts as new only when a take has not
				// reported it yet: before, a long message (never
				// handed out, left for a read) made every wait
				// return at once.
				fresh = fresh || st.untold()
				fresh = fresh || b.cfg.Notices != nil && len(b.cfg.Notices(a, false, func(int) bool { return true })) > 0
			} else {
				fresh = st.news > after || (first && req.After != "" && !known)
			}
		}
		var p localapi.Pending
		if err == nil && fresh {
			p, err = b.pending(a, st, req.Take, h)
			b.setHand(&p, h)
		}
		if err != nil {
			// Nothing is handed out: what the scan or pending marked
			// goes back to what the store holds (see keep).
			b.discard(st)
			b.unlock(st)
			return localapi.Pending{}, apiError(err)
		}
		// An open hand-out's wait that passes offers its items again: a
		// call waiting wakes for it (a take to hand them, a peek to say
		// they came), as it does when they are offered again at once (a
		// confirmation of some of a hand-out's items) or a new hand-out
		// is made: poke closes wake.
		var due <-chan time.Time
		if next := st.nextHand(); !next.IsZero() {
			due = time.After(max(next.Sub(b.now()), 0))
		}
		var wake <-chan struct{}
		if !fresh {
			wake = st.woken()
		}
		// With take, what it hands out is marked in memory; a refused
		// save is logged, and the agent gets the items (see keep).
		b.keep(st)
		b.unlock(st)
		if fresh {
			b.tellApart(p.Items, p.MoreUnread)
			return p, nil
		}
		select {
		case <-changes:
		case <-due:
		case <-wake:
		case <-timer.C:
			return b.takeLocked(a, req.Take, h)
		case <-ctx.Done():
			return localapi.Pending{}, ctx.Err()
		}
	}
}

// cursor is the mark of what an agent has seen of its news in this run of
// the node; parseCursor reads one back (known is false for a cursor of
// another run, or none).
func (b *Inbox) cursor(st *state) string { return fmt.Sprintf("%s.%d", b.run, st.news) }

func (b *Inbox) parseCursor(s string) (uint64, bool) {
	run, n, ok := strings.Cut(s, ".")
	if !ok || run != b.run {
		return 0, false
	}
	v, err := strconv.ParseUint(n, 10, 64)
	return v, err == nil
}

// resolve finds a room by ID, or by the name of exactly one room.
func (b *Inbox) resolve(s string) (rooms.Info, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return rooms.Info{}, localapi.BadRequest("room is empty: name a room by its ID or its name (parley_who, or `parley room list`, lists them)")
	}
	if id, err := identity.ParseRoomID(s); err == nil {
		in, err := b.rooms.Get(id)
		if err != nil {
			if err := b.outOf(id); err != nil {
				return rooms.Info{}, err
			}
			return rooms.Info{}, localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownRoom,
				"no room %s on this node (parley_who, or `parley room list`, lists the rooms)", id)
		}
		return in, nil
	}
	return b.byName(s, "")
}

// resolveFor is resolve for an agent's call: of several rooms with one
// name, the one the agent is in is meant (another agent of the node, or
// another node's invite, may have brought a second room of that name).
func (b *Inbox) resolveFor(agent identity.AgentName, s string) (rooms.Info, error) {
	s = strings.TrimSpace(s)
	if _, err := identity.ParseRoomID(s); s == "" || err == nil {
		return b.resolve(s)
	}
	return b.byName(s, agent)
}

// byName finds the one room named s; with agent set, of several it keeps
// those agent is in.
func (b *Inbox) byName(s string, agent identity.AgentName) (rooms.Info, error) {
	var found []rooms.Info
	for _, in := range b.rooms.List() {
		if in.Name == s {
			found = append(found, in)
		}
	}
	if len(found) > 1 && agent != "" {
		var mine []rooms.Info
		for _, in := range found {
			if b.isIn(agent, in.ID) {
				mine = append(mine, in)
			}
		}
		if len(mine) > 0 {
			found = mine
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		if left := b.rooms.LeftByName(s); len(left) > 0 {
			if err := b.outOf(left[0]); err != nil {
				return rooms.Info{}, err
			}
		}
		var names []string
		for _, in := range b.rooms.List() {
			if agent == "" || b.isIn(agent, in.ID) {
				names = append(names, in.Name)
			}
		}
		if ws := near.Words(s, names, 3); len(ws) > 0 {
			for i := range ws {
				ws[i] = strconv.Quote(ws[i])
			}
			return rooms.Info{}, localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownRoom,
				"no room named %.100q on this node (did you mean %s? parley_who, or `parley room list`, lists the rooms)", s, strings.Join(ws, " or "))
		}
		return rooms.Info{}, localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownRoom,
			"no room named %.100q on this node (parley_who, or `parley room list`, lists the rooms)", s)
	}
	// Each ID with who created its room, the one thing that tells rooms of
	// one name apart before their IDs do ("@PEER" reads as the node's
	// handle where texts show names).
	slices.SortFunc(found, func(x, y rooms.Info) int { return strings.Compare(string(x.ID), string(y.ID)) })
	ids := make([]string, len(found))
	for i, in := range found {
		by := "this node"
		if in.Creator != b.self {
			by = "@" + in.Creator.String()
		}
		ids[i] = fmt.Sprintf("%s (created by %s)", in.ID, by)
	}
	return rooms.Info{}, localapi.Errorf(http.StatusConflict, localapi.CodeAmbiguous,
		"%d rooms are named %q: use the room ID, one of %s", len(found), s, strings.Join(ids, ", "))
}

// isIn reports whether agent is a member of room id now.
func (b *Inbox) isIn(agent identity.AgentName, id identity.RoomID) bool {
	rec, ok, err := b.rooms.AgentState(id, b.addr(agent))
	return err == nil && ok && rec.In
}

func ref(in rooms.Info) localapi.RoomRef {
	return localapi.RoomRef{RoomID: string(in.ID), Name: in.Name, Purpose: in.Purpose}
}

// checkText refuses an empty or oversized text.
func checkText(s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return localapi.BadRequest("text is empty: write something")
	case len(s) > rooms.MaxBody:
		return localapi.Errorf(http.StatusRequestEntityTooLarge, localapi.CodeTooLarge,
			"text is %d bytes, over the limit of %d", len(s), rooms.MaxBody)
	case !utf8.ValidString(s):
		return localapi.BadRequest("text is not valid UTF-8")
	}
	return nil
}

// member is whom a member string names: an agent (name, on node p) or a
// whole node (name empty).
type member struct {
	name identity.AgentName
	peer peer.ID
}

func (m member) String() string {
	if m.name == "" {
		return m.peer.String()
	}
	return string(m.name) + "@" + m.peer.String()
}

// parseMember reads NAME@PEER_ID, NAME (an agent of this node) or PEER_ID.
func (b *Inbox) parseMember(s string) (member, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "@") {
		p, err := peer.Decode(s)
		if err == nil {
			return member{peer: p}, nil
		}
		if strings.HasPrefix(s, "12D3Koo") || strings.HasPrefix(s, "Qm") {
			return member{}, localapi.BadRequest("%.100q looks like a peer ID but is not one (%v): copy it whole from `parley peers` or `parley contact list`", s, err)
		}
	}
	a, err := identity.ParseGivenAgentAddr(s)
	if name, node, ok := strings.Cut(s, "@"); err != nil && ok && b.cfg.Names != nil {
		// NAME@HANDLE, as names show: the node whose handle it is. An
		// address whose NAME is not one is malformed whatever follows.
		why := ""
		if _, nerr := identity.ParseGivenAgentName(name); nerr != nil {
			why = strings.TrimPrefix(nerr.Error(), "identity: ")
		} else if node == "" {
			why = `nothing follows "@"`
		}
		if why != "" {
			return member{}, localapi.BadRequest("%.100q is a malformed address (%s): an agent's address is NAME@PEER_ID or NAME@HANDLE, or NAME for an agent of your node", s, why)
		}
		if _, perr := peer.Decode(node); perr != nil {
			p, rerr := b.cfg.Names.Resolve(node)
			if rerr != nil {
				return member{}, localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownAgent, "%.100q: %s", s, strings.TrimPrefix(rerr.Error(), "names: "))
			}
			a, err = identity.ParseGivenAgentAddr(name + "@" + p.String())
		}
	}
	if err != nil {
		return member{}, localapi.BadRequest("%.100q: %v (an agent's address is NAME@PEER_ID or NAME@HANDLE, or NAME for an agent of your node)", s, err)
	}
	if a.Peer == "" {
		a.Peer = b.self
	}
	return member{name: a.Name, peer: a.Peer}, nil
}

// parseTo reads an addressee: NAME@PEER_ID or NAME.
func (b *Inbox) parseTo(s string) (member, error) {
	m, err := b.parseMember(s)
	if err == nil && m.name == "" {
		err = localapi.BadRequest("%.100q is a node, not an agent: address an agent as NAME@PEER_ID", s)
	}
	return m, err
}

// checkKnown refuses an agent known not to exist: one of this node that is
// not registered, or one missing from the agents a contact's node told this
// node it runs (presence; also when it told of none). "human" of any node
// always exists. When this node has heard nothing of the other node's
// agents (not a contact, or one silent lately), the agent may exist: it is
// let through, and the note says so. Presence lags a change by a second or
// two, so a contact's agent is looked for again for a short while.
func (b *Inbox) checkKnown(ctx context.Context, m member) (note string, err error) {
	if m.name == identity.HumanAgent {
		return "", nil
	}
	if m.peer == b.self {
		for _, a := range b.cfg.Agents.List(ctx) {
			if a.Name == string(m.name) {
				return "", nil
			}
		}
		if b.cfg.Names != nil {
			// A node's handle alone, written where an agent goes: say
			// how that node's user and agents are addressed.
			if p, err := b.cfg.Names.Resolve(string(m.name)); err == nil && p != b.self {
				return "", localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownAgent,
					"no agent %q is registered on this node: %q is the name of a node; its user is human@%s, its agents NAME@%s (parley_who, or `parley who`, lists them)", m.name, m.name, m.name, m.name)
			}
		}
		// An agent of that name on another node: NAME alone is this
		// node's, so say the address that reaches it.
		var there []string
		for _, w := range b.cfg.Agents.Who(ctx) {
			if w.Agent != string(m.name) || w.PeerID == b.self.String() {
				continue
			}
			at := w.PeerID
			if p, err := peer.Decode(w.PeerID); err == nil {
				if n := b.nodeName(p); !strings.ContainsAny(n, "…~") {
					at = n
				}
			}
			if a := string(m.name) + "@" + at; !slices.Contains(there, a) {
				there = append(there, a)
			}
		}
		if len(there) > 0 {
			return "", localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownAgent,
				"no agent %q is registered on this node (NAME alone names one of yours): to reach the one on another node, write %s", m.name, strings.Join(there, " or "))
		}
		return "", localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownAgent,
			"no agent %q is registered on this node: parley_who, or `parley who`, lists the agents you can reach", m.name)
	}
	deadline := time.Now().Add(b.cfg.PresenceGrace)
	for {
		for _, w := range b.cfg.Agents.Who(ctx) {
			if w.PeerID == m.peer.String() && w.Agent == string(m.name) {
				return "", nil
			}
		}
		if !b.cfg.Agents.Heard(ctx, m.peer) {
			return fmt.Sprintf("%s could not be checked: its node tells this node nothing of its agents (it is not a contact, their certificate does not share presence, or it was not heard from lately); if no agent of that name runs there, nobody will answer", m), nil
		}
		if time.Now().After(deadline) {
			return "", localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownAgent,
				"no agent %q is alive on node %s: parley_who, or `parley who`, lists the agents alive on it (and on your other contacts' nodes)", m.name, b.nodeLabel(m.peer))
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// bringIn invites m into room as agent: an agent by name, or a node. The
// note is checkKnown's.
func (b *Inbox) bringIn(ctx context.Context, agent identity.AgentName, room identity.RoomID, m member) (rooms.ID, string, error) {
	eid, note, err := b.invite(ctx, agent, room, m)
	if eid != (rooms.ID{}) {
		b.record(agent, audit.RoomInvite, room, map[string]string{"member": m.String(), "event": eid.String()})
	}
	return eid, note, err
}

func (b *Inbox) invite(ctx context.Context, agent identity.AgentName, room identity.RoomID, m member) (rooms.ID, string, error) {
	if m.name == "" {
		if m.peer == b.self {
			return rooms.ID{}, "", localapi.BadRequest("%s is this node: name one of its agents (NAME) instead", m.peer)
		}
		eid, err := b.rooms.Invite(ctx, room, m.peer, agent)
		note, err := notToldNote(eid, m.peer, "", err)
		return eid, note, err
	}
	note, err := b.checkKnown(ctx, m)
	if err != nil {
		return rooms.ID{}, "", err
	}
	eid, err := b.rooms.InviteAgent(ctx, room, m.peer, m.name, agent)
	note, err = notToldNote(eid, m.peer, note, err)
	return eid, note, err
}

// notToldNote turns an invite made whose node could not be told of it yet
// (unreachable now: down, or offline) into a note: the invite is done, and
// its node is told when the two connect; a caller that took it for a
// failure would invite again. Other errors pass.
func notToldNote(eid rooms.ID, p peer.ID, note string, err error) (string, error) {
	if eid == (rooms.ID{}) || !errors.Is(err, rooms.ErrNotToldYet) {
		return note, err
	}
	told := fmt.Sprintf("%s could not be told of it now (%s): the invite is in the room, and its node is told of it when the two nodes connect; nothing to do again", p, notToldCause(err))
	if note != "" {
		return note + "; " + told, nil
	}
	return told, nil
}

// notToldCause is why an invite's node could not be told of it, in one
// line: of the error joined with rooms.ErrNotToldYet, what the node
// answered (escaped where it is shown, as every error is), or that it
// was not reached.
func notToldCause(err error) string {
	for ; err != nil; err = errors.Unwrap(err) {
		joined, ok := err.(interface{ Unwrap() []error })
		if !ok {
			continue
		}
		for _, e := range joined.Unwrap() {
			if e != rooms.ErrNotToldYet && !dialerr.Unreached(e) {
				return dialerr.Reason(e.Error())
			}
		}
		break
	}
	return "its node cannot be reached: down or offline"
}

// waits reports whether the invite of m into room in waits on m's node for
// its user's answer: that node is not in the room yet, and is not a
// contact whose certificate grants invites.
func (b *Inbox) waits(in rooms.Info, m member) bool {
	if m.peer == b.self || !b.rooms.InviteWaits(m.peer) {
		return false
	}
	if m.name == "" {
		return true
	}
	if slices.Contains(in.Members, m.peer) {
		// Its node is in (or was invited already): the event reaches
		// the agent through the room.
		return false
	}
	return true
}

// waitsNote says that an invite of p waits for its user's answer.
func waitsNote(p peer.ID) string {
	return fmt.Sprintf("%s is not a contact that lets you invite it at once: the invite waits on its node for its user's answer (`parley invites` there)", p)
}

// outOf is the error for a room this node is out of, or nil.
func (b *Inbox) outOf(id identity.RoomID) error {
	name, left := b.rooms.LeftRoom(id)
	if !left {
		return nil
	}
	return localapi.Errorf(http.StatusNotFound, localapi.CodeLeft,
		"this node is out of room %q (%s): its agents left it, or it was removed; a member can invite you back", name, id)
}

// roomErr is apiError, but says so when the node left the room meanwhile.
func (b *Inbox) roomErr(id identity.RoomID, err error) error {
	if errors.Is(err, rooms.ErrUnknownRoom) {
		if out := b.outOf(id); out != nil {
			return out
		}
	}
	return apiError(err)
}

// mustBeIn refuses a call of an agent that left the room.
func (b *Inbox) mustBeIn(agent identity.AgentName, in rooms.Info) error {
	rec, ok, err := b.rooms.AgentState(in.ID, b.addr(agent))
	if errors.Is(err, rooms.ErrUnknownRoom) {
		if err := b.outOf(in.ID); err != nil {
			return err // it left while this call ran
		}
	}
	if err != nil {
		return apiError(err)
	}
	if ok && !rec.In && rec.Removed() {
		return localapi.Errorf(http.StatusForbidden, localapi.CodeLeft,
			"the room's creator removed you (%s) from room %q; a member of another node can invite you back", agent, in.Name)
	}
	if ok && !rec.In {
		return localapi.Errorf(http.StatusForbidden, localapi.CodeLeft,
			"you (%s) left room %q; a member can invite you back", agent, in.Name)
	}
	return nil
}

// mustBeKnown refuses a post as an agent this node does not know, or in
// a room the agent was never let into. Into a room that exists (in set),
// an agent other than human (the node's user, who reads and posts in every
// room of the node) posts only with a membership record there (in, or
// left: mustBeIn says so): one the room's creation, an invite naming it,
// or its node's join made. A registered agent with none is refused,
// not_member, as its read of the room is: before, its first post made it a
// member, and it then read the room's history, which nobody had let it
// read. A name neither registered nor in the room is unknown_agent. For a
// room to be opened (in nil), the agent must be registered on this node
// now or have a record in any room of it. Before, a mistyped --as posted
// as a new agent and made it a member for good (it then owed every ask of
// the room). An agent whose registration lapsed is still a member of its
// rooms, and posts there.
func (b *Inbox) mustBeKnown(ctx context.Context, agent identity.AgentName, in *rooms.Info) error {
	if agent == identity.HumanAgent {
		return nil
	}
	if in != nil {
		if _, ok, err := b.rooms.AgentState(in.ID, b.addr(agent)); err != nil || ok {
			return nil // an error is the caller's to meet (mustBeIn)
		}
		if b.registered(ctx, agent) {
			return notMember(agent, *in)
		}
		return unknownAgent(agent, fmt.Sprintf(" nor a member of room %q", in.Name))
	}
	if b.registered(ctx, agent) || b.hasRecord(agent) {
		return nil
	}
	return unknownAgent(agent, " nor a member of any room here")
}

// MustBeKnown refuses a write other than a room's post (a board's claim or
// release) as an agent this node does not know, as mustBeKnown refuses a
// room to be opened: not human, not registered, in no room of this node.
// The 404 unknown_agent error names `parley agent list`.
func (b *Inbox) MustBeKnown(ctx context.Context, agent identity.AgentName) error {
	return b.mustBeKnown(ctx, agent, nil)
}

// notMember is the error of a post by an agent of this node into a room
// it was never let into. It says who lets the agent in, and that the
// command is theirs to run: an agent with a shell and no $PARLEY_AGENT
// that ran it as told would act as the node's user and let itself in.
func notMember(agent identity.AgentName, in rooms.Info) error {
	return localapi.Errorf(http.StatusForbidden, localapi.CodeNotMember,
		"you (%s) are not in room %q (%s): a member of the room or your user can let you in (`parley room invite %s %s`, run by them)",
		agent, in.Name, in.ID, in.ID, agent)
}

// unknownAgent is the error of a call as an agent this node does not know.
func unknownAgent(agent identity.AgentName, where string) error {
	return localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownAgent,
		"no agent %q is registered on this node,%s: `parley agent list` lists this node's agents (a name mistyped? `parley agent register %s` registers it); nothing was done",
		agent, where, agent)
}

// registered reports whether an agent of this node holds the name now.
func (b *Inbox) registered(ctx context.Context, agent identity.AgentName) bool {
	return slices.ContainsFunc(b.cfg.Agents.List(ctx), func(a localapi.AgentInfo) bool { return a.Name == string(agent) })
}

// hasRecord reports whether agent has a membership record (in, or left)
// in a room of this node.
func (b *Inbox) hasRecord(agent identity.AgentName) bool {
	me := b.addr(agent)
	for _, in := range b.rooms.List() {
		if _, ok, err := b.rooms.AgentState(in.ID, me); err == nil && ok {
			return true
		}
	}
	return false
}

// OpenRoom implements localapi.Edge.
func (b *Inbox) OpenRoom(ctx context.Context, agent string, req localapi.OpenRoomRequest) (localapi.OpenRoomResult, error) {
	res := localapi.OpenRoomResult{Invited: []string{}, Failed: []localapi.Failure{}}
	a, err := parseAgent(agent)
	if err != nil {
		return res, err
	}
	if err := rooms.CheckName(req.Name); err != nil {
		return res, localapi.BadRequest("name: %v", strings.TrimPrefix(err.Error(), "rooms: malformed: "))
	}
	if err := rooms.CheckPurpose(req.Purpose); err != nil {
		return res, localapi.BadRequest("purpose: %v", strings.TrimPrefix(err.Error(), "rooms: malformed: "))
	}
	if len(req.Members) > localapi.MaxOpenMembers {
		return res, localapi.BadRequest("members: %d named, at most %d as the room opens: open it with some and invite the others one by one", len(req.Members), localapi.MaxOpenMembers)
	}
	if err := b.mustBeKnown(ctx, a, nil); err != nil {
		return res, err
	}
	// Opening a room is a post (its create event, and a room kept in
	// memory for good): a muted or killed agent opens none, and the post
	// limit counts it.
	if err := b.checkPost(a); err != nil {
		return res, err
	}
	var ms []member
	for _, s := range req.Members {
		m, err := b.parseMember(s)
		if err != nil {
			return res, err
		}
		if m.name == a && m.peer == b.self || slices.Contains(ms, m) {
			continue
		}
		ms = append(ms, m)
	}
	// A second room of one name would make the name mean nothing to its
	// agent: every call by name would have to give the ID instead.
	for _, in := range b.rooms.List() {
		if in.Name == req.Name && b.isIn(a, in.ID) {
			return res, localapi.Errorf(http.StatusConflict, localapi.CodeAmbiguous,
				"you (%s) are in a room named %q already (%s): post there, or give the new room another name", a, req.Name, in.ID)
		}
	}
	id, err := b.rooms.CreateRoom(ctx, req.Name, req.Purpose, a)
	if err != nil {
		return res, apiError(err)
	}
	b.record(a, audit.RoomCreate, id, map[string]string{"name": req.Name})
	for _, m := range ms {
		_, note, err := b.bringIn(ctx, a, id, m)
		if err != nil {
			res.Failed = append(res.Failed, localapi.Failure{Member: m.String(), Error: errText(err)})
			continue
		}
		res.Invited = append(res.Invited, m.String())
		if note != "" {
			res.Notes = append(res.Notes, note)
		}
		if b.rooms.InviteWaits(m.peer) {
			res.Notes = append(res.Notes, waitsNote(m.peer))
		}
	}
	in, err := b.rooms.Get(id)
	if err != nil {
		return res, apiError(err)
	}
	res.RoomRef = ref(in)
	return res, b.withPending(a, req.Take, handFor(ctx), &res.Pending)
}

// errText is an error's message without its package prefixes.
func errText(err error) string {
	var e *localapi.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

// Invite implements localapi.Edge.
func (b *Inbox) Invite(ctx context.Context, agent string, req localapi.InviteRequest) (localapi.Posted, error) {
	var res localapi.Posted
	a, err := parseAgent(agent)
	if err != nil {
		return res, err
	}
	in, err := b.resolveFor(a, req.Room)
	if err != nil {
		return res, err
	}
	m, err := b.parseMember(req.Member)
	if err != nil {
		return res, err
	}
	if err := b.mustBeIn(a, in); err != nil {
		return res, err
	}
	if err := b.mustBeKnown(ctx, a, &in); err != nil {
		return res, err
	}
	if err := b.checkPost(a); err != nil {
		return res, err
	}
	if m.name == "" {
		res.Already = slices.Contains(in.Members, m.peer)
	} else if rec, ok, err := b.rooms.AgentState(in.ID, m.String()); err == nil && ok && rec.In {
		res.Already = true
	}
	bring := b.bringIn
	if res.Already {
		bring = b.invite // nothing new to audit
	}
	eid, note, err := bring(ctx, a, in.ID, m)
	if err != nil && eid == (rooms.ID{}) {
		return res, apiError(err)
	}
	res.ID, res.Room, res.Note = eid.String(), ref(in), note
	res.Waits = b.waits(in, m)
	if err != nil {
		return res, apiError(err) // invited, but the node could not be told yet
	}
	return res, b.withPending(a, req.Take, handFor(ctx), &res.Pending)
}

// Say implements localapi.Edge.
func (b *Inbox) Say(ctx context.Context, agent string, req localapi.SayRequest) (localapi.Posted, error) {
	var res localapi.Posted
	a, err := parseAgent(agent)
	if err != nil {
		return res, err
	}
	if err := checkText(req.Text); err != nil {
		return res, err
	}
	if err := checkSpent(req.Spent); err != nil {
		return res, err
	}
	in, err := b.resolveFor(a, req.Room)
	if err != nil {
		return res, err
	}
	args := rooms.SayArgs{Agent: a, Text: req.Text, Ask: req.Ask}
	if req.ReplyTo != "" {
		rid, err := rooms.ParseID(req.ReplyTo)
		if err != nil && len(req.ReplyTo) >= rooms.MinIDPrefix && len(req.ReplyTo) < len(rid.String()) {
			// The first characters of an ID, as a room's log shows it.
			rid, err = b.rooms.EventByPrefix(in.ID, req.ReplyTo)
			if err != nil && !errors.Is(err, rooms.ErrMalformed) {
				return res, b.roomErr(in.ID, err)
			}
		}
		if err != nil {
			return res, localapi.BadRequest("the event replied to, %q, is not an event ID (give it whole, or its first %d characters or more)", req.ReplyTo, rooms.MinIDPrefix)
		}
		args.ReplyTo = &rid
	}
	var toNote string
	if req.To != "" {
		m, err := b.parseTo(req.To)
		if err != nil {
			return res, err
		}
		// An agent known not to exist (of this node, or missing from what
		// a contact tells of its agents) is a slip, refused as an ask of
		// it is; one that could not be checked is said in the note.
		if toNote, err = b.checkKnown(ctx, m); err != nil {
			return res, err
		}
		args.To = m.String()
	}
	if err := b.mustBeIn(a, in); err != nil {
		return res, err
	}
	if err := b.mustBeKnown(ctx, a, &in); err != nil {
		return res, err
	}
	if err := b.checkPost(a); err != nil {
		return res, err
	}
	eid, err := b.rooms.Say(ctx, in.ID, args)
	if err != nil {
		return res, b.roomErr(in.ID, err)
	}
	b.cfg.Usage.Posted(string(a), string(in.ID), len(req.Text), req.Ask)
	b.spent(a, req.Spent)
	if args.ReplyTo != nil {
		if ask := b.answered(a, args.ReplyTo.String()); ask != nil {
			b.cfg.Usage.Answered(string(a), string(in.ID), b.now().Sub(time.UnixMilli(ask.Time)))
		}
	}
	res.ID, res.Room = eid.String(), ref(in)
	res.Note = b.nobodyHears(in)
	if res.Note == "" {
		res.Note = toNote
	}
	return res, b.withPending(a, req.Take, handFor(ctx), &res.Pending)
}

// nobodyHears says, when room in has other member nodes and this node's
// policy refuses every one of them (contacts revoked, by either side,
// expired or denied), that a post there reaches no one now: each of them
// refuses this node's events as this node refuses theirs. Else "".
func (b *Inbox) nobodyHears(in rooms.Info) string {
	if b.cfg.CutOff == nil {
		return ""
	}
	var others []string
	for _, p := range in.Members {
		if p == b.self {
			continue
		}
		if !b.cfg.CutOff(p) {
			return ""
		}
		others = append(others, p.String())
	}
	if len(others) == 0 {
		return ""
	}
	return fmt.Sprintf("no other member of room %q can take this now: this node refuses %s (a contact revoked, by either side, expired or denied, or a node no member this node trusts vouched for; see `parley contact list`), so it may stay in this node's log alone", in.Name, strings.Join(others, ", "))
}

// answered drops an ask the agent owes once it replied to it, and returns
// it (nil when the agent did not owe it). The agent's state is brought up
// to date first: an agent that answers without a call that scans (the
// human, from the CLI) has not noted the ask yet; the scan then notes the
// ask and the answer after it, and counts it there.
func (b *Inbox) answered(agent identity.AgentName, ask string) *askRec {
	st, err := b.lock(agent)
	if err != nil {
		return nil // the next scan sees the reply
	}
	defer b.unlock(st)
	if err := b.scan(agent, st); err != nil {
		b.log.Warn("ask answered; the agent's state is not up to date, and the next scan notes it", "agent", string(agent), "err", err)
	}
	rec, ok := st.owed[ask]
	if ok {
		st.sawAsk(agent, ask) // it answers it
		if _, held := st.notes[rec.Invite]; held && rec.Invite != "" {
			st.dropNote(agent, rec.Invite) // the ask stood for it, and was read
		}
		st.dropAsk(agent, "o", ask)
	}
	if err := b.flush(st); err != nil {
		b.log.Warn("ask answered, but not noted; the next scan notes it", "agent", string(agent), "err", err)
	}
	return rec
}

// Reply implements localapi.Edge.
func (b *Inbox) Reply(ctx context.Context, agent string, req localapi.ReplyRequest) (localapi.Posted, error) {
	var res localapi.Posted
	a, err := parseAgent(agent)
	if err != nil {
		return res, err
	}
	if strings.TrimSpace(req.MessageID) == "" {
		return res, localapi.BadRequest("message_id is empty: give the id of the message you answer")
	}
	v, err := b.find(req.MessageID, a)
	if err != nil {
		return res, err
	}
	return b.Say(ctx, agent, localapi.SayRequest{Room: string(v.Room), Text: req.Text, ReplyTo: v.ID.String(), Take: req.Take, Spent: req.Spent})
}

// find looks an event up by ID in the rooms agent may name: its whole ID,
// or its first rooms.MinIDPrefix characters or more, as a room's log shows
// them. human (the node's user; or agent "", the node itself) names every
// room of the node; another agent those it has a record in (it is in
// them, or left them: the caller says it left). An event of another room
// is to it as one that does not exist: the same answer (unknown_event,
// naming only what it gave), and a prefix is matched in its rooms alone.
// Before, a prefix of another room's event was answered with the event's
// whole ID, so an agent could probe rooms it is not in.
func (b *Inbox) find(id string, agent identity.AgentName) (rooms.View, error) {
	id = strings.TrimSpace(id)
	eid, err := rooms.ParseID(id)
	if err != nil && len(id) >= rooms.MinIDPrefix && len(id) < len(eid.String()) {
		eid, err = b.findPrefix(id, agent)
		if err != nil && !errors.Is(err, rooms.ErrMalformed) {
			return rooms.View{}, err
		}
	}
	if err != nil {
		return rooms.View{}, localapi.BadRequest("%.100q is not an event ID (give it whole, 52 characters of a-z and 2-7, or its first %d or more)", id, rooms.MinIDPrefix)
	}
	v, err := b.rooms.Find(eid)
	if err != nil || !b.names(agent, v.Room) {
		return rooms.View{}, localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownEvent,
			"no event %s in %s (parley_read, or `parley room log ROOM`, shows their events and IDs)", eid, b.whose(agent))
	}
	return v, nil
}

// names reports whether agent may name the events of room id (find):
// human (or "") every room's, another agent those of the rooms it has a
// record in.
func (b *Inbox) names(agent identity.AgentName, id identity.RoomID) bool {
	if agent == "" || agent == identity.HumanAgent {
		return true
	}
	_, ok, err := b.rooms.AgentState(id, b.addr(agent))
	return err == nil && ok
}

// whose names the rooms find looks in for agent, for its errors.
func (b *Inbox) whose(agent identity.AgentName) string {
	if agent == "" || agent == identity.HumanAgent {
		return "the rooms of this node"
	}
	return fmt.Sprintf("the rooms you (%s) were let into", agent)
}

// findPrefix finds the one event whose ID begins with prefix in the rooms
// agent may name (find).
func (b *Inbox) findPrefix(prefix string, agent identity.AgentName) (rooms.ID, error) {
	var found []rooms.ID
	for _, in := range b.rooms.List() {
		if !b.names(agent, in.ID) {
			continue
		}
		eid, err := b.rooms.EventByPrefix(in.ID, prefix)
		switch {
		case err == nil:
			found = append(found, eid)
		case errors.Is(err, rooms.ErrAmbiguousID):
			return rooms.ID{}, b.roomErr(in.ID, err)
		case errors.Is(err, rooms.ErrMalformed):
			return rooms.ID{}, err
		}
	}
	switch len(found) {
	case 0:
		return rooms.ID{}, localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownEvent,
			"no event of %s begins with %s (parley_read, or `parley room log ROOM`, shows their events and IDs)", b.whose(agent), prefix)
	case 1:
		return found[0], nil
	}
	return rooms.ID{}, localapi.Errorf(http.StatusConflict, localapi.CodeAmbiguous,
		"%d events of %s begin with %s: give more of the ID", len(found), b.whose(agent), prefix)
}

// Ask implements localapi.Edge.
func (b *Inbox) Ask(ctx context.Context, agent string, req localapi.AskRequest) (localapi.AskResult, error) {
	var res localapi.AskResult
	a, err := parseAgent(agent)
	if err != nil {
		return res, err
	}
	if err := checkText(req.Text); err != nil {
		return res, err
	}
	if err := checkSpent(req.Spent); err != nil {
		return res, err
	}
	if req.To == "" && req.Room == "" {
		return res, localapi.BadRequest("say whom to ask: to (NAME@PEER_ID, or NAME on your node) or room (every member agent is asked)")
	}
	if err := b.checkPost(a); err != nil {
		return res, err // before a room is opened for it
	}
	var to member
	if req.To != "" {
		if to, err = b.parseTo(req.To); err != nil {
			return res, err
		}
		if to.name == a && to.peer == b.self {
			return res, localapi.BadRequest("you cannot ask yourself")
		}
		if res.Note, err = b.checkKnown(ctx, to); err != nil {
			return res, err
		}
	}
	var in rooms.Info
	// brought is the invite this ask posts to bring its addressee in:
	// the ask names it (reply_to), the mark by which the addressee's
	// inbox takes that invitation as the ask's (foldInvite).
	var brought *rooms.ID
	if req.Room != "" {
		if in, err = b.resolveFor(a, req.Room); err != nil {
			return res, err
		}
		if err := b.mustBeIn(a, in); err != nil {
			return res, err
		}
		if err := b.mustBeKnown(ctx, a, &in); err != nil {
			return res, err
		}
		if req.To == "" && !slices.ContainsFunc(in.Agents, func(s string) bool { return s != b.addr(a) }) {
			// An ask of a room is owed by the other agents in it; one
			// that comes in later does not owe what was asked before
			// (scan): no one could ever answer it.
			return res, localapi.Errorf(http.StatusConflict, localapi.CodeConflict,
				"nobody else is in room %q to answer: name the agent to ask (--to, or to in parley_ask), which brings it in, or invite one first (`parley room invite`, parley_invite)", in.Name)
		}
		if req.To != "" {
			// The addressee sees asks of the rooms it is in: bring it in.
			eid, made, err := b.admit(ctx, a, in.ID, to)
			if err != nil {
				if eid == (rooms.ID{}) && errors.Is(err, rooms.ErrInviteRefused) {
					return res, cannotAsk(to, err)
				}
				return res, apiError(err)
			}
			if made {
				brought = &eid
			}
		}
	} else if err := b.mustBeKnown(ctx, a, nil); err != nil {
		return res, err
	} else if in, brought, err = b.roomWith(ctx, a, to); err != nil {
		return res, err
	}
	args := rooms.SayArgs{Agent: a, Text: req.Text, Ask: true, ReplyTo: brought}
	if req.To != "" {
		args.To = to.String()
	}
	eid, err := b.rooms.Say(ctx, in.ID, args)
	if err != nil {
		return res, b.roomErr(in.ID, err)
	}
	b.cfg.Usage.Posted(string(a), string(in.ID), len(req.Text), true)
	b.spent(a, req.Spent)
	res.AskID, res.Room = eid.String(), ref(in)
	if err := b.noteAsked(a, eid, in.ID, args); err != nil {
		return res, err
	}
	wait := time.Duration(req.WaitSeconds * float64(time.Second))
	h := handFor(ctx)
	res.Reply, err = b.waitReply(ctx, a, res.AskID, wait, h)
	if err != nil {
		return res, err
	}
	return res, b.withPending(a, req.Take, h, &res.Pending)
}

// noteAsked records the agent's own ask at once (its scan would too), so
// its reply is caught whatever the order.
func (b *Inbox) noteAsked(agent identity.AgentName, eid rooms.ID, room identity.RoomID, args rooms.SayArgs) error {
	st, err := b.lock(agent)
	if err != nil {
		return err
	}
	defer b.unlock(st)
	st.putAsk(agent, "q", eid.String(), &askRec{Room: room, From: b.addr(agent), Text: args.Text, To: args.To, Time: b.now().UnixMilli()})
	return b.flush(st)
}

// roomWith finds the room where agent and to are the only member agents,
// or opens one and brings to in; then it returns the invite that brought
// to in too.
func (b *Inbox) roomWith(ctx context.Context, agent identity.AgentName, to member) (rooms.Info, *rooms.ID, error) {
	want := []string{b.addr(agent), to.String()}
	slices.Sort(want)
	for _, in := range b.rooms.List() {
		if slices.Equal(in.Agents, want) {
			return in, nil, nil
		}
	}
	// A node this one may not invite (not a contact, say) cannot be asked
	// in a room of the two: say so before a room is made for nothing.
	if err := b.rooms.CanInvite(to.peer); err != nil {
		return rooms.Info{}, nil, cannotAsk(to, err)
	}
	name := b.pairName(agent, to)
	id, err := b.rooms.CreateRoom(ctx, name, fmt.Sprintf("asks between %s and %s", b.addr(agent), to), agent)
	if err != nil {
		return rooms.Info{}, nil, apiError(err)
	}
	b.record(agent, audit.RoomCreate, id, map[string]string{"name": name})
	eid, made, err := b.admit(ctx, agent, id, to)
	if err != nil {
		if eid == (rooms.ID{}) {
			// Not invited (refused since, or not posted): the room has no
			// one to ask; this node leaves it, so a failed ask leaves
			// no room behind.
			if leid, lerr := b.rooms.LeaveNode(ctx, id, agent); lerr != nil {
				b.log.Warn("ask failed; the room opened for it is left behind", "room", string(id), "err", lerr)
			} else {
				b.record(agent, audit.RoomLeave, id, map[string]string{"agent": string(agent), "event": leid.String(), "node_left": "true"})
			}
			if errors.Is(err, rooms.ErrInviteRefused) {
				return rooms.Info{}, nil, cannotAsk(to, err)
			}
		}
		return rooms.Info{}, nil, apiError(err)
	}
	in, err := b.rooms.Get(id)
	if !made {
		return in, nil, apiError(err)
	}
	return in, &eid, apiError(err)
}

// admit brings agent m into room for an ask of agent, as bringIn does
// (the ask checked m is known already): an invite it posts is recorded in
// the audit log, as `room invite` records it; one that finds m in the room
// already posts nothing and records nothing. made reports that eid is an
// invite posted now (not the event that had brought m in before).
func (b *Inbox) admit(ctx context.Context, agent identity.AgentName, room identity.RoomID, m member) (eid rooms.ID, made bool, err error) {
	rec, ok, _ := b.rooms.AgentState(room, m.String())
	eid, err = b.rooms.InviteAgent(ctx, room, m.peer, m.name, agent)
	made = eid != (rooms.ID{}) && !(ok && rec.In)
	if made {
		b.record(agent, audit.RoomInvite, room, map[string]string{"member": m.String(), "event": eid.String()})
	}
	return eid, made, err
}

// cannotAsk is the error of an ask of agent to that its node may not be
// invited for: it says why, and what to do, in terms of the ask.
func cannotAsk(to member, err error) error {
	why := strings.TrimPrefix(err.Error(), rooms.ErrInviteRefused.Error()+": ")
	return localapi.Errorf(http.StatusForbidden, localapi.CodeRefused, "cannot ask %s: %s", to, why)
}

// maxNodeName is the most bytes of a node's name in the name of a room an
// ask opens: two agents (64 bytes each) and two nodes stay under
// rooms.MaxName.
const maxNodeName = 32

// pairName names the room of agent and to that an ask opens, as both
// sides read it: "coder@bob ↔ human@alice" (agents of this node alone:
// "coder ↔ reviewer"). Agents of one node that ask several people, or one
// person asked by agents of the same name on several nodes, so get rooms
// of names of their own.
func (b *Inbox) pairName(agent identity.AgentName, to member) string {
	name := fmt.Sprintf("%s ↔ %s", agent, to.name)
	if to.peer != b.self {
		name = fmt.Sprintf("%s@%s ↔ %s@%s", agent, b.nodeName(b.self), to.name, b.nodeName(to.peer))
	}
	if rooms.CheckName(name) != nil {
		return fmt.Sprintf("%s ↔ %s", agent, to.name) // a name that would not do: as before
	}
	return name
}

// nodeLabel is node p for a message: its name as people read it with its
// peer ID beside it ("alice (12D3KooW…)"), or its peer ID alone when no
// handle of it is known.
func (b *Inbox) nodeLabel(p peer.ID) string {
	if n := b.nodeName(p); !strings.HasPrefix(n, "…") {
		return n + " (" + p.String() + ")"
	}
	return p.String()
}

// nodeName is node p as people read it (its name from the names service),
// at most maxNodeName bytes; a node with no handle known shows as the end
// of its peer ID. A long name is cut in its handle: the ~SUFFIX a name
// that reads like another's shows with stays whole, so the cut name does
// not read as the other's.
func (b *Inbox) nodeName(p peer.ID) string {
	n := ""
	if b.cfg.Names != nil {
		n = strings.TrimSpace(b.cfg.Names.Name(p))
	}
	if n == "" {
		s := p.String()
		n = "…" + s[max(len(s)-8, 0):]
	}
	if len(n) <= maxNodeName {
		return n
	}
	head, tail := n, ""
	if i := strings.LastIndexByte(n, '~'); i > 0 && len(n)-i <= maxNodeName/2 {
		head, tail = n[:i], n[i:]
	}
	cut := maxNodeName - len("…") - len(tail)
	for cut > 0 && !utf8.RuneStart(head[cut]) {
		cut--
	}
	return strings.TrimRight(head[:cut], " ") + "…" + tail
}

// WaitReply implements localapi.Edge.
func (b *Inbox) WaitReply(ctx context.Context, agent, ask string, wait time.Duration, take bool) (localapi.AskResult, error) {
	var res localapi.AskResult
	a, err := parseAgent(agent)
	if err != nil {
		return res, err
	}
	// Looked up in the agent's rooms alone, as a read does: its own asks
	// are in rooms it has a record in, and an event of a room it was never
	// let into is to it as one that does not exist (an ask of another
	// agent of its rooms is refused below).
	v, err := b.find(ask, a)
	if err != nil {
		return res, err
	}
	if v.Kind != rooms.KindAsk || v.Author != b.self || v.Agent != a {
		return res, localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownEvent,
			"%s is not an ask of yours (%s): parley_wait waits for the reply to your own ask", ask, a)
	}
	res.AskID = v.ID.String()
	if in, err := b.rooms.Get(v.Room); err == nil {
		res.Room = ref(in)
	}
	h := handFor(ctx)
	if res.Reply, err = b.waitReply(ctx, a, res.AskID, wait, h); err != nil {
		return res, err
	}
	return res, b.withPending(a, take, h, &res.Pending)
}

// waitReply waits up to wait for the first reply to the agent's ask; the
// reply is then handed out here rather than among the pending items (and
// recorded in a two-step hand-out, h).
func (b *Inbox) waitReply(ctx context.Context, agent identity.AgentName, ask string, wait time.Duration, h *hand) (*localapi.Item, error) {
	changes, stop := b.rooms.Changes()
	defer stop()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		st, err := b.lock(agent)
		if err != nil {
			return nil, err
		}
		if err := b.scan(agent, st); err != nil {
			b.discard(st) // nothing handed out (see keep)
			b.unlock(st)
			return nil, apiError(err)
		}
		var reply *localapi.Item
		known := false
		if a := st.asked[ask]; a != nil {
			known = true
			if reply = b.reply(st, ask, a); reply != nil {
				if _, ok := st.notes[reply.ID]; ok {
					st.dropNote(agent, reply.ID)
					b.handed(st, h, []localapi.Item{*reply})
				}
			}
		}
		// The reply is handed out here, and dropped from the notes in
		// memory; a refused save is logged (see keep).
		b.keep(st)
		b.unlock(st)
		switch {
		case reply != nil:
			return reply, nil
		case !known:
			return nil, localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownEvent,
				"ask %s is no longer open (it expired after %s)", ask, b.cfg.AskTTL)
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

// Read implements localapi.Edge.
func (b *Inbox) Read(ctx context.Context, agent string, req localapi.ReadRequest) (localapi.ReadResult, error) {
	res := localapi.ReadResult{Messages: []localapi.Item{}}
	a, err := parseAgent(agent)
	if err != nil {
		return res, err
	}
	limit := req.Limit
	switch {
	case limit < 0 || limit > MaxRead:
		return res, localapi.BadRequest("limit is %d: it must be 1 to %d", limit, MaxRead)
	case limit == 0:
		limit = 50
	}
	if req.MaxBytes < 0 {
		return res, localapi.BadRequest("max_bytes is %d: it must be positive (or not given: no bound)", req.MaxBytes)
	}
	if strings.TrimSpace(req.ID) != "" {
		if req.Room != "" || req.Limit != 0 || req.Last != 0 {
			return res, localapi.BadRequest("message_id reads one event: give it without room, limit or last")
		}
		it, err := b.readOne(a, req.ID)
		if err != nil {
			return res, err
		}
		res.Messages = append(res.Messages, it)
		b.tellApart(res.Messages, nil)
		return res, b.withPending(a, req.Take, handFor(ctx), &res.Pending)
	}
	var only *rooms.Info
	if req.Room != "" {
		in, err := b.resolveFor(a, req.Room)
		if err != nil {
			return res, err
		}
		// An agent reads its own rooms, as readOne: another agent of the
		// node may be in a room it is not. The user (human) reads every
		// room of the node, as readOne lets it.
		if a != identity.HumanAgent && !b.isIn(a, in.ID) {
			if err := b.mustBeIn(a, in); err != nil {
				return res, err // it left, or was removed: said so
			}
			return res, localapi.Errorf(http.StatusForbidden, localapi.CodeNotMember,
				"you (%s) are not in room %q (%s): you read the events of your own rooms only (parley_who lists them)", a, in.Name, in.ID)
		}
		only = &in
	}
	if req.Last != 0 {
		switch {
		case req.Last < 0 || req.Last > MaxRead:
			return res, localapi.BadRequest("last is %d: it must be 1 to %d (the room's last events)", req.Last, MaxRead)
		case only == nil:
			return res, localapi.BadRequest("last needs a room: give room with it (without last, you read what you have not read in all your rooms)")
		}
		vs, err := b.rooms.Log(only.ID, req.Last, nil)
		if err != nil {
			return res, apiError(err)
		}
		for _, v := range vs {
			if !b.hidden(v) {
				res.Messages = append(res.Messages, item(v, only.Name))
			}
		}
		res.Messages, res.LeftOut = newestWithin(res.Messages, req.MaxBytes)
		b.tellApart(res.Messages, nil)
		return res, b.withPending(a, req.Take, handFor(ctx), &res.Pending)
	}
	h := handFor(ctx)
	st, err := b.lock(a)
	if err != nil {
		return res, err
	}
	err = b.scan(a, st)
	if err == nil {
		res.Messages, res.More, err = b.readLocked(a, st, only, limit, req.MaxBytes)
	}
	if err != nil {
		// Nothing is shown: read cursors moved before the error (in
		// another room) go back (see keep).
		b.discard(st)
		b.unlock(st)
		return localapi.ReadResult{Messages: []localapi.Item{}}, apiError(err)
	}
	// The messages are shown and their read cursors moved in memory; a
	// refused save is logged (see keep).
	b.handed(st, h, res.Messages)
	b.keep(st)
	b.unlock(st)
	b.tellApart(res.Messages, nil)
	return res, b.withPending(a, req.Take, h, &res.Pending)
}

// readOne is the event id (whole, or its first rooms.MinIDPrefix
// characters or more) of a room the agent is in, whole, read or not; it
// moves no read cursor. An event of a room the agent was never in is to it
// as one that does not exist (find: unknown_event, its ID not given); one
// of a room it left is refused as a read of that room is (left), and one
// of an author hidden from the node's agents as one not found is, its
// text not given.
//
// The agent human is the node's user (no agent registers under that name):
// it reads any event of a room the node holds, hidden or not, as `parley
// room log` and the dashboard show the user every room's events; rooms
// its agents opened, or were invited into by name, hold no human.
func (b *Inbox) readOne(agent identity.AgentName, id string) (localapi.Item, error) {
	v, err := b.find(id, agent)
	if err != nil {
		return localapi.Item{}, err
	}
	if agent != identity.HumanAgent && !b.isIn(agent, v.Room) {
		// A room it left, or was removed from: said so, as a read of the
		// room says it, without the event's ID.
		in, err := b.rooms.Get(v.Room)
		if err == nil {
			err = b.mustBeIn(agent, in)
		}
		if err == nil {
			err = localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownEvent,
				"no event %s in %s", id, b.whose(agent))
		}
		return localapi.Item{}, err
	}
	if agent != identity.HumanAgent && b.hidden(v) {
		return localapi.Item{}, localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownEvent,
			"event %s is hidden from this node's agents: its author is muted or its node cut off", v.ID)
	}
	name := ""
	if in, err := b.rooms.Get(v.Room); err == nil {
		name = in.Name
	}
	return item(v, name), nil
}

// newestWithin keeps the newest of items whose texts fit in maxBytes
// together (the newest always; every one when maxBytes is not set) and
// says how many older ones it left out.
func newestWithin(items []localapi.Item, maxBytes int) ([]localapi.Item, int) {
	if maxBytes <= 0 || len(items) == 0 {
		return items, 0
	}
	used, i := 0, len(items)
	for i > 0 && (i == len(items) || used+len(items[i-1].Text) <= maxBytes) {
		i--
		used += len(items[i].Text)
	}
	return items[i:], i
}

// readLocked returns up to limit events the agent has not seen, in one room
// or in every room it is in, and moves its read cursors. With maxBytes set
// it stops before an event whose text would take the page's texts past it
// (the page's first event is always taken).
func (b *Inbox) readLocked(agent identity.AgentName, st *state, only *rooms.Info, limit, maxBytes int) ([]localapi.Item, bool, error) {
	var list []rooms.Info
	if only != nil {
		list = []rooms.Info{*only}
	} else {
		me := b.addr(agent)
		for _, in := range b.rooms.List() {
			if slices.Contains(in.Agents, me) {
				list = append(list, in)
			}
		}
	}
	out := []localapi.Item{}
	more, full := false, false
	used := 0
	for _, in := range list {
		left := limit - len(out)
		if left <= 0 || full {
			more = true
			break
		}
		after := st.read[in.ID]
		// Read among all its rooms, a board room gives only what was
		// said in it: its joins, claims and releases are read past
		// unshown (the board's notices tell the agent what concerns it).
		boardRoom := only == nil && isBoardRoom(in.Name)
		for left > 0 && !full {
			vs, err := b.rooms.Since(in.ID, after, left+1)
			if err != nil {
				return nil, false, err
			}
			if len(vs) == 0 {
				break
			}
			for _, v := range vs {
				if left == 0 {
					more = true
					break
				}
				// Asked before the event counts in any way: one that
				// would pass the bound stays unread, as it was.
				if maxBytes > 0 && len(out) > 0 && used+len(v.Text) > maxBytes {
					more, full = true, true
					break
				}
				after = v.Arrival
				if v.Author == b.self && v.Agent == agent {
					continue // its own words are never unread
				}
				if boardRoom && v.Kind != rooms.KindMessage && v.Kind != rooms.KindAsk {
					continue // the board's traffic: parley_board shows it
				}
				if b.hidden(v) || st.replyToOwn(v) {
					continue // a reply to its ask is shown as the reply
				}
				if v.Arrival <= st.scan[in.ID] && b.unreadMessage(st, v) {
					st.unread[in.ID] = max(st.unread[in.ID]-1, 0)
				}
				if b.askFor(st, v) && v.Arrival <= st.scan[in.ID] {
					// An ask it owes is shown as an ask: in full, under the
					// line that says someone is blocked on it, by the
					// pending items of this very result (it stays unshown
					// here), then as reminders. One it was shown already, or
					// answered itself, is not unread; one it no longer owes
					// unseen (another answered it, it expired) still is.
					o := st.owed[v.ID.String()]
					if _, saw := st.sawAsks[v.ID.String()]; o != nil && o.Shown || o == nil && saw {
						continue
					}
				}
				out = append(out, item(v, in.Name))
				used += len(v.Text)
				left--
			}
		}
		if after > st.read[in.ID] {
			st.setCursor(agent, "r", in.ID, after)
		}
	}
	return out, more, nil
}

// Leave implements localapi.Edge.
func (b *Inbox) Leave(ctx context.Context, agent string, req localapi.LeaveRequest) (localapi.LeaveResult, error) {
	var res localapi.LeaveResult
	a, err := parseAgent(agent)
	if err != nil {
		return res, err
	}
	in, err := b.resolveFor(a, req.Room)
	if err != nil {
		return res, err
	}
	res.Room = ref(in)
	var eid rooms.ID
	if req.Node {
		// An agent that left (or was removed) is told so, as its posts
		// are: it takes no node out of a room it is no longer in. The
		// node's user (human) takes the node out whether or not it left.
		if a != identity.HumanAgent {
			if err := b.mustBeIn(a, in); err != nil {
				return res, err
			}
		}
		if err := b.mustBeKnown(ctx, a, &in); err != nil {
			return res, err
		}
		eid, err = b.rooms.LeaveNode(ctx, in.ID, a)
		res.NodeLeft = err == nil
	} else {
		rec, ok, serr := b.rooms.AgentState(in.ID, b.addr(a))
		if serr != nil {
			return res, apiError(serr)
		}
		if !ok || !rec.In {
			return res, localapi.Errorf(http.StatusConflict, localapi.CodeConflict, "you (%s) are not in room %.100q", a, in.Name)
		}
		eid, err = b.rooms.Leave(ctx, in.ID, a)
		if err == nil && !b.localAgentsIn(in.ID) {
			// Its last agent left: the node leaves too.
			eid, err = b.rooms.LeaveNode(ctx, in.ID, a)
			res.NodeLeft = err == nil
		}
	}
	if err != nil {
		return res, apiError(err)
	}
	d := map[string]string{"agent": string(a), "event": eid.String()}
	if res.NodeLeft {
		d["node_left"] = "true"
	}
	b.record(a, audit.RoomLeave, in.ID, d)
	res.ID = eid.String()
	b.leftRoom(a, in.ID)
	return res, b.withPending(a, req.Take, handFor(ctx), &res.Pending)
}

// localAgentsIn reports whether an agent of this node is in the room.
func (b *Inbox) localAgentsIn(room identity.RoomID) bool {
	as, err := b.rooms.Agents(room)
	if err != nil {
		return false
	}
	suffix := "@" + b.self.String()
	return slices.ContainsFunc(as, func(a rooms.AgentMember) bool { return a.In && strings.HasSuffix(a.Addr, suffix) })
}

// leftRoom drops the asks an agent owed in a room it left.
func (b *Inbox) leftRoom(agent identity.AgentName, room identity.RoomID) {
	st, err := b.lock(agent)
	if err != nil {
		return
	}
	defer b.unlock(st)
	st.dropOwedIn(agent, room)
	if err := b.flush(st); err != nil {
		b.log.Warn("left, but owed asks not dropped", "agent", string(agent), "err", err)
	}
}

// Dismiss implements localapi.Edge.
func (b *Inbox) Dismiss(ctx context.Context, agent string, req localapi.DismissRequest) (localapi.Pending, error) {
	a, err := parseAgent(agent)
	if err != nil {
		return localapi.Pending{}, err
	}
	// The ask's ID whole, or its first rooms.MinIDPrefix characters or
	// more, as the other calls take an event's (looked up in the agent's
	// rooms alone, as find does).
	id := strings.TrimSpace(req.AskID)
	if _, perr := rooms.ParseID(id); perr != nil && len(id) >= rooms.MinIDPrefix {
		v, ferr := b.find(id, a)
		switch {
		case ferr == nil:
			id = v.ID.String()
		case localapi.IsCode(ferr, localapi.CodeAmbiguous):
			return localapi.Pending{}, ferr
		}
	}
	st, err := b.lock(a)
	if err != nil {
		return localapi.Pending{}, err
	}
	err = b.scan(a, st)
	_, owed := st.owed[id]
	if err == nil && owed {
		st.dropAsk(a, "o", id)
	}
	if err == nil {
		err = b.flush(st)
	}
	if err != nil {
		// A dismiss is its write: refused, the ask stays owed in memory
		// too (see keep), and the agent, told it failed, can dismiss it
		// again once the disk has room.
		b.discard(st)
	}
	b.unlock(st)
	switch {
	case err != nil:
		return localapi.Pending{}, apiError(err)
	case !owed:
		return localapi.Pending{}, localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownEvent,
			"you owe no ask %.100q (answered, expired or never yours; your pending items list the asks you owe)", req.AskID)
	}
	var p localapi.Pending
	return p, b.withPending(a, req.Take, handFor(ctx), &p)
}

// Who implements localapi.Edge.
func (b *Inbox) Who(ctx context.Context, agent string, req localapi.AgentRequest) (localapi.WhoResult, error) {
	res := localapi.WhoResult{Agents: []localapi.WhoEntry{}, Rooms: []localapi.AgentRoom{}}
	a, err := parseAgent(agent)
	if err != nil {
		return res, err
	}
	if ws := b.cfg.Agents.Who(ctx); ws != nil {
		res.Agents = ws
	}
	if a != identity.HumanAgent {
		// A muted agent of another node (or one of a node cut off)
		// says nothing to this node's agents through its card either:
		// what it works on, its role and its claims' notes are its
		// text; who it is, its state and the paths it holds stay.
		for i := range res.Agents {
			if w := &res.Agents[i]; !w.Local && b.hiddenFrom(w.Address) {
				w.WorkingOn, w.Role = "", ""
				for j := range w.Claims {
					w.Claims[j].Note = ""
				}
			}
		}
	}
	if err := b.withPending(a, req.Take, handFor(ctx), &res.Pending); err != nil {
		return res, err
	}
	me := b.addr(a)
	st, err := b.lock(a)
	if err != nil {
		return res, err
	}
	defer b.unlock(st)
	for _, in := range b.rooms.List() {
		if slices.Contains(in.Agents, me) {
			res.Rooms = append(res.Rooms, localapi.AgentRoom{RoomRef: ref(in), Members: slices.Clone(in.Agents), Unread: st.unread[in.ID]})
		}
	}
	return res, nil
}

// checkPost asks moderation whether the agent may post now, counting the
// post against its limit.
func (b *Inbox) checkPost(agent identity.AgentName) error {
	if b.cfg.Moderation == nil {
		return nil
	}
	return b.cfg.Moderation.CheckPost(agent)
}

// hidden reports whether v comes from an agent of another node that this
// node's user muted, or from a node the user cut off: it stays in the
// room's log, but no agent here is shown it or owes it anything.
func (b *Inbox) hidden(v rooms.View) bool {
	if v.Author == b.self {
		return false
	}
	if b.cfg.CutOff != nil && b.cfg.CutOff(v.Author) {
		return true
	}
	return b.cfg.Moderation != nil && b.cfg.Moderation.Hidden(from(v))
}

// hiddenFrom is hidden for an agent's address (NAME@PEER_ID), as an ask
// owed since before its node was cut off or its agent muted holds it.
func (b *Inbox) hiddenFrom(addr string) bool {
	a, err := identity.ParseAgentAddr(addr)
	if err != nil || a.Peer == "" || a.Peer == b.self {
		return false
	}
	if b.cfg.CutOff != nil && b.cfg.CutOff(a.Peer) {
		return true
	}
	return b.cfg.Moderation != nil && b.cfg.Moderation.Hidden(addr)
}
