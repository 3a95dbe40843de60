package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/rooms"
)

func roomCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "room",
		Short: "Rooms: persistent, causally ordered conversations between nodes and their agents",
		Long: `Rooms are conversations between nodes (1:1 or 1:many). ROOM is a room ID or the
name of exactly one room. Messages from the CLI come from the agent "human" of this node
unless --as names another.`,
	}
	cmd.AddCommand(roomCreateCmd(g), roomListCmd(g), roomInviteCmd(g), roomSayCmd(g),
		roomLogCmd(g), roomTailCmd(g), roomLeaveCmd(g))
	return cmd
}

func roomCreateCmd(g *globals) *cobra.Command {
	var as string
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a room; prints its room_id",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.CreateRoomResponse, error) {
				return c.CreateRoom(ctx, args[0], as)
			}, func(w io.Writer, v localapi.CreateRoomResponse) { fmt.Fprintln(w, v.RoomID) })
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "agent that creates it (default human)")
	return cmd
}

func roomListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the rooms this node is in",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) ([]rooms.Info, error) { return c.Rooms(ctx) },
				func(w io.Writer, v []rooms.Info) {
					if len(v) == 0 {
						fmt.Fprintln(w, "no rooms (create one with `parley room create NAME`)")
						return
					}
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ROOM ID\tNAME\tMEMBERS\tEVENTS")
					for _, r := range v {
						fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", r.ID, r.Name, len(r.Members), r.Events)
					}
					tw.Flush()
				})
		},
	}
}

func roomInviteCmd(g *globals) *cobra.Command {
	var as string
	cmd := &cobra.Command{
		Use:   "invite ROOM PEER_ID",
		Short: "Invite another node into a room",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.EventID, error) {
				return c.Invite(ctx, args[0], args[1], as)
			}, func(w io.Writer, v localapi.EventID) { fmt.Fprintf(w, "invited %s (event %s)\n", args[1], v.ID) })
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "agent that invites (default human)")
	return cmd
}

func roomSayCmd(g *globals) *cobra.Command {
	var req localapi.SayRequest
	cmd := &cobra.Command{
		Use:   "say ROOM TEXT",
		Short: "Post a message; prints its id",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Text = args[1]
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.EventID, error) {
				return c.Say(ctx, args[0], req)
			}, func(w io.Writer, v localapi.EventID) { fmt.Fprintln(w, v.ID) })
		},
	}
	cmd.Flags().StringVar(&req.Agent, "as", "", "agent that speaks (default human)")
	cmd.Flags().StringVar(&req.ReplyTo, "reply-to", "", "id of the message this answers")
	cmd.Flags().StringVar(&req.To, "to", "", "agent address the message is for (NAME or NAME@PEER_ID)")
	return cmd
}

func roomLogCmd(g *globals) *cobra.Command {
	var limit int
	var before string
	cmd := &cobra.Command{
		Use:   "log ROOM",
		Short: "Show a room's events in display order (the same on every node)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) ([]rooms.View, error) {
				return c.Log(ctx, args[0], limit, before)
			}, func(w io.Writer, v []rooms.View) {
				for _, e := range v {
					printEvent(w, e)
				}
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "how many of the last events to show (1 to 10000)")
	cmd.Flags().StringVar(&before, "before", "", "show the events before this event id")
	return cmd
}

func roomTailCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "tail ROOM",
		Short: "Follow a room: print each new event as it is stored, until interrupted",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := g.resolveHome()
			if err != nil {
				return err
			}
			c := localapi.NewClient(nodeSocket(home))
			defer c.Close()
			out := cmd.OutOrStdout()
			enc := json.NewEncoder(out)
			err = c.Tail(cmd.Context(), args[0], func(v rooms.View) error {
				if g.json {
					return enc.Encode(v)
				}
				printEvent(out, v)
				return nil
			})
			return g.apiErr(err)
		},
	}
}

func roomLeaveCmd(g *globals) *cobra.Command {
	var as string
	cmd := &cobra.Command{
		Use:   "leave ROOM",
		Short: "Leave a room (the agent leaves; the node keeps the history)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.EventID, error) {
				return c.Leave(ctx, args[0], as)
			}, func(w io.Writer, v localapi.EventID) { fmt.Fprintf(w, "left (event %s)\n", v.ID) })
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "agent that leaves (default human)")
	return cmd
}

func printEvent(w io.Writer, e rooms.View) {
	ts := time.UnixMilli(e.Time).Local().Format("15:04:05")
	who := fmt.Sprintf("%s@%s", e.Agent, short(e.Author.String()))
	switch e.Kind {
	case rooms.KindMessage:
		reply := ""
		if e.ReplyTo != nil {
			reply = " ↳" + e.ReplyTo.String()[:8]
		}
		fmt.Fprintf(w, "%s %s %s%s: %s\n", ts, e.ID.String()[:8], who, reply, strings.TrimRight(e.Text, "\n"))
	case rooms.KindCreate:
		fmt.Fprintf(w, "%s %s %s created the room %q\n", ts, e.ID.String()[:8], who, e.Text)
	case rooms.KindInvite:
		fmt.Fprintf(w, "%s %s %s invited %s\n", ts, e.ID.String()[:8], who, e.Target)
	default:
		fmt.Fprintf(w, "%s %s %s %s\n", ts, e.ID.String()[:8], who, e.Kind)
	}
}

func short(s string) string {
	if len(s) > 12 {
		return "…" + s[len(s)-8:]
	}
	return s
}
