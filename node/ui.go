package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/moderation"
	"github.com/parley-mesh/parley/internal/ui"
	"github.com/parley-mesh/parley/internal/usage"
)

// uiActions are the local API routes the dashboard's page may use: the
// human's posts, replies, invites, new rooms and removals (from the rooms
// this node created), the human's invitations taken (a room opened, or its
// invitation dismissed), contact decisions, answers to the invites and
// organisation memberships that wait, room logs, and an event by ID (the
// whole text of an ask the human panel shows clipped).
var uiActions = []string{
	"POST /v1/agents/human/say",
	"POST /v1/agents/human/reply",
	"POST /v1/agents/human/invite",
	"POST /v1/agents/human/rooms",
	"POST /v1/agents/human/invitations/take",
	"POST /v1/contacts/approve",
	"POST /v1/contacts/deny",
	"POST /v1/contacts/revoke",
	"POST /v1/invites/accept",
	"POST /v1/invites/decline",
	"POST /v1/org/accept",
	"POST /v1/org/decline",
	"POST /v1/moderation/mute",
	"POST /v1/moderation/unmute",
	"POST /v1/moderation/kill",
	"POST /v1/moderation/revive",
	"POST /v1/rooms/{room}/remove",
	"GET /v1/rooms/{room}/log",
	"GET /v1/events/{id}",
}

// auditShown is how many audit entries the dashboard shows.
const auditShown = 50

// startUI serves the dashboard on 127.0.0.1 and [::1] (ui.Listen). A port that
// cannot be bound is logged, and the node runs without its dashboard.
func (n *Node) startUI() {
	fail := func(err error) {
		n.uiErr = err.Error()
		n.log.Error("dashboard not served", "err", err)
	}
	ln, moved, err := n.uiListen()
	if err != nil {
		if moved {
			// The port open tabs know is held by another program, which
			// gets what they send while this node runs without its
			// dashboard: a new token at the next start makes it worth
			// nothing.
			if rerr := os.Remove(filepath.Join(n.cfg.Home, ui.TokenFileName)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				err = fmt.Errorf("%w; and its token cannot be replaced: %w", err, rerr)
			}
		}
		fail(err)
		return
	}
	if moved {
		// Another program holds the port an open tab of the page knows,
		// and a tab reloaded there hands it the token the tab keeps:
		// whoever listens there may have it. A new token makes it worth
		// nothing.
		if err := os.Remove(filepath.Join(n.cfg.Home, ui.TokenFileName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			ln.Close()
			fail(fmt.Errorf("the dashboard's last port is taken, and its token cannot be replaced: %w", err))
			return
		}
		n.log.Warn("the dashboard's last port is held by another program: a new token replaces the old one, which a saved address of the page would have sent there (run `parley ui` for the new address)")
	}
	tok, replaced, err := ui.LoadToken(n.cfg.Home)
	if err != nil {
		ln.Close()
		fail(err)
		return
	}
	if replaced {
		n.log.Warn("the dashboard's token file was open to other users: a new token replaces it (run `parley ui` for the new address)",
			"file", filepath.Join(n.cfg.Home, ui.TokenFileName))
	}
	srv, err := ui.New(ui.Config{
		Token: tok, Feed: n.inbox, API: n.api.Handler(), Actions: uiActions, Panels: n.uiPanels,
		Node: n.id.String(), Handle: n.cfg.Handle, Logger: n.log,
	})
	if err != nil {
		ln.Close()
		fail(err)
		return
	}
	n.ui, n.uiAddr = srv, ln.Addr().String()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := srv.Serve(ln); err != nil {
			n.log.Error("dashboard stopped", "err", err)
		}
	}()
}

// UIPortFileName is the file in the home that keeps the port the dashboard
// had, when the config sets none: the next start takes it again if it is
// free, so a saved address of the page keeps working.
const UIPortFileName = "ui.port"

// uiListen opens the dashboard's port: the config's ui_port; else the port
// it had last time, when that is free; else any free port, kept for the
// next start. moved says the last port was taken (or the configured one
// could not be bound: err is then set too).
func (n *Node) uiListen() (ln net.Listener, moved bool, err error) {
	if n.cfg.UIPort != 0 {
		// The configured port not bound (another program may hold it):
		// moved, so that the token changes as when the port kept is taken.
		ln, err = ui.Listen(n.cfg.UIPort)
		return ln, err != nil, err
	}
	path := filepath.Join(n.cfg.Home, UIPortFileName)
	if b, rerr := os.ReadFile(path); rerr == nil {
		if last, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && last > 0 && last <= 65535 {
			if ln, err = ui.Listen(last); err != nil {
				n.log.Info("the dashboard's last port is taken; the system chooses another (a saved address of the page no longer works: run `parley ui`)",
					"port", last, "err", err)
				ln, moved = nil, true
			}
		}
	}
	if ln == nil {
		if ln, err = ui.Listen(0); err != nil {
			return nil, moved, err
		}
	}
	if _, port, err := net.SplitHostPort(ln.Addr().String()); err == nil {
		tmp := path + ".tmp"
		err := os.WriteFile(tmp, []byte(port+"\n"), 0o600)
		if err == nil {
			err = os.Rename(tmp, path)
		}
		if err != nil {
			n.log.Warn("the dashboard's port is not kept for the next start", "err", err)
		}
	}
	return ln, moved, nil
}

// UIError says why the dashboard is not served (empty when it is, or when
// the node was started without it).
func (n *Node) UIError() string {
	if n.uiAddr != "" {
		return ""
	}
	return n.uiErr
}

// uiInfo is the dashboard's address for `parley ui`: a new one each time,
// which opens the page once (ui.Server.TicketURL).
func (n *Node) uiInfo() localapi.UIInfo {
	if n.uiAddr == "" {
		msg := n.uiErr
		if msg == "" {
			msg = "the dashboard is off"
		}
		return localapi.UIInfo{Error: msg}
	}
	u, err := n.ui.TicketURL(n.uiAddr)
	if err != nil {
		return localapi.UIInfo{Error: err.Error()}
	}
	return localapi.UIInfo{URL: u}
}

// humanShown is how many of the asks owed by the human the dashboard's
// panel holds (a fair share of each asking node's, see humanPanel); askClip and askClipLines bound each one's text
// there as the page clips a long text (in UTF-16 code units, as the page
// counts, and lines): an ask's text may be 64 KiB, and the panel's JSON is
// built and compared every second for each open page.
const (
	humanShown   = 50
	askClip      = 2000
	askClipLines = 40
)

// invitationsShown is how many of the invitations waiting for the human the
// dashboard's panel holds (the oldest), and invitationsView that panel: a
// node may be invited into many rooms, and the panel's JSON is built and
// compared every second for each open page.
const invitationsShown = 50

type invitationsView struct {
	Items []localapi.Item `json:"items"`
	More  int             `json:"more"`            // invitations not listed (`parley inbox` lists them)
	Error string          `json:"error,omitempty"` // why they do not read; Items is then empty
}

// auditView is the dashboard's audit panel: the last entries, or why the
// log does not read. Before, a damaged log (audit.ErrDamaged) gave the page
// an empty table, which reads as "nothing happened"; now the panel carries
// the error and the page shows it in red.
type auditView struct {
	Entries []audit.Listed `json:"entries"`
	Error   string         `json:"error,omitempty"`
}

// auditProblem is an audit log's failure to read as the dashboard says it.
func auditProblem(err error) string {
	msg := err.Error()
	if errors.Is(err, audit.ErrDamaged) && !strings.Contains(msg, "audit verify") {
		msg += "; run `parley audit verify`"
	}
	return msg
}

// warnOnce tells whether a failure is new: the dashboard reads its panels
// every second for each open page, and a failure that lasts is warned once,
// when it begins or changes, not at each read.
type warnOnce struct {
	mu   sync.Mutex
	last string
}

// changed records problem ("" for none) and reports whether it is a
// failure other than the one recorded before.
func (w *warnOnce) changed(problem string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if problem == w.last {
		return false
	}
	w.last = problem
	return problem != ""
}

// humanView is the human panel: the asks owed, and how many more there are.
type humanView struct {
	Asks  []askView `json:"asks"`
	More  int       `json:"more"`
	Error string    `json:"error,omitempty"` // why the asks do not read; Asks is then empty
}

// askView is an ask owed by the human as the panel holds it.
type askView struct {
	localapi.Item
	TextBytes int `json:"text_bytes,omitempty"` // the whole text's size, when Text is its start
}

// clipAsk is the start of a text as the human panel holds it, and whether
// it was clipped.
func clipAsk(t string) (string, bool) {
	units, lines := 0, 0
	for i, r := range t {
		if r == '\n' {
			if lines++; lines == askClipLines {
				return t[:i], true
			}
		}
		if units++; r >= 0x10000 {
			units++
		}
		if units > askClip {
			return t[:i], true
		}
	}
	return t, false
}

// humanPanel is the asks owed by the human as the dashboard shows them:
// owed is in the order the asks arrived here (inbox.Owed), and the panel
// holds humanShown of them, in that order, taken by turns of the asking
// nodes (fairShare), and counts the rest.
func humanPanel(owed []localapi.Item) humanView {
	v := humanView{Asks: []askView{}}
	keep := fairShare(owed, humanShown, askNode)
	for i, it := range owed {
		if !keep[i] {
			continue
		}
		a := askView{Item: it}
		if t, clipped := clipAsk(it.Text); clipped {
			a.Text, a.TextBytes = t, len(it.Text)
		}
		v.Asks = append(v.Asks, a)
	}
	v.More = len(owed) - len(v.Asks)
	return v
}

// fairShare picks n of the items (all when there are no more), by turns
// of their sources (by names each one's): first each source's first item,
// then each one's second, and so on, in the items' order within a turn. A
// source with many items thus has no more places than any other while
// others have some: before, the human panel held the first 50 asks, so
// one member asking 50 times hid every other ask (for the hour an ask is
// owed, and longer if it went on asking).
func fairShare[T any](items []T, n int, by func(T) string) []bool {
	keep := make([]bool, len(items))
	if len(items) <= n {
		for i := range keep {
			keep[i] = true
		}
		return keep
	}
	turn := make([]int, len(items))
	had := map[string]int{} // items so far by source
	for i, it := range items {
		src := by(it)
		turn[i] = had[src]
		had[src]++
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(turn[a], turn[b]) })
	for _, i := range order[:max(n, 0)] {
		keep[i] = true
	}
	return keep
}

// holderNode is the node (peer ID) of a board's holder, NAME@PEER_ID.
func holderNode(holder string) string {
	return holder[strings.LastIndexByte(holder, '@')+1:]
}

// askNode is the node an ask owed came from, the source fairShare takes
// turns of for the human panel.
func askNode(it localapi.Item) string {
	_, node, _ := strings.Cut(it.From, "@")
	return node
}

// agentView is one agent on the dashboard: its presence, and for the node's
// own agents the asks it owes and whom it waits on.
type agentView struct {
	localapi.WhoEntry
	Owed      *int     `json:"owed"`       // nil for other nodes' agents
	WaitingOn []string `json:"waiting_on"` // the addressees of its open asks
}

// uiPanels is what the dashboard shows beside the rooms.
func (n *Node) uiPanels(ctx context.Context) map[string]any {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out := map[string]any{}
	health := map[string]string{"store_problem": ""} // why the node's store refuses writes, or ""
	if err := n.db.Problem(); err != nil {
		health["store_problem"] = err.Error()
	}
	out["health"] = health
	// A panel whose source fails says so (its error, shown on the page in
	// red), not an empty list that reads as "nothing there".
	human, err := n.inbox.Owed(ctx, string(identity.HumanAgent))
	if err != nil {
		human = []localapi.Item{}
	}
	hv := humanPanel(human)
	if err != nil {
		hv.Error = "the asks owed to you do not read: " + err.Error()
	}
	out["human"] = hv
	// The invitations waiting in human's inbox (`parley inbox` lists them):
	// rooms another node brought this node or human into.
	invitations, err := n.inbox.Invitations(ctx, string(identity.HumanAgent))
	if err != nil {
		invitations = []localapi.Item{}
	}
	shown := invitations[:min(len(invitations), invitationsShown)]
	iv := invitationsView{Items: shown, More: len(invitations) - len(shown)}
	if err != nil {
		iv.Error = "the invitations for you do not read: " + err.Error()
	}
	out["invitations"] = iv
	var agents []agentView
	for _, w := range (agentsAPI{n}).Who(ctx) {
		v := agentView{WhoEntry: w, WaitingOn: []string{}}
		// The page shows claims in the board panel, not here: each
		// agent's claims, a member's long ones among them, made this
		// panel megabytes built and compared every second for each page.
		v.Claims = nil
		if w.Local {
			if owed, err := n.inbox.Owed(ctx, w.Agent); err == nil {
				c := len(owed)
				v.Owed = &c
			}
			if asked, err := n.inbox.Asked(ctx, w.Agent); err == nil {
				for _, a := range asked {
					to := a.To
					if to == "" {
						to = "room " + a.Room
					}
					v.WaitingOn = append(v.WaitingOn, to)
				}
			}
		}
		agents = append(agents, v)
	}
	if agents == nil {
		agents = []agentView{}
	}
	out["agents"] = agents
	out["contacts"] = (n.contactsAPI()).List(ctx)
	out["invites"] = (invitesAPI{n}).List(ctx)
	if n.org != nil {
		out["org_offers"] = (orgAPI{n}).Status(ctx).Offers
	}
	out["moderation"] = (modAPI{n}).Rules(ctx)
	limit := n.cfg.AgentPostLimit
	switch {
	case limit == 0:
		limit = moderation.DefaultPostLimit
	case limit < 0:
		limit = 0
	}
	out["limits"] = map[string]int{"post_limit": limit} // posts per agent a minute; 0: none
	es, err := audit.List(n.cfg.Home, time.Time{}, auditShown)
	if es == nil {
		es = []audit.Listed{}
	}
	av := auditView{Entries: es}
	if err != nil {
		av.Error = auditProblem(err)
	}
	if n.auditWarn.changed(av.Error) {
		n.log.Warn("dashboard: audit log", "err", err)
	}
	out["audit"] = av
	book := map[string]string{} // peer ID → the name people read
	likeSelf := []string{}      // the nodes whose handles read as this node's
	if n.names != nil {
		for _, e := range (namesAPI{n.names}).Names(ctx) {
			book[e.PeerID] = e.Name
			if e.LikeSelf {
				likeSelf = append(likeSelf, e.PeerID)
			}
		}
	}
	out["names"] = book
	out["like_self"] = likeSelf
	out["usage"] = n.usageView()
	if n.board != nil {
		out["board"], out["board_more"] = n.boardPanel()
	}
	return out
}

// boardEntry is what the board panel shows of one claim: the paths a
// holder claimed at once, with its note (which may be long) once for all.
type boardEntry struct {
	Project string    `json:"project"`
	Holder  string    `json:"holder"` // NAME@PEER_ID
	Note    string    `json:"note"`
	Expires time.Time `json:"expires"`
	Paths   []string  `json:"paths"`
}

// boardPanel is the board panel: at most localapi.MaxBoardClaims paths of
// the live claims of every board, as parley_board lists, and how many are
// left out. Before, it held them all, path by path with the note on each:
// a member's 20 long claims made it 1.6 MB, built, encoded and compared
// every second for each open page. This node's agents' claims come first;
// the rest is shared out between the other nodes by turns (fairShare, each
// one's newest first), so that a member that floods the board does not
// push the others' claims out of it.
func (n *Node) boardPanel() ([]boardEntry, int) {
	self := n.id.String()
	var local, others []localapi.Claim
	for project, hs := range n.board.Claims() {
		for _, h := range hs {
			c := apiClaim(h)
			c.Project = project
			if holderNode(c.Holder) == self {
				local = append(local, c)
			} else {
				others = append(others, c)
			}
		}
	}
	// Each source's newest claims first (then by project and path).
	newest := func(a, b localapi.Claim) int {
		return cmp.Or(b.Since.Compare(a.Since), cmp.Compare(a.Project, b.Project), cmp.Compare(b.Path, a.Path))
	}
	slices.SortFunc(local, newest)
	slices.SortFunc(others, newest)
	kept := []localapi.Claim{}
	// This node's agents' claims first, by turns of its agents; then the
	// other nodes' in what is left, by turns of the nodes (one node's
	// many agents have one share).
	for i, keep := range fairShare(local, localapi.MaxBoardClaims, func(c localapi.Claim) string { return c.Holder }) {
		if keep {
			kept = append(kept, local[i])
		}
	}
	for i, keep := range fairShare(others, localapi.MaxBoardClaims-len(kept), func(c localapi.Claim) string { return holderNode(c.Holder) }) {
		if keep {
			kept = append(kept, others[i])
		}
	}
	more := len(local) + len(others) - len(kept)
	// The paths of one claim (one event) in one entry, by path.
	slices.SortFunc(kept, func(a, b localapi.Claim) int {
		return cmp.Or(cmp.Compare(a.Project, b.Project), cmp.Compare(a.Holder, b.Holder), cmp.Compare(a.Event, b.Event),
			cmp.Compare(a.Note, b.Note), a.Expires.Compare(b.Expires), cmp.Compare(a.Path, b.Path))
	})
	entries := []boardEntry{}
	for i, c := range kept {
		if p := len(entries) - 1; i > 0 && kept[i-1].Project == c.Project && kept[i-1].Holder == c.Holder &&
			kept[i-1].Event == c.Event && kept[i-1].Note == c.Note && kept[i-1].Expires.Equal(c.Expires) {
			entries[p].Paths = append(entries[p].Paths, c.Path)
			continue
		}
		entries = append(entries, boardEntry{Project: c.Project, Holder: c.Holder, Note: c.Note, Expires: c.Expires, Paths: []string{c.Path}})
	}
	slices.SortStableFunc(entries, func(a, b boardEntry) int {
		return cmp.Or(cmp.Compare(a.Project, b.Project), cmp.Compare(a.Paths[0], b.Paths[0]), cmp.Compare(a.Holder, b.Holder))
	})
	return entries, more
}

// usageView is the usage meter's snapshot in the local API's words.
func (n *Node) usageView() localapi.Usage {
	s := n.usage.Snapshot()
	conv := func(cs []usage.Counts) []localapi.UsageCounts {
		out := make([]localapi.UsageCounts, 0, len(cs))
		for _, c := range cs {
			out = append(out, localapi.UsageCounts{Name: c.Name, Messages: c.Messages, Bytes: c.Bytes, AsksMade: c.AsksMade,
				AsksAnswered: c.AsksAnswered, AnswerSecs: c.AnswerSecs, TokensIn: c.TokensIn, TokensOut: c.TokensOut,
				CacheRead: c.CacheRead, CacheWrite: c.CacheWrite, CostUSD: c.CostUSD})
		}
		return out
	}
	return localapi.Usage{Agents: conv(s.Agents), Rooms: conv(s.Rooms), Recent: s.Recent, IntervalSeconds: s.IntervalSeconds}
}
