package node

import (
	"context"
	"time"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/wake"
	"github.com/parley-mesh/parley/internal/wake/tmux"
)

// startWake builds the wake-up service over the inbox and runs it until
// the node closes.
func (n *Node) startWake() error {
	// A terminal agent is bound by its session key, as `parley run` bound
	// it: after a restart, and when its registration went while its pane
	// lived.
	rebind := func(ctx context.Context, session string) (string, error) {
		info, err := n.agents.Session(ctx, agents.SessionRequest{Session: session, Client: "terminal", TTLSeconds: 60})
		return info.Name, err
	}
	w, err := wake.New(wake.Config{
		Inbox: n.inbox,
		Named: func(text string) string {
			if n.names == nil {
				return text
			}
			return localapi.NewNameBook(namesAPI{n.names}.Names(context.Background())).Text(text)
		},
		Changes: n.rooms.Changes,
		Agents: func() []string {
			var names []string
			for _, a := range n.agents.List() {
				names = append(names, a.Name)
			}
			return names
		},
		Heartbeat: wake.AgentHeartbeat(n.agents),
		Rebind:    rebind,
		SessionAgent: func(_ context.Context, session string) (string, error) {
			return n.agents.SessionName(session)
		},
		Terminals: wake.DB{Store: n.db},
		TerminalGone: func(ctx context.Context, agent, session string) {
			// The program of a `parley run` agent exited: the agent the pane
			// kept registered goes (unless another session holds the name).
			for _, a := range n.agents.List() {
				if a.Name != agent || session == "" || a.Session != session {
					continue
				}
				if err := n.agents.Unregister(ctx, agent); err != nil && ctx.Err() == nil {
					n.log.Info("terminal agent not unregistered", "agent", agent, "err", err)
				}
			}
		},
		Quiet: func(agent string) bool {
			r, ok := n.mod.Rule(agent + "@" + n.id.String())
			return ok && (r.Muted || r.Killed)
		},
		// A terminal agent is looked at every 50 ms while text waits for it:
		// idle at its prompt on two looks, and the same a look later.
		Terminal: tmux.Options{Poll: 50 * time.Millisecond},
		Self:     n.id.String(),
		Limit:    n.cfg.WakeLimit,
		Logger:   n.log,
		Registry: n.reg,
	})
	if err != nil {
		return err
	}
	n.wake = w
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := w.Run(n.ctx); err != nil {
			n.log.Error("wake-up service stopped", "err", err)
		}
	}()
	// The panes of `parley run` agents outlive the node: take them up
	// again, and re-register their agents.
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		k, err := w.Restore(n.ctx, rebind)
		if err != nil && n.ctx.Err() == nil {
			n.log.Warn("terminal wake-up routes not taken up again", "err", err)
		}
		if k > 0 {
			n.log.Info("terminal agents taken up again", "count", k)
		}
	}()
	return nil
}

// forgetTerminal drops the terminal route of an agent the user ended
// (unregister, kill), both the running one and the one kept for restarts.
func (n *Node) forgetTerminal(ctx context.Context, agent string) error {
	if n.wake != nil {
		return n.wake.ForgetTerminal(ctx, agent)
	}
	if n.db != nil {
		return wake.EndTerminal(wake.DB{Store: n.db}, agent)
	}
	return nil
}

// Wake is the node's wake-up service (nil before Start).
func (n *Node) Wake() *wake.Service { return n.wake }

// unreached counts, per local agent, the owed items no wake-up route got
// read in time.
func (n *Node) unreached(ctx context.Context) map[string]int {
	out := map[string]int{}
	if n.wake == nil {
		return out
	}
	for _, w := range n.wake.WakeStatus(ctx) {
		if w.Unreached > 0 {
			out[w.Agent] = w.Unreached
		}
	}
	return out
}
