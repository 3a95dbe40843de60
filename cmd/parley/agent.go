package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/termtext"
)

// cliSession is the session of registrations made by hand: the CLI
// registering a name again updates it rather than conflicting.
const cliSession = "parley-cli"

func agentCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Agents on this node: register, list, unregister; mute, kill, revive",
		Long: `Agent sessions (MCP, or a person at the CLI) register on their user's node under a
name. Each gets a public card in the DHT (handle, name, capabilities, client, organisation),
found with ` + "`parley find`" + `; contacts also see its role, state and what it works on
(` + "`parley who`" + `). A card never carries the role.
A registration not renewed by a heartbeat within its TTL is swept.`,
	}
	cmd.AddCommand(agentRegisterCmd(g), agentHeartbeatCmd(g), agentListCmd(g), agentUnregisterCmd(g),
		agentMuteCmd(g), agentUnmuteCmd(g), agentKillCmd(g), agentReviveCmd(g), agentMutedCmd(g))
	return cmd
}

func agentRegisterCmd(g *globals) *cobra.Command {
	var (
		req localapi.RegisterAgentRequest
		ttl time.Duration
	)
	cmd := &cobra.Command{
		Use:   "register NAME",
		Short: "Register an agent on this node (or update it)",
		Long: `Register an agent on this node, or update one this CLI registered: an update changes
only what its flags give (--cap replaces the list; without --ttl it keeps its TTL, renewed from
now). NAME is 1–64 of a-z, 0-9, '.', '_', '-' (capitals are taken as lower case). The
registration outlives this command: it lasts --ttl (1h by default) unless renewed with
` + "`parley agent heartbeat`" + `, and is gone at once with
` + "`parley agent unregister`" + `.`,
		Example: `  parley agent register reviewer --role "code review" --cap go --cap rust --working-on "PR 12"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ttl < time.Second {
				return fmt.Errorf("--ttl %s: use at least 1s", ttl)
			}
			req.Name = args[0]
			req.TTLSeconds = int(ttl / time.Second)
			fl := cmd.Flags()
			updated := false
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.AgentInfo, error) {
				// An update keeps what its flags do not give: the node
				// takes a registration whole.
				as, err := c.Agents(ctx)
				if err != nil {
					return localapi.AgentInfo{}, err
				}
				for _, a := range as {
					if a.Name != strings.ToLower(strings.TrimSpace(req.Name)) || a.Session != req.Session {
						continue
					}
					updated = true
					if !fl.Changed("role") {
						req.Role = a.Role
					}
					if !fl.Changed("working-on") {
						req.WorkingOn = a.WorkingOn
					}
					if !fl.Changed("cap") {
						req.Capabilities = a.Capabilities
					}
					if !fl.Changed("client") {
						req.Client = a.Client
					}
					if old := a.Expires.Sub(a.LastSeen); !fl.Changed("ttl") && old >= time.Second {
						// Its TTL too (the update renews it, as a
						// heartbeat does), not the 1h default.
						req.TTLSeconds = int((old + time.Second - 1) / time.Second)
					}
				}
				return c.RegisterAgent(ctx, req)
			}, func(w io.Writer, v localapi.AgentInfo) {
				verb := "registered"
				if updated {
					verb = "updated"
				}
				fmt.Fprintf(w, "agent %s %s (%s) until %s; find it with `parley find %s`\n",
					v.Name, verb, v.State, v.Expires.Local().Format(time.RFC3339), v.Name)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&req.Role, "role", "", "what the agent is for, one line (this node and contacts only, never on the public card)")
	fl.StringVar(&req.WorkingOn, "working-on", "", "what it works on now (contacts only)")
	fl.StringArrayVar(&req.Capabilities, "cap", nil, "a capability, e.g. go; repeatable (public)")
	fl.StringVar(&req.Client, "client", "", `the agent's client, e.g. "claude-code" (public)`)
	fl.StringVar(&req.Session, "session", cliSession, "session ID; another session cannot take a live name")
	durationFlag(fl, &ttl, "ttl", time.Hour, "how long the registration lives without a heartbeat")
	return cmd
}

func agentHeartbeatCmd(g *globals) *cobra.Command {
	var state, workingOn string
	cmd := &cobra.Command{
		Use:   "heartbeat NAME",
		Short: "Renew an agent's registration; optionally set its state and what it works on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var req localapi.HeartbeatRequest
			if cmd.Flags().Changed("state") {
				req.State = &state
			}
			if cmd.Flags().Changed("working-on") {
				req.WorkingOn = &workingOn
			}
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.AgentInfo, error) {
				return c.Heartbeat(ctx, args[0], req)
			}, func(w io.Writer, v localapi.AgentInfo) {
				fmt.Fprintf(w, "agent %s is %s until %s\n", v.Name, v.State, v.Expires.Local().Format(time.RFC3339))
			})
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "idle or busy")
	cmd.Flags().StringVar(&workingOn, "working-on", "", `what it works on now ("" clears it)`)
	return cmd
}

func agentListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the agents registered on this node",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) ([]localapi.AgentInfo, error) { return c.Agents(ctx) },
				func(w io.Writer, v []localapi.AgentInfo) {
					if len(v) == 0 {
						fmt.Fprintln(w, "no agents on this node (register one with `parley agent register NAME`)")
						return
					}
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "NAME\tSTATE\tROLE\tCAPABILITIES\tWORKING ON\tCLIENT\tEXPIRES")
					for _, a := range v {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", termtext.Line(a.Name), a.State, dash(termtext.Line(a.Role)), dash(termtext.Line(strings.Join(a.Capabilities, ","))),
							dash(oneLine(a.WorkingOn, 40)), dash(termtext.Line(a.Client)), a.Expires.Local().Format("15:04:05"))
					}
					tw.Flush()
				})
		},
	}
}

func agentUnregisterCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "unregister NAME",
		Short: "Remove an agent from this node and withdraw its card (a live session registers again: `parley agent kill` stops it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (unregistered, error) {
				// Its claims stay on the boards until they expire: read
				// them first, to say so.
				v := unregistered{Name: args[0], Claims: []localapi.Claim{}}
				if ws, err := c.Who(ctx); err == nil {
					for _, e := range ws {
						if e.Local && strings.EqualFold(e.Agent, args[0]) {
							v.Name = e.Agent
							v.Claims = append(v.Claims, e.Claims...)
						}
					}
				}
				return v, c.UnregisterAgent(ctx, args[0])
			}, func(w io.Writer, v unregistered) {
				fmt.Fprintf(w, "agent %s unregistered\n", v.Name)
				if len(v.Claims) == 0 {
					return
				}
				var held []string
				for _, c := range v.Claims {
					held = append(held, fmt.Sprintf("%s until %s", termtext.Line(c.Path), untilText(c.Expires)))
				}
				fmt.Fprintf(w, "its claims stay on the board until they expire: %s (`parley release --all --as %s` in the project takes them off)\n", strings.Join(held, "; "), v.Name)
			})
		},
	}
}

// unregistered is what `parley agent unregister` did (--json): the agent,
// and the claims it still holds, which stay until they expire.
type unregistered struct {
	Name   string           `json:"name"`
	Claims []localapi.Claim `json:"claims"`
}

func whoCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "who",
		Short: "List live agents: this node's and your contacts'",
		Long: `List the live agents of this node and of your contacts, with their state, what they
work on and when they were last seen. Only contacts share this; anyone else's agents
are found by their public cards with ` + "`parley find`" + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) ([]localapi.WhoEntry, error) { return c.Who(ctx) },
				func(w io.Writer, v []localapi.WhoEntry) {
					if len(v) == 0 {
						fmt.Fprintln(w, "no live agents here or at your contacts")
						return
					}
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "PEER ID\tNAME\tAGENT\tSTATE\tWORKING ON\tCLAIMS\tLAST SEEN")
					for _, e := range v {
						handle := shownName(e.Name, e.Handle)
						if e.Local {
							handle += " (you)"
						}
						state := e.State
						if e.Unreached > 0 {
							state += fmt.Sprintf(" (NOT REACHED: %d owed unread)", e.Unreached)
						}
						var claims []string
						for _, c := range e.Claims {
							claims = append(claims, c.Path)
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", shortPeer(e.PeerID), handle, termtext.Line(e.Agent), termtext.Line(state),
							dash(oneLine(e.WorkingOn, 50)), dash(oneLine(termtext.Line(strings.Join(claims, " ")), 40)), ago(e.LastSeen))
					}
					tw.Flush()
				})
		},
	}
}

// The most cards a search keeps (agents.Find): in all, and of one node
// that is neither this node nor a contact.
const (
	findKept    = 256
	findPerNode = 16
)

func findCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "find QUERY",
		Short: "Find agents through the DHT by handle, agent name or capability",
		Long: `Find agents' public cards through the DHT. QUERY is cap:CAPABILITY, agent:NAME,
handle:HANDLE, or a word looked up as all three. Finding nothing is not an error;
a query that can match nothing (cap: with no value) is. A search keeps at most
16 cards of a node that is not a contact and 256 in all, this node's and its
contacts' first; capabilities are cut to 80 characters (--json gives them all).`,
		Example: "  parley find cap:go\n  parley find reviewer",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var res localapi.FindResult
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) ([]localapi.CardView, error) {
				var err error
				res, err = c.Find(ctx, args[0])
				return res.Cards, err
			},
				func(w io.Writer, v []localapi.CardView) {
					if len(v) == 0 {
						fmt.Fprintf(w, "no agents found for %q (`parley who` lists the live agents of this node and of your contacts)\n", args[0])
						return
					}
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "NAME\tORG\tAGENT\tCAPABILITIES\tCLIENT\tPEER ID")
					for _, c := range v {
						org := ""
						if c.Org != nil {
							org = c.Org.Name
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", dash(shownName(c.Name, c.Handle)), dash(termtext.Line(org)), termtext.Line(c.Agent),
							dash(oneLine(strings.Join(c.Capabilities, ","), 80)), dash(termtext.Line(c.Client)), c.PeerID)
					}
					tw.Flush()
					strangers := 0
					for _, c := range v {
						if !c.Contact {
							strangers++
						}
					}
					if strangers > 0 {
						fmt.Fprintf(w, "%d of these on nodes that are not your contacts: reach such an agent as AGENT@PEER_ID; its node's handle works in an address once it is a contact (`parley contact request PEER_ID`)\n", strangers)
					}
					if res.LeftOutPerNode > 0 {
						fmt.Fprintf(w, "%d more cards left out: a search keeps at most %d of a node that is not a contact; find a node's others with agent:NAME or handle:HANDLE\n", res.LeftOutPerNode, findPerNode)
					}
					if res.LeftOutInAll > 0 {
						fmt.Fprintf(w, "%d more cards left out: a search keeps at most %d cards in all, this node's and its contacts' first; narrow the query (agent:NAME, handle:HANDLE)\n", res.LeftOutInAll, findKept)
					}
				})
		},
	}
}

// shownName is how `who` and `find` print a node: the name its node gives
// it (handle~SUFFIX when its handle reads like another's), or, from a node
// that gives none (an older one), its handle.
func shownName(name, handle string) string {
	if name != "" {
		return termtext.Line(name)
	}
	return termtext.Line(handle)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine folds s onto one line of at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n-1]) + "…"
	}
	return termtext.Line(s)
}

func shortPeer(p string) string {
	if len(p) > 16 {
		return p[:8] + "…" + p[len(p)-6:]
	}
	return p
}

func ago(t time.Time) string {
	d := time.Since(t).Round(time.Second)
	if d < time.Second {
		return "now"
	}
	return d.String() + " ago"
}
