package node

import (
	"context"
	"github.com/parley-mesh/parley/internal/localapi"
	"time"

	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/wake"
	"github.com/parley-mesh/parley/internal/wake/tmux"
)

// startWake builds the wake-up service over the inbox and runs it until
// the node closes.
func (n *Node) startWake() error {
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
		Heartbeat: func(ctx context.Context, agent string) error {
			_, err := n.agents.Heartbeat(ctx, agent, agents.HeartbeatRequest{})
			return err
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
