package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/termtext"
)

// The user's say over agents: mute, unmute, kill, revive.

func agentMuteCmd(g *globals) *cobra.Command {
	var d time.Duration
	cmd := &cobra.Command{
		Use:   "mute AGENT",
		Short: "Mute an agent: this node's posts nothing; another node's is hidden from your agents",
		Long: `Mute an agent, until unmuted or for --for.

NAME (an agent of this node): the node refuses its posts and asks, with an error
that tells it why. NAME@PEER_ID (another node's agent, a member of one of your
rooms): its events are still stored (the room stays one log) but your agents are
not shown them and owe it nothing.`,
		Example: "  parley agent mute chatty --for 10m\n  parley agent mute bot@12D3KooW...",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if d < 0 {
				return fmt.Errorf("--for %s: give a positive duration such as 10m, or leave it out for until unmuted", d)
			}
			return moderate(g, cmd, args[0], d, (*localapi.Client).Mute, func(w io.Writer, r localapi.ModerationRule) {
				if r.MutedUntil != nil {
					fmt.Fprintf(w, "%s is muted until %s\n", modName(args[0], r), r.MutedUntil.Local().Format(time.RFC3339))
					return
				}
				fmt.Fprintf(w, "%s is muted until `parley agent unmute %s`\n", modName(args[0], r), termtext.Line(args[0]))
			})
		},
	}
	durationFlagIn(cmd.Flags(), &d, "for", 0, time.Minute, "how long, e.g. 10m (default: until unmuted)")
	return cmd
}

func agentUnmuteCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "unmute AGENT",
		Short: "Lift a mute",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return moderate(g, cmd, args[0], 0, (*localapi.Client).Unmute, func(w io.Writer, r localapi.ModerationRule) {
				fmt.Fprintf(w, "%s is no longer muted\n", modName(args[0], r))
			})
		},
	}
}

func agentKillCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "kill NAME",
		Short: "Stop an agent of this node: its posts and asks are refused, its claims released, its registration and session end",
		Long: `Stop an agent of this node at once: the node refuses its posts and asks with an
error that says why, withdraws its card, releases its board claims, and ends its
registration and its session's binding; the name cannot register again until ` + "`parley agent revive NAME`" + `.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return moderate(g, cmd, args[0], 0, (*localapi.Client).Kill, func(w io.Writer, _ localapi.ModerationRule) {
				fmt.Fprintf(w, "agent %s is killed: its posts are refused, its board claims released and its session ended (undo with `parley agent revive %s`)\n", termtext.Line(args[0]), termtext.Line(args[0]))
			})
		},
	}
}

func agentReviveCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "revive NAME",
		Short: "Undo a kill: the name may register and post again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return moderate(g, cmd, args[0], 0, (*localapi.Client).Revive, func(w io.Writer, r localapi.ModerationRule) {
				fmt.Fprintf(w, "agent %s may register and post again\n", modName(args[0], r))
			})
		},
	}
}

func agentMutedCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "muted",
		Short: "List the agents muted or killed on this node",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var book localapi.NameBook
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) ([]localapi.ModerationRule, error) {
				book = nameBook(ctx, c)
				return c.ModerationRules(ctx)
			}, func(w io.Writer, v []localapi.ModerationRule) {
				if len(v) == 0 {
					fmt.Fprintln(w, "no agent is muted or killed")
					return
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "AGENT\tSTATE\tENDS\tBY\tSINCE")
				for _, r := range v {
					// A hold with no end lasts until a person lifts it.
					state, until := "muted", "when unmuted"
					if r.Killed {
						state, until = "killed", "when revived"
					} else if r.MutedUntil != nil {
						until = r.MutedUntil.Local().Format(time.RFC3339)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", termtext.Line(book.Agent(r.Agent)), state, until, termtext.Line(r.By), r.At.Local().Format(time.RFC3339))
				}
				tw.Flush()
			})
		},
	}
}

// modName is the agent as the user named it, followed by its address when
// a handle stood for the node (NAME@HANDLE), so the user sees which node's
// agent the rule is about.
func modName(arg string, r localapi.ModerationRule) string {
	if r.Agent == "" || r.Agent == arg || !strings.Contains(arg, "@") {
		return termtext.Line(arg)
	}
	return termtext.Line(arg) + " (" + termtext.Line(r.Agent) + ")"
}

func moderate(g *globals, cmd *cobra.Command, agent string, d time.Duration,
	f func(*localapi.Client, context.Context, localapi.ModerateRequest) (localapi.ModerationRule, error),
	human func(io.Writer, localapi.ModerationRule)) error {
	return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.ModerationRule, error) {
		return f(c, ctx, localapi.ModerateRequest{Agent: agent, Seconds: d.Seconds(), By: "human"})
	}, human)
}
