package mcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/parley-mesh/parley/internal/gitrepo"
	"github.com/parley-mesh/parley/internal/localapi"
)

// ClaimIn is parley_claim's input.
type ClaimIn struct {
	Thread
	Paths       []string `json:"paths" jsonschema:"files, folders (also ones not made yet) or globs (*, **, ?; **/ is any number of folders, none included) you are about to change, relative to your working folder"`
	Note        string   `json:"note" jsonschema:"why you work on them, in your own words; other agents see it"`
	TTLMinutes  int      `json:"ttl_minutes,omitempty" jsonschema:"how long the claim lasts, 1 to 480 minutes (default 30); claim again to renew"`
	WaitSeconds int      `json:"wait_seconds,omitempty" jsonschema:"wait up to this long (at most 50) for a conflicting claim to be released or to expire"`
	Project     string   `json:"project,omitempty" jsonschema:"project key; default: the git repository of your working folder"`
}

// BoardClaim is one path held on the board.
type BoardClaim struct {
	Path    string `json:"path"`
	Holder  string `json:"holder"`
	Note    string `json:"note"`
	Since   string `json:"since"`
	Expires string `json:"expires"`
}

// ClaimOut is parley_claim's output.
type ClaimOut struct {
	Envelope
	Project string       `json:"project"`
	Held    []BoardClaim `json:"held" jsonschema:"all your claims on the board now"`
}

// ReleaseIn is parley_release's input.
type ReleaseIn struct {
	Thread
	Paths   []string `json:"paths,omitempty" jsonschema:"paths as you claimed them; empty: all your claims"`
	Project string   `json:"project,omitempty" jsonschema:"project key; default: the git repository of your working folder"`
}

// ReleaseOut is parley_release's output.
type ReleaseOut struct {
	Envelope
	Project  string       `json:"project"`
	Released []string     `json:"released"`
	Held     []BoardClaim `json:"held" jsonschema:"your claims left"`
}

// BoardIn is parley_board's input.
type BoardIn struct {
	Thread
	Project string `json:"project,omitempty" jsonschema:"project key; default: the git repository of your working folder"`
	History bool   `json:"history,omitempty" jsonschema:"show who held what, when and why, instead of the claims now"`
	Path    string `json:"path,omitempty" jsonschema:"only the claims (with history: the events) on paths that overlap this one"`
}

// BoardEvent is one claim or release of the board's history.
type BoardEvent struct {
	Time   string   `json:"time"`
	Holder string   `json:"holder"`
	Kind   string   `json:"kind" jsonschema:"claim or release"`
	Paths  []string `json:"paths"`
	Note   string   `json:"note"`
	LostTo string   `json:"lost_to,omitempty" jsonschema:"a claim made apart (during a partition) that lost to an earlier one: its holder"`
	Bad    string   `json:"bad,omitempty" jsonschema:"why the board ignores the event (a malformed body, or a date ahead of this node's clock): it holds and ends nothing"`
	// MorePaths counts the event's paths not listed.
	MorePaths int `json:"more_paths,omitempty" jsonschema:"the event's paths not listed (pass path to see the events of one path)"`
}

// BoardOut is parley_board's output.
type BoardOut struct {
	Envelope
	Project string       `json:"project"`
	Claims  []BoardClaim `json:"claims"`
	History []BoardEvent `json:"history"`
	Alive   []string     `json:"alive" jsonschema:"the live agent sessions of the project's nodes"`
	Note    string       `json:"note,omitempty" jsonschema:"set when only one session is alive: claims are optional overhead then"`
	More    int          `json:"more,omitempty" jsonschema:"claims (or, with history, earlier events) not listed: pass path to narrow"`
}

// The most claims (localapi.MaxBoardClaims) and history events
// parley_board lists: a board is written by every member, and what it
// holds goes into the agent's context.
// An event of the history shows at most maxEventPaths of its paths (it
// may hold 64 of 512 bytes), and the history as many of the last events
// as fit historyBudget bytes of paths and notes: before, 50 events of 64
// long paths a member posted put 1.6 MB into the answer, twice.
const (
	maxBoardClaims = localapi.MaxBoardClaims
	maxBoardEvents = 50
	maxEventPaths  = 8
	historyBudget  = 32 << 10
)

// project resolves the project key and paths against the agent's folder.
func (s *Server) project(ctx context.Context, key string, paths []string) (string, []string, error) {
	dir := s.cfg.Project
	if dir == "" {
		d, err := os.Getwd()
		if err != nil {
			return "", nil, err
		}
		dir = d
	}
	k, ps, err := gitrepo.Project(ctx, dir, key, paths)
	if errors.Is(err, gitrepo.ErrNotRepo) || errors.Is(err, gitrepo.ErrNoCommit) || errors.Is(err, gitrepo.ErrShallow) {
		// The flag is the CLI's: an agent names the project in its call
		// (parley mcp's own --project is a folder, not a key).
		err = errors.New(strings.Replace(err.Error(), gitrepo.NameHint, `"project" in this call, a key that every agent on the project gives alike`, 1))
	}
	return k, ps, err
}

func boardClaims(cs []localapi.Claim) []BoardClaim {
	out := []BoardClaim{}
	for _, c := range cs {
		out = append(out, BoardClaim{Path: c.Path, Holder: c.Holder, Note: c.Note,
			Since: c.Since.UTC().Format(time.RFC3339), Expires: c.Expires.UTC().Format(time.RFC3339)})
	}
	return out
}

func writeClaims(b *strings.Builder, cs []BoardClaim) {
	for _, c := range cs {
		fmt.Fprintf(b, "\n• %s — %s until %s: %q", c.Path, c.Holder, c.Expires, c.Note)
	}
}

func (s *Server) claim(ctx context.Context, c *call, in ClaimIn) (ClaimOut, string, error) {
	out := ClaimOut{Held: []BoardClaim{}}
	if in.TTLMinutes < 0 || in.TTLMinutes > 480 {
		return out, "", fmt.Errorf("ttl_minutes must be 1 to 480")
	}
	if in.WaitSeconds < 0 || in.WaitSeconds > MaxWaitSeconds {
		return out, "", fmt.Errorf("wait_seconds must be 0 to %d", MaxWaitSeconds)
	}
	key, paths, err := s.project(ctx, in.Project, in.Paths)
	if err != nil {
		return out, "", err
	}
	out.Project = key
	res, err := s.api.Claim(ctx, c.agent, localapi.ClaimRequest{Project: key, Paths: paths, Note: in.Note,
		TTLSeconds: float64(in.TTLMinutes * 60), WaitSeconds: float64(in.WaitSeconds), Take: true})
	if err != nil {
		return out, "", err
	}
	c.take(res.Pending)
	out.Held = boardClaims(res.Held)
	var b strings.Builder
	fmt.Fprintf(&b, "Claimed. Your claims on the board:")
	writeClaims(&b, out.Held)
	b.WriteString("\nRelease them with parley_release when you are done.")
	return out, b.String(), nil
}

func (s *Server) release(ctx context.Context, c *call, in ReleaseIn) (ReleaseOut, string, error) {
	out := ReleaseOut{Released: []string{}, Held: []BoardClaim{}}
	key, paths, err := s.project(ctx, in.Project, in.Paths)
	if err != nil {
		return out, "", err
	}
	out.Project = key
	res, err := s.api.Release(ctx, c.agent, localapi.ReleaseRequest{Project: key, Paths: paths, Take: true})
	if err != nil {
		return out, "", err
	}
	c.take(res.Pending)
	out.Released, out.Held = orEmpty(res.Released), boardClaims(res.Held)
	var b strings.Builder
	fmt.Fprintf(&b, "Released %s.", strings.Join(out.Released, ", "))
	if len(out.Held) > 0 {
		b.WriteString(" Still yours:")
		writeClaims(&b, out.Held)
	}
	return out, b.String(), nil
}

func (s *Server) board(ctx context.Context, c *call, in BoardIn) (BoardOut, string, error) {
	out := BoardOut{Claims: []BoardClaim{}, History: []BoardEvent{}, Alive: []string{}}
	var paths []string
	if in.Path != "" {
		paths = []string{in.Path}
	}
	key, paths, err := s.project(ctx, in.Project, paths)
	if err != nil {
		return out, "", err
	}
	out.Project = key
	var b strings.Builder
	if in.History {
		req := localapi.BoardRequest{Project: key, Take: true}
		if len(paths) == 1 {
			req.Path = paths[0]
		}
		res, err := s.api.BoardHistory(ctx, c.agent, req)
		if err != nil {
			return out, "", err
		}
		c.take(res.Pending)
		// The last events, newest first, while they fit the budget (the
		// newest always).
		from, used := len(res.Events), 0
		for from > 0 && len(res.Events)-from < maxBoardEvents {
			e := res.Events[from-1]
			n := len(e.Note)
			for _, p := range e.Paths[:min(len(e.Paths), maxEventPaths)] {
				n += len(p) + 1
			}
			if used+n > historyBudget && from < len(res.Events) {
				break
			}
			used += n
			from--
		}
		evs := res.Events[from:]
		if out.More = from; out.More > 0 {
			fmt.Fprintf(&b, "History of the board (the last %d of %d events; pass path for those of one path):", len(evs), len(res.Events))
		} else {
			fmt.Fprintf(&b, "History of the board (%d events):", len(evs))
		}
		for _, e := range evs {
			ev := BoardEvent{Time: e.Time.UTC().Format(time.RFC3339), Holder: e.Holder, Kind: e.Kind, Paths: orEmpty(e.Paths), Note: e.Note, Bad: e.Bad}
			if len(ev.Paths) > maxEventPaths {
				ev.Paths, ev.MorePaths = ev.Paths[:maxEventPaths], len(ev.Paths)-maxEventPaths
			}
			if e.LostTo != nil {
				ev.LostTo = e.LostTo.Holder
			}
			out.History = append(out.History, ev)
			paths := strings.Join(ev.Paths, " ")
			if ev.Kind == "release" && paths == "" {
				paths = "(all)" // all the holder's claims, as the CLI says
			}
			if ev.MorePaths > 0 {
				paths += fmt.Sprintf(" and %d more", ev.MorePaths)
			}
			fmt.Fprintf(&b, "\n• %s %s %s %s%s", ev.Time, ev.Holder, ev.Kind, paths, labelled(" — ", ev.Note))
			if ev.LostTo != "" {
				fmt.Fprintf(&b, " (lost to %s)", ev.LostTo)
			}
			if ev.Bad != "" {
				fmt.Fprintf(&b, " (ignored: %s)", ev.Bad) // as the CLI says
			}
		}
		return out, b.String(), nil
	}
	res, err := s.api.Board(ctx, c.agent, localapi.BoardRequest{Project: key, Paths: paths, Take: true})
	if err != nil {
		return out, "", err
	}
	c.take(res.Pending)
	out.Claims, out.Alive, out.Note = boardClaims(res.Claims), orEmpty(res.Alive), res.Note
	if len(out.Claims) > maxBoardClaims {
		out.More = len(out.Claims) - maxBoardClaims
		out.Claims = out.Claims[:maxBoardClaims]
	}
	switch {
	case len(out.Claims) == 0:
		b.WriteString("The board is empty: nobody has claimed anything in this project.")
	case out.More > 0:
		fmt.Fprintf(&b, "%d claims on the board; the first %d by path (pass path for those that overlap one):", len(out.Claims)+out.More, len(out.Claims))
		writeClaims(&b, out.Claims)
	case len(out.Claims) == 1:
		b.WriteString("1 claim on the board:")
		writeClaims(&b, out.Claims)
	default:
		fmt.Fprintf(&b, "%d claims on the board:", len(out.Claims))
		writeClaims(&b, out.Claims)
	}
	fmt.Fprintf(&b, "\nAlive in this project: %s.", strings.Join(out.Alive, ", "))
	if out.Note != "" {
		b.WriteString("\nNote: " + out.Note + ".")
	}
	return out, b.String(), nil
}

// claimLines shows claims in one line each: path, until when, why.
func claimLines(cs []localapi.Claim) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s until %s: %q", c.Path, c.Expires.UTC().Format(time.RFC3339), c.Note))
	}
	return out
}
