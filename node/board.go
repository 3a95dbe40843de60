package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/rooms/board"
)

// Board returns the node's boards of advisory claims.
func (n *Node) Board() *board.Service { return n.board }

func (n *Node) newBoard() error {
	b, err := board.New(board.Config{Rooms: n.rooms, Self: n.id, Contacts: n.activeContacts, Logger: n.log, Store: n.db, Hidden: n.mutedHolder})
	if err != nil {
		return err
	}
	n.board = b
	n.boardKick.Store(b)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := b.Run(n.ctx); err != nil {
			n.log.Error("board stopped", "err", err)
		}
	}()
	return nil
}

// boardAPI serves the boards in the local API's terms.
type boardAPI struct{ n *Node }

var _ localapi.Board = boardAPI{}

func apiClaim(h board.Held) localapi.Claim {
	return localapi.Claim{Path: h.Path, Holder: h.Holder, Note: h.Note, Since: time.UnixMilli(h.Since).UTC(),
		Expires: time.UnixMilli(h.Expires).UTC(), Event: h.Event}
}

func apiClaims(hs []board.Held) []localapi.Claim {
	out := make([]localapi.Claim, len(hs))
	for i, h := range hs {
		out[i] = apiClaim(h)
	}
	return out
}

func boardAgent(agent string) (identity.AgentName, error) {
	a, err := identity.ParseGivenAgentName(agent)
	if err != nil {
		return "", localapi.BadRequest("%v", err)
	}
	return a, nil
}

// take adds the agent's pending items when asked to.
func (b boardAPI) take(ctx context.Context, agent string, take bool, p *localapi.Pending) error {
	if !take {
		*p = localapi.Pending{}.OrEmpty()
		return nil
	}
	v, err := b.n.inbox.Take(ctx, agent)
	if localapi.IsCode(err, localapi.CodeUnknownAgent) {
		// A name no agent holds, in no room, with nothing pending: the
		// board's call is done, and nothing waits for it.
		v, err = localapi.Pending{}, nil
	}
	*p = v.OrEmpty()
	return err
}

func (b boardAPI) Claim(ctx context.Context, agent string, req localapi.ClaimRequest) (localapi.ClaimResult, error) {
	a, err := boardAgent(agent)
	if err != nil {
		return localapi.ClaimResult{}, err
	}
	// A claim is a post, as a message is (a signed event every member of
	// the board stores for good, and paths held against every other
	// agent): a muted or killed agent claims nothing, and the post limit
	// counts it. Before, it was counted before the board checked it, so
	// claims refused as a conflict or as bad used up the limit; now it is
	// checked up front (MayPost) and counted once posted (Posted). A
	// killed agent's name is no longer registered: it is told it was
	// killed, not that it is unknown. A release is not checked: it only
	// gives back.
	if b.n.mod != nil && b.n.mod.Killed(a) {
		if err := (modEdge{b.n.mod}).MayPost(a); err != nil {
			return localapi.ClaimResult{}, err
		}
	}
	if err := b.n.inbox.MustBeKnown(ctx, a); err != nil {
		return localapi.ClaimResult{}, err // a made-up name holds nothing
	}
	ttl := time.Duration(req.TTLSeconds * float64(time.Second)).Round(time.Millisecond)
	if req.TTLSeconds < 0 {
		return localapi.ClaimResult{}, localapi.BadRequest("ttl_seconds must not be negative")
	}
	if req.TTLSeconds > 0 && ttl <= 0 {
		// Zero asks for the default (30 minutes): a positive ttl that
		// rounds to it is refused, not held for half an hour.
		return localapi.ClaimResult{}, localapi.BadRequest("ttl_seconds must be at least 0.001 (or 0 for the default)")
	}
	// MayPost is asked before each try (the first included): before, an
	// agent killed (or muted) while its claim waited for another to go
	// had it posted afterwards, paths held for the claim's whole ttl by an
	// agent that could no longer release them. A kill that comes between
	// the last check and the post finds the claim on the board and
	// releases it (releaseAll); one that comes after both is caught below.
	var mayPost func() error
	if b.n.mod != nil {
		mayPost = func() error { return (modEdge{b.n.mod}).MayPost(a) }
	}
	res, err := b.n.board.Claim(ctx, a, board.ClaimRequest{Project: req.Project, Paths: req.Paths, Note: req.Note,
		TTL:     ttl,
		Wait:    time.Duration(req.WaitSeconds * float64(time.Second)),
		MayPost: mayPost})
	if ce := (*board.ConflictError)(nil); errors.As(err, &ce) {
		ce.Held.Note = b.note(a, ce.Held.Holder, ce.Held.Note)
	}
	if err != nil {
		return localapi.ClaimResult{}, boardError(err)
	}
	if b.n.mod != nil && b.n.mod.Killed(a) {
		if err := b.n.releaseAll(ctx, a); err != nil {
			return localapi.ClaimResult{}, fmt.Errorf("agent %s was killed while its claim was made, and the claim could not be released: %w", a, err)
		}
		return localapi.ClaimResult{}, (modEdge{b.n.mod}).MayPost(a)
	}
	if b.n.mod != nil {
		(modEdge{b.n.mod}).Posted(a)
	}
	out := localapi.ClaimResult{Project: req.Project, Event: res.Event, Held: apiClaims(res.Held), WaitedSeconds: res.Waited.Seconds()}
	for i := range out.Held {
		out.Held[i].Note = b.note(a, out.Held[i].Holder, out.Held[i].Note)
	}
	return out, b.take(ctx, agent, req.Take, &out.Pending)
}

func (b boardAPI) Release(ctx context.Context, agent string, req localapi.ReleaseRequest) (localapi.ReleaseResult, error) {
	a, err := boardAgent(agent)
	if err != nil {
		return localapi.ReleaseResult{}, err
	}
	if err := b.n.inbox.MustBeKnown(ctx, a); err != nil {
		return localapi.ReleaseResult{}, err // a made-up name holds nothing
	}
	res, err := b.n.board.Release(ctx, a, req.Project, req.Paths)
	if err != nil {
		return localapi.ReleaseResult{}, boardError(err)
	}
	out := localapi.ReleaseResult{Project: req.Project, Event: res.Event, Released: res.Released, Held: apiClaims(res.Held)}
	return out, b.take(ctx, agent, req.Take, &out.Pending)
}

func (b boardAPI) Board(ctx context.Context, agent string, req localapi.BoardRequest) (localapi.BoardView, error) {
	a, err := boardAgent(agent)
	if err != nil {
		return localapi.BoardView{}, err
	}
	// The paths asked about are compared with every claim: as long and as
	// starred as a claim's may be, no more (the guard passes file names as
	// they are, "[" and all, so they are not checked as patterns).
	for _, p := range req.Paths {
		if len(p) > board.MaxPattern || board.Stars(p) > board.MaxStars {
			return localapi.BoardView{}, localapi.BadRequest("path %.60q: at most %d bytes and %d * or **", p, board.MaxPattern, board.MaxStars)
		}
	}
	v, err := b.n.board.Board(ctx, req.Project)
	if err != nil {
		return localapi.BoardView{}, boardError(err)
	}
	// Claims matter once two parties work here: the live sessions, whoever
	// holds a claim (a person, an agent whose session ended), and the one
	// who asks (a person reading the board while another node's agent
	// holds a claim that this node's git guard enforces on their commits).
	alive := b.alive(ctx, v.Rooms)
	parties := map[string]bool{string(a) + "@" + b.n.id.String(): true}
	for _, a := range alive {
		parties[a] = true
	}
	for _, h := range v.Claims {
		parties[h.Holder] = true
	}
	if len(req.Paths) > 0 {
		v.Claims = slices.DeleteFunc(v.Claims, func(h board.Held) bool {
			return !slices.ContainsFunc(req.Paths, func(p string) bool { return board.Overlap(h.Path, p) })
		})
	}
	out := localapi.BoardView{Project: v.Project, Rooms: v.Rooms, Claims: apiClaims(v.Claims), Alive: alive}
	for i := range out.Claims {
		out.Claims[i].Note = b.note(a, out.Claims[i].Holder, out.Claims[i].Note)
	}
	switch {
	case len(parties) > 1:
	case len(alive) == 0:
		out.Note = "no agent session is alive in this project: claims are optional overhead until two are"
	default:
		out.Note = "only one agent session is alive in this project: claims are optional overhead until another one comes"
	}
	return out, b.take(ctx, agent, req.Take, &out.Pending)
}

// note is the note of holder's claim as agent is shown it: none when
// holder is another node's agent this node's user muted (its notes are
// text to this node's agents, as its messages are), except to the user.
// Its claims still hold.
func (b boardAPI) note(agent identity.AgentName, holder, note string) string {
	if agent != identity.HumanAgent && b.n.mutedHolder(holder) {
		return ""
	}
	return note
}

// mutedHolder reports whether holder is another node's agent this node's
// user muted: its notes are kept from this node's agents (the board's
// view and history, and its notices: board.Config.Hidden).
func (n *Node) mutedHolder(holder string) bool {
	if n.mod == nil {
		return false
	}
	h, err := identity.ParseAgentAddr(holder)
	return err == nil && h.Peer != n.id && n.mod.Hidden(holder)
}

func (b boardAPI) History(ctx context.Context, agent string, req localapi.BoardRequest) (localapi.BoardHistory, error) {
	a, err := boardAgent(agent)
	if err != nil {
		return localapi.BoardHistory{}, err
	}
	rs, err := b.n.board.History(ctx, req.Project, req.Path)
	if err != nil {
		return localapi.BoardHistory{}, boardError(err)
	}
	out := localapi.BoardHistory{Project: req.Project, Events: make([]localapi.BoardEvent, len(rs))}
	for i, r := range rs {
		e := localapi.BoardEvent{ID: r.ID, Room: r.Room, Holder: r.Holder, Kind: r.Kind, Time: time.UnixMilli(r.Time).UTC(),
			Paths: orEmpty(r.Paths), Note: b.note(a, r.Holder, r.Note), Bad: r.Bad}
		if r.Expires != 0 {
			t := time.UnixMilli(r.Expires).UTC()
			e.Expires = &t
		}
		if r.Lost != nil {
			c := apiClaim(*r.Lost)
			c.Note = b.note(a, c.Holder, c.Note)
			e.LostTo = &c
		}
		out.Events[i] = e
	}
	return out, b.take(ctx, agent, req.Take, &out.Pending)
}

// alive lists the live agents of the board's member nodes (this node's
// agents, and its contacts' whose node is in one of the board's rooms).
// Before the first claim the project has no board room, so no members to
// go by: the first claim shares the board with every active contact
// (board.Service.Run invites them), so their live agents all count.
func (b boardAPI) alive(ctx context.Context, roomIDs []string) []string {
	anyone := len(roomIDs) == 0
	members := map[string]bool{b.n.id.String(): true}
	for _, id := range roomIDs {
		if in, err := b.n.rooms.Get(identity.RoomID(id)); err == nil {
			for _, p := range in.Members {
				members[p.String()] = true
			}
		}
	}
	out := []string{}
	for _, w := range b.n.agents.Who(ctx) {
		if anyone || members[w.PeerID] { // Who lists active contacts' agents only
			out = append(out, w.Agent+"@"+w.PeerID)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// boardErrors give board errors an HTTP status and a code.
var boardErrors = localapi.ErrorTable{Rows: []localapi.Mapping{
	{Status: http.StatusConflict, Code: localapi.CodeClaimed, Errs: []error{board.ErrConflict}},
	{Status: http.StatusConflict, Code: localapi.CodeNotHeld, Errs: []error{board.ErrNotHeld}},
	{Status: http.StatusBadRequest, Code: localapi.CodeBadRequest, Errs: []error{board.ErrBadInput}},
}}

func boardError(err error) error {
	out := boardErrors.Wrap(err)
	var ce *board.ConflictError
	var e *localapi.Error
	if errors.As(err, &ce) && errors.As(out, &e) && e.Code == localapi.CodeClaimed {
		e.Expires = ce.Held.Expires
	}
	return out
}

// boardNotices are the board's pending items for an agent (the inbox lists
// them after replies).
func (n *Node) boardNotices(agent identity.AgentName, take bool, fits func(size int) bool) []localapi.Item {
	if n.board == nil {
		return nil
	}
	var out []localapi.Item
	within := func(no board.Notice) bool {
		size := len(no.Text) + len(no.Project)
		for _, p := range no.Paths {
			size += len(p)
		}
		if no.Held != nil {
			size += len(no.Held.Holder)
		}
		return fits(size)
	}
	for _, no := range n.board.NoticesWithin(agent, take, within) {
		it := localapi.Item{Kind: no.Kind, ID: no.ID, Text: no.Text, Time: no.Time, Paths: no.Paths, Project: no.Project}
		if no.Held != nil {
			it.From, it.Expires = no.Held.Holder, no.Held.Expires
		}
		out = append(out, it)
	}
	return out
}

// withClaims puts each agent's live claims beside what it works on.
func (n *Node) withClaims(ws []localapi.WhoEntry) {
	if n.board == nil || len(ws) == 0 {
		return
	}
	byHolder := map[string][]localapi.Claim{}
	for key, hs := range n.board.Claims() {
		for _, h := range hs {
			c := apiClaim(h)
			c.Project = key
			byHolder[h.Holder] = append(byHolder[h.Holder], c)
		}
	}
	for i := range ws {
		ws[i].Claims = byHolder[ws[i].Address]
	}
}

// releaseAll releases every claim agent holds, on every board. A kill
// does it: before, a killed agent's claims stayed on the board for their
// whole ttl (hours of files held against every other agent and their
// commits, by an agent that could no longer release them); now they go
// with it, and so do the refused claims the board watches for it (it is
// told nothing more). A mute is temporary and keeps them.
func (n *Node) releaseAll(ctx context.Context, agent identity.AgentName) error {
	if n.board == nil {
		return nil
	}
	n.board.Forget(agent)
	holder := string(agent) + "@" + n.id.String()
	var errs []error
	for key, hs := range n.board.Claims() {
		if !slices.ContainsFunc(hs, func(h board.Held) bool { return h.Holder == holder }) {
			continue
		}
		if _, err := n.board.Release(ctx, agent, key, nil); err != nil && !errors.Is(err, board.ErrNotHeld) {
			errs = append(errs, fmt.Errorf("board of %s: %w", key, err))
		}
	}
	return errors.Join(errs...)
}
