package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/termtext"
)

func usageCmd(g *globals) *cobra.Command {
	var rooms bool
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "What each agent did since the node started: messages, asks, answers, tokens and cost",
		Long: `Usage per agent (--rooms: per room) since the node started: messages and their
bytes, asks made and answered, the mean time to answer, and the tokens and cost
the agents' clients reported (the MCP tools' spent fields, and the Claude Code
and Codex hooks, which read the session's transcript). What no client reported
is shown as unknown, never guessed. Tokens in include cache reads and writes.
The first 64 agents and rooms are named; later ones count as "other".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			names := map[string]string{} // room ID → name
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.Usage, error) {
				if rooms && !g.json {
					if rs, err := c.Rooms(ctx); err == nil {
						for _, r := range rs {
							names[r.RoomID] = r.Name
						}
					}
				}
				return c.Usage(ctx)
			}, func(w io.Writer, u localapi.Usage) { printUsage(w, u, rooms, names) })
		},
	}
	cmd.Flags().BoolVar(&rooms, "rooms", false, "per room instead of per agent")
	return cmd
}

// printUsage prints u; names gives the rooms' names (a room left shows by
// its ID).
func printUsage(w io.Writer, u localapi.Usage, rooms bool, names map[string]string) {
	list, what := u.Agents, "AGENT"
	if rooms {
		list, what = u.Rooms, "ROOM"
	}
	if len(list) == 0 {
		fmt.Fprintln(w, "nothing counted yet")
		return
	}
	num := func(p *uint64) string {
		if p == nil {
			return "unknown"
		}
		return strconv.FormatUint(*p, 10)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	if rooms { // tokens and cost are counted per agent only
		fmt.Fprintln(tw, "ROOM\tNAME\tMSGS\tBYTES\tASKS\tANSWERED\tAVG ANSWER")
		for _, c := range list {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", termtext.Line(c.Name), dash(termtext.Line(names[c.Name])), c.Messages, c.Bytes, c.AsksMade, c.AsksAnswered, avgAnswer(c))
		}
		return
	}
	fmt.Fprintf(tw, "%s\tMSGS\tBYTES\tASKS\tANSWERED\tAVG ANSWER\tTOKENS IN\t(CACHE READ/WRITE)\tTOKENS OUT\tCOST\n", what)
	for _, c := range list {
		avg := avgAnswer(c)
		cost := "unknown"
		if c.CostUSD != nil {
			cost = fmt.Sprintf("$%.4f", *c.CostUSD)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s/%s\t%s\t%s\n", termtext.Line(c.Name), c.Messages, c.Bytes, c.AsksMade, c.AsksAnswered, avg,
			num(c.TokensIn), num(c.CacheRead), num(c.CacheWrite), num(c.TokensOut), cost)
	}
}

func avgAnswer(c localapi.UsageCounts) string {
	if c.AsksAnswered == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fs", c.AnswerSecs)
}
