package wake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/store/schema"
	"github.com/parley-mesh/parley/internal/wake/tmux"
)

// Saved is a terminal route as kept across restarts: the pane of a
// `parley run` agent and what identifies its program.
type Saved struct {
	Agent   string `json:"agent"`
	Session string `json:"session,omitempty"` // the session key the agent is bound with
	Socket  string `json:"socket"`
	Pane    string `json:"pane"`
	PID     int    `json:"pid"` // the pane's first process when the route was made
	Prompt  string `json:"prompt"`
	Pattern string `json:"pattern,omitempty"` // the prompt's pattern, when one was given (localapi.TerminalRequest)
	// Ended is set when the user ended the agent (unregister, kill): the
	// record only tells the next start why the pane is not taken up again,
	// and is dropped then.
	Ended bool `json:"ended,omitempty"`
	// Pasted are the IDs of the owed items the route pasted whole into the
	// pane, not yet read: a restart that takes the pane up again does not
	// paste them again (the agent has them on its screen). At most those of
	// the items the service keeps of the agent (2 × MaxItems).
	Pasted []string `json:"pasted,omitempty"`
}

// same reports whether two records keep the same route, whatever they
// say was pasted.
func (t Saved) same(o Saved) bool {
	return t.Agent == o.Agent && t.Session == o.Session && t.Socket == o.Socket && t.Pane == o.Pane &&
		t.PID == o.PID && t.Prompt == o.Prompt && t.Pattern == o.Pattern && t.Ended == o.Ended
}

// Store keeps terminal routes (schema.Terminal); internal/store's DB
// satisfies DBStore, and DB wraps it.
type Store interface {
	SaveTerminal(t Saved) error
	// DropTerminal drops the agent's route if it is still that pane's on
	// that tmux server (pane IDs repeat across servers); an empty socket or
	// pane matches any.
	DropTerminal(agent, socket, pane string) error
	Terminals() ([]Saved, error)
}

// DBStore is what DB needs of the node's database.
type DBStore interface {
	Apply(ops []schema.Op, durable bool) error
	Lookup(key []byte) ([]byte, bool, error)
	ScanFrom(prefix, start []byte, reverse bool, fn func(key, val []byte) bool) error
}

// DB keeps terminal routes in the node's database.
type DB struct{ Store DBStore }

// SaveTerminal implements Store.
func (d DB) SaveTerminal(t Saved) error {
	raw, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("wake: keep terminal route of %s: %w", t.Agent, err)
	}
	if err := d.Store.Apply([]schema.Op{{Key: schema.Terminal(t.Agent), Val: raw}}, false); err != nil {
		return fmt.Errorf("wake: keep terminal route of %s: %w", t.Agent, err)
	}
	return nil
}

// DropTerminal implements Store.
func (d DB) DropTerminal(agent, socket, pane string) error {
	raw, ok, err := d.Store.Lookup(schema.Terminal(agent))
	if err != nil || !ok {
		return err
	}
	var t Saved
	if json.Unmarshal(raw, &t) == nil && (pane != "" && t.Pane != pane || socket != "" && t.Socket != socket) {
		return nil // another pane of the agent's since
	}
	if err := d.Store.Apply([]schema.Op{{Key: schema.Terminal(agent), Delete: true}}, false); err != nil {
		return fmt.Errorf("wake: drop terminal route of %s: %w", agent, err)
	}
	return nil
}

// Terminals implements Store. A record that is not JSON is skipped.
func (d DB) Terminals() ([]Saved, error) {
	var out []Saved
	err := d.Store.ScanFrom(schema.TerminalPrefix(), nil, false, func(k, v []byte) bool {
		var t Saved
		if json.Unmarshal(v, &t) == nil {
			t.Agent = strings.TrimPrefix(string(k), string(schema.TerminalPrefix()))
			out = append(out, t)
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("wake: read terminal routes: %w", err)
	}
	return out, nil
}

// Rebind binds a session key to its agent again and registers it; it
// returns the agent's name.
type Rebind func(ctx context.Context, session string) (agent string, err error)

// restoreTries is how many times Restore tries again the kept routes tmux
// did not answer for.
const restoreTries = 4

// Restore takes up the terminal routes kept before a restart: each pane
// that still runs the program it ran then (the same pane ID on the same
// tmux server, with the same first process) is bound again, its agent
// re-registered through rebind; the others are dropped, and their agents
// let go through Config.TerminalGone. A route tmux did not answer for (each
// look at a pane gets as long as a route's look) is tried again, after
// Config.RestoreRetry, then twice as long each time, restoreTries times,
// while it is still kept as it was (the user did not end its agent, no
// other bind replaced it), and so is one a tmux error that says nothing of
// the pane kept it from looking at; one tmux never answered for, or whose
// tmux cannot be run, is kept for the next start, its agent not let go. It returns how many it took up, once
// nothing is left to try again or ctx ends.
func (s *Service) Restore(ctx context.Context, rebind Rebind) (int, error) {
	if s.cfg.Terminals == nil {
		return 0, nil
	}
	saved, err := s.cfg.Terminals.Terminals()
	if err != nil {
		return 0, err
	}
	n := 0
	wait := s.cfg.RestoreRetry
	for try := 0; ; try++ {
		var later []Saved
		for _, t := range saved {
			agent, why := s.restore(ctx, t, rebind)
			if why == nil {
				n++
				continue
			}
			if ctx.Err() != nil {
				return n, ctx.Err()
			}
			if errors.Is(why, errNotLooked) && errors.Is(why, tmux.ErrNoTmux) {
				// tmux cannot be run (not on this node's PATH, or being
				// upgraded): whether the pane still runs the program is not
				// known, and trying again while the node runs would not
				// tell. The route is kept, and its agent not let go.
				s.log.Warn("terminal wake-up route not taken up again now: tmux cannot be run; it is kept for the next start of the node", "agent", t.Agent, "pane", t.Pane, "socket", t.Socket, "err", why)
				continue
			}
			if errors.Is(why, context.DeadlineExceeded) || errors.Is(why, errNotLooked) {
				// tmux did not answer, or failed for a reason that says
				// nothing of the pane: whether the pane still runs the
				// program is not known. The route is kept, and its agent
				// not let go.
				if try < restoreTries {
					later = append(later, t)
					s.log.Info("terminal wake-up route not taken up again yet: tmux did not answer, or failed for a reason that says nothing of the pane; it tries again", "agent", t.Agent, "pane", t.Pane, "socket", t.Socket, "in", wait, "err", why)
				} else {
					s.log.Warn("terminal wake-up route not taken up again now: tmux did not answer, or failed for a reason that says nothing of the pane; it is kept for the next start of the node", "agent", t.Agent, "pane", t.Pane, "socket", t.Socket, "err", why)
				}
				continue
			}
			s.log.Info("terminal wake-up route not taken up again", "agent", t.Agent, "pane", t.Pane, "socket", t.Socket, "why", why)
			if errors.Is(why, errKeptChanged) {
				continue // the record, and the agent, are the other bind's now
			}
			if err := s.cfg.Terminals.DropTerminal(t.Agent, t.Socket, t.Pane); err != nil {
				s.log.Warn("terminal wake-up route not dropped from the store", "agent", t.Agent, "pane", t.Pane, "err", err)
			}
			// As for a pane that goes while the node runs: the agent the
			// pane kept registered goes (TerminalGone checks it is still
			// bound with the pane's session), and so does the name rebind
			// registered, when its session took another while the node was
			// down.
			if s.cfg.TerminalGone != nil && t.Session != "" && !t.Ended {
				s.cfg.TerminalGone(ctx, t.Agent, t.Session)
				if agent != "" && agent != t.Agent {
					s.cfg.TerminalGone(ctx, agent, t.Session)
				}
			}
		}
		if len(later) == 0 {
			return n, nil
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return n, ctx.Err()
		case <-timer.C:
		}
		wait *= 2
		now, err := s.cfg.Terminals.Terminals()
		if err != nil {
			return n, err
		}
		saved = nil
		for _, t := range later {
			if i := slices.IndexFunc(now, t.same); i >= 0 {
				saved = append(saved, now[i])
			}
		}
	}
}

// restore takes up one kept route; it returns the name rebind gave (""
// when it did not get that far) and why it did not take it up.
func (s *Service) restore(ctx context.Context, t Saved, rebind Rebind) (string, error) {
	if t.Ended {
		return "", errEnded
	}
	if t.Session == "" || t.PID <= 0 {
		return "", errors.New("kept without its session or program")
	}
	if err := ownSocket(t.Socket); err != nil {
		return "", err
	}
	st, err := s.inspect(ctx, t.Socket, t.Pane)
	switch {
	case err != nil && !paneGone(err) && !errors.Is(err, context.DeadlineExceeded):
		return "", fmt.Errorf("%w: %w", errNotLooked, err)
	case err != nil:
		return "", err
	case st.Dead:
		return "", tmux.ErrPaneDead
	case st.PID != t.PID:
		return "", fmt.Errorf("the pane runs another program now (pid %d, was %d)", st.PID, t.PID)
	}
	agent, err := rebind(ctx, t.Session)
	if err != nil {
		return "", fmt.Errorf("re-register the agent: %w", err)
	}
	if err := s.bindTerminal(ctx, agent, localapi.TerminalRequest{Socket: t.Socket, Pane: t.Pane, Prompt: t.Prompt, Pattern: t.Pattern, Session: t.Session}, nil, "", &t); err != nil {
		return agent, err
	}
	if agent != t.Agent {
		// Its session took another name while the node was down: the
		// route is kept under that one now (bindTerminal), and the record
		// under the old name goes only then, so that a bind that fails
		// (tmux did not answer) leaves it kept.
		if err := s.cfg.Terminals.DropTerminal(t.Agent, t.Socket, t.Pane); err != nil {
			s.log.Warn("terminal wake-up route not dropped from the store", "agent", t.Agent, "pane", t.Pane, "err", err)
		}
	}
	s.log.Info("terminal wake-up route taken up again", "agent", agent, "pane", t.Pane)
	return agent, nil
}

// errNotLooked is why Restore does not take up a kept route whose pane a
// tmux error that says nothing of the pane (tmux cannot be run, or speaks
// another protocol than its server) kept it from looking at: the route is
// kept, as for a tmux that does not answer.
var errNotLooked = errors.New("the pane could not be looked at")

// errEnded is why the route of an agent the user ended is not taken up.
var errEnded = errors.New("the agent was unregistered or killed by the user")

// errKeptChanged is why Restore does not take up a kept route that another
// bind of its agent replaced while Restore was at it.
var errKeptChanged = errors.New("another pane was bound to the agent meanwhile")

// ownSocket checks that a kept tmux socket is still this user's to trust:
// the socket and its directory are owned by this user, and no one else can
// write to the directory. Otherwise another user could have put a tmux
// server of theirs at the path while the node was down (say a
// --tmux-socket under /tmp) and, with a matching pid, be taken for the
// agent's pane.
func ownSocket(path string) error {
	uid := os.Getuid()
	dir := filepath.Dir(path)
	di, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("tmux socket directory: %w", err)
	}
	if o, ok := owner(di); !ok || o != uid {
		return fmt.Errorf("tmux socket directory %s is not this user's (owner %d)", dir, o)
	}
	if di.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("tmux socket directory %s can be written by others (mode %v)", dir, di.Mode().Perm())
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("tmux socket: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s is not a socket", path)
	}
	if o, ok := owner(fi); !ok || o != uid {
		return fmt.Errorf("tmux socket %s is not this user's (owner %d)", path, o)
	}
	return nil
}

func owner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, false
	}
	return int(st.Uid), true
}
