package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/procs"
	"github.com/parley-mesh/parley/internal/termtext"
	"github.com/parley-mesh/parley/node"
)

// human is the agent the CLI speaks as unless --as names another.
const human = "human"

func roomCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "room",
		Short: "Rooms: lasting, causally ordered conversations between agents of many nodes",
		Long: `Rooms are conversations with a purpose between agents of one or many nodes. ROOM is a
room ID or the name of exactly one room. The CLI speaks as the agent "human" of this node
unless --as names another. Agents are members of rooms: invite one as NAME@PEER_ID (its
node is admitted for it) or NAME (an agent of this node).`,
	}
	cmd.AddCommand(roomCreateCmd(g), roomListCmd(g), roomInviteCmd(g), roomSayCmd(g), roomAskCmd(g),
		roomLogCmd(g), roomShowCmd(g), roomTailCmd(g), roomLeaveCmd(g), roomRemoveCmd(g))
	return cmd
}

func roomCreateCmd(g *globals) *cobra.Command {
	var as, purpose string
	var members []string
	cmd := &cobra.Command{
		Use:     "create NAME",
		Short:   "Create a room; prints its room_id (also when a member could not be invited: then it exits 1 and says why)",
		Example: `  parley room create release-1.0 --purpose "ship 1.0 by Friday" --member reviewer@12D3KooW...`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := errors.Join(utf8Arg("NAME", args[0]), utf8Arg("--purpose", purpose)); err != nil {
				return err
			}
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.OpenRoomResult, error) {
				res, err := c.OpenRoom(ctx, as, localapi.OpenRoomRequest{Name: args[0], Purpose: purpose, Members: members})
				if err == nil && !g.json {
					notes(ctx, c, cmd.ErrOrStderr(), res.Notes...)
				}
				if err == nil && len(res.Failed) > 0 {
					var fs []string
					for _, f := range res.Failed {
						fs = append(fs, termtext.Line(f.Member+": "+f.Error)) // the error may come from another node
					}
					err = partial{fmt.Errorf("room %s is open, but not everyone could be invited: %s", res.RoomID, strings.Join(fs, "; "))}
				}
				return res, err
			}, func(w io.Writer, v localapi.OpenRoomResult) { fmt.Fprintln(w, v.RoomID) })
		},
	}
	cmd.Flags().StringVar(&as, "as", defaultAs(), "agent that creates it")
	cmd.Flags().StringVar(&purpose, "purpose", "", "one line: what the room is for (every member sees it)")
	cmd.Flags().StringArrayVar(&members, "member", nil, "agent to bring in (NAME@PEER_ID or NAME), or a PEER_ID; repeatable")
	return cmd
}

func roomListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the rooms this node is in",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Who created each room: any member of a room can make one with
			// the same name and purpose.
			var book localapi.NameBook
			self := ""
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) ([]localapi.RoomInfo, error) {
				book = nameBook(ctx, c)
				if id, err := c.ID(ctx); err == nil {
					self = id.PeerID
				}
				return c.Rooms(ctx)
			},
				func(w io.Writer, v []localapi.RoomInfo) {
					if len(v) == 0 {
						fmt.Fprintln(w, "no rooms (create one with `parley room create NAME`)")
						return
					}
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ROOM ID\tNAME\tCREATED BY\tNODES\tAGENTS\tEVENTS\tPURPOSE")
					for _, r := range v {
						by := "this node"
						if r.Creator != self {
							by = termtext.Line(book.Node(r.Creator))
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", r.RoomID, termtext.Line(r.Name), dash(by), len(r.Members), len(r.Agents), r.Events, dash(oneLine(r.Purpose, 50)))
					}
					tw.Flush()
				})
		},
	}
}

func roomInviteCmd(g *globals) *cobra.Command {
	var as string
	cmd := &cobra.Command{
		Use:   "invite ROOM MEMBER...",
		Short: "Bring agents (NAME@PEER_ID, or NAME of this node) or nodes (PEER_ID) into a room",
		Long: `Bring members into a room. An agent NAME@PEER_ID becomes a member, and its node is
admitted for it; NAME is an agent of this node; a bare PEER_ID admits the node, whose "human"
joins. The invite opens the room at once on a contact's node whose certificate grants invites;
a contact whose certificate does not gets it in ` + "`parley invites`" + `, where it waits for their
answer. A node that is no contact is not invited (an agent of a node in the room already may be).`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) ([]localapi.Posted, error) {
				var out []localapi.Posted
				for i, m := range args[1:] {
					p, err := c.Invite(ctx, as, localapi.InviteRequest{Room: args[0], Member: m})
					if err != nil {
						err = fmt.Errorf("invite %s: %w", m, err)
						if len(out) == 0 {
							return out, err
						}
						// What was invited before shows (on stdout, as
						// JSON with --json); the rest was not tried.
						if rest := args[2+i:]; len(rest) > 0 {
							err = fmt.Errorf("%w; not tried: %s", err, strings.Join(rest, " "))
						}
						return out, partial{err}
					}
					if !g.json {
						notes(ctx, c, cmd.ErrOrStderr(), p.Note)
					}
					out = append(out, p)
				}
				return out, nil
			}, func(w io.Writer, v []localapi.Posted) {
				for i, p := range v {
					if p.Already {
						fmt.Fprintf(w, "%s is already in %s (let in by event %s)\n", args[1+i], quoted(p.Room.Name), p.ID)
						continue
					}
					if p.Waits {
						fmt.Fprintf(w, "invited %s into %s (event %s): it is not a contact that lets you invite it at once, so the invite waits for their answer (`parley invites` on their node)\n", args[1+i], quoted(p.Room.Name), p.ID)
						continue
					}
					fmt.Fprintf(w, "invited %s into %s (event %s)\n", args[1+i], quoted(p.Room.Name), p.ID)
				}
			})
		},
	}
	cmd.Flags().StringVar(&as, "as", defaultAs(), "agent that invites")
	return cmd
}

func roomSayCmd(g *globals) *cobra.Command {
	var as string
	var req localapi.SayRequest
	cmd := &cobra.Command{
		Use:   "say ROOM TEXT",
		Short: "Post a message; prints its id",
		// An answer is a message that names what it answers (--reply-to):
		// `room reply` is offered say.
		SuggestFor: []string{"reply", "answer", "post", "send"},
		Long: `Post a message; prints its id. Posted by you, the node's user, as human, it also takes your
invitation to the room (as ` + "`parley room log`" + ` does): you have taken part in it.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Room, req.Text = args[0], args[1]
			if err := utf8Arg("TEXT", req.Text); err != nil {
				return err
			}
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.Posted, error) {
				res, err := c.Say(ctx, as, req)
				if err == nil {
					notes(ctx, c, cmd.ErrOrStderr(), res.Note)
					userPosted(ctx, c, cmd.ErrOrStderr(), as, args[0])
				}
				return res, err
			}, func(w io.Writer, v localapi.Posted) { fmt.Fprintln(w, v.ID) })
		},
	}
	cmd.Flags().StringVar(&as, "as", defaultAs(), "agent that speaks")
	cmd.Flags().StringVar(&req.ReplyTo, "reply-to", "", "id of the message this answers")
	cmd.Flags().StringVar(&req.To, "to", "", "agent the message is for (NAME or NAME@PEER_ID)")
	return cmd
}

func roomAskCmd(g *globals) *cobra.Command {
	var as string
	var wait time.Duration
	var req localapi.AskRequest
	cmd := &cobra.Command{
		Use:   "ask ROOM TEXT",
		Short: "Ask the room (or one agent, --to) and wait for the first answer",
		Long: `Post an ask: every member agent of the room but you owes it (or only --to), and is
reminded of it on each of its tool calls until someone answers, it expires, or it is
dismissed. Waits up to --wait for the first reply and prints it; with no reply by
then it exits 1, the ask still open (with --wait 0 it does not wait, and exits 0). Posted by
you, the node's user, as human, it also takes your invitation to the room, as room log does.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if wait < 0 || wait > localapi.MaxWait {
				return fmt.Errorf("--wait %s: use 0 to %s", wait, localapi.MaxWait)
			}
			req.Room, req.Text = args[0], args[1]
			if err := utf8Arg("TEXT", req.Text); err != nil {
				return err
			}
			var book localapi.NameBook
			// The wait is the node's to make: --timeout is how long the
			// node may take on top of it, as for inbox --wait.
			g2 := *g
			g2.timeout += wait
			return call(&g2, cmd, func(ctx context.Context, c *localapi.Client) (localapi.AskResult, error) {
				// The ask is posted first and the reply waited for in a
				// second call: whatever befalls the wait (the node
				// stopping, a signal), the user has the ask's ID and
				// does not ask again.
				res, err := c.Ask(ctx, as, req)
				if err != nil {
					return res, err
				}
				userPosted(ctx, c, cmd.ErrOrStderr(), as, args[0])
				if !g.json {
					notes(ctx, c, cmd.ErrOrStderr(), res.Note)
				}
				if res.Reply == nil && wait > 0 {
					if !g.json {
						fmt.Fprintf(cmd.ErrOrStderr(), "asked (id %s); waiting up to %s for a reply\n", res.AskID, wait)
					}
					got, werr := c.WaitReply(ctx, as, res.AskID, wait, req.Take)
					if werr != nil {
						return res, partial{fmt.Errorf("the ask %s was posted and stays open, but waiting for its reply failed: %w; its answer shows in `parley room log %s`",
							res.AskID, g.apiErr(werr), args[0])}
					}
					got.Note = res.Note
					res = got
				}
				if res.Reply != nil && !g.json {
					book = nameBook(ctx, c)
				}
				if res.Reply == nil && wait > 0 {
					// A script tells an answer from a timeout by the exit
					// code; the ask stays open.
					err = partial{fmt.Errorf("no reply within %s; the ask stays open: its answer shows in `parley room log %s`", wait, args[0])}
				}
				return res, err
			}, func(w io.Writer, v localapi.AskResult) {
				if v.Reply == nil {
					fmt.Fprintf(w, "asked (id %s)\n", v.AskID)
					return
				}
				fmt.Fprintf(w, "%s: %s\n", termtext.Line(book.Agent(v.Reply.From)), termtext.Lines(v.Reply.Text))
			})
		},
	}
	cmd.Flags().StringVar(&as, "as", defaultAs(), "agent that asks")
	cmd.Flags().StringVar(&req.To, "to", "", "the agent asked (NAME or NAME@PEER_ID); default: everyone in the room")
	durationFlag(cmd.Flags(), &wait, "wait", 30*time.Second, "how long to wait for the answer")
	return cmd
}

// userReads reports whether the node's user runs this command, not one of
// its agents: no $PARLEY_AGENT (parley run sets it), and no agent's client
// program among the command's ancestors (the client that started a parley
// mcp, whose shell commands carry no $PARLEY_AGENT; the node knows it by
// its process, as parley guard asks). When the node cannot say, it is not
// taken as the user: a read by an agent must never take what is the user's.
func userReads(ctx context.Context, c *localapi.Client) bool {
	if givenAgent(defaultAs()) != human {
		return false
	}
	r, err := c.AgentsByProcess(ctx, procs.Ancestors(os.Getpid()))
	return err == nil && len(r.Agents) == 0
}

// userPosted takes the user's invitation to room once they posted there
// as human (room say, room ask): they have taken part in the room, as
// much as room log reads it. An agent's post as human takes nothing.
func userPosted(ctx context.Context, c *localapi.Client, w io.Writer, as, room string) {
	if givenAgent(as) != human || !userReads(ctx, c) {
		return
	}
	if _, err := c.TakeInvitation(ctx, human, room); err != nil {
		fmt.Fprintf(w, "parley: your invitation to the room is not taken: %v\n", err)
	}
}

func roomLogCmd(g *globals) *cobra.Command {
	var limit int
	var before string
	cmd := &cobra.Command{
		Use:   "log ROOM",
		Short: "Show a room's events in display order (the same on every node)",
		Long: `Show a room's events in display order, the same on every node: the last ones, or those
before --before. Run by you, the node's user, it is you reading the room: your invitation to it
(human's, which ` + "`parley inbox`" + ` and the dashboard list) is taken. An agent's read takes
nothing of yours: one with PARLEY_AGENT set (parley run sets it), or one whose client program (one
that started a parley mcp of this node: Claude Code, Codex, Gemini CLI, opencode) runs the command.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 || limit > localapi.MaxLog {
				// 0 would read the node's default: refused, as the node
				// refuses a limit out of range.
				return fmt.Errorf("--limit %d: limit must be 1 to %d", limit, localapi.MaxLog)
			}
			var book localapi.NameBook
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) ([]localapi.Event, error) {
				es, err := c.Log(ctx, args[0], limit, before)
				if err != nil {
					return es, err
				}
				if userReads(ctx, c) {
					// The node's user read the room, as the dashboard's
					// invitation row says to: its invitation is taken (an
					// agent reading it takes nothing of the user's).
					if _, err := c.TakeInvitation(ctx, human, args[0]); err != nil {
						fmt.Fprintf(cmd.ErrOrStderr(), "parley: your invitation to the room is not taken: %v\n", err)
					}
				}
				if !g.json {
					book = nameBook(ctx, c)
				}
				return es, nil
			}, func(w io.Writer, v []localapi.Event) {
				for _, e := range v {
					printEvent(w, e, book)
				}
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "how many of the last events to show (1 to 10000)")
	cmd.Flags().StringVar(&before, "before", "", "show the events before this event (its ID whole, or its first 8 characters or more, as the log shows them)")
	return cmd
}

func roomShowCmd(g *globals) *cobra.Command {
	var as string
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one event whole, by its ID (or its first 8 characters or more)",
		Long: `Show one event of a room whole: who wrote it (NAME@HANDLE), when, its room, its kind
(a message, an ask and whom it asks, a reply and what it answers) and its whole text,
however long. ID is the event's ID whole, or its first 8 characters or more as
` + "`parley room log`" + ` shows it; a start that several events share is refused, asking for more.

An agent (--as, else PARLEY_AGENT, which parley run sets) reads the events of the rooms it
is in, as parley_read {"message_id":"ID"} does: an event of a room it was never in is to
it as one that does not exist ("no event ID in the rooms you (AGENT) were let into"), and
one of a room it left is refused saying so. The agent human (the default: you, the node's
user) reads any event of any room the node holds, as room log shows them. A text that a wake-up pasted into a terminal agent's pane cut short
names this command. Nothing is marked read: an unread event stays unread. Text from other
nodes is shown with terminal controls escaped, as room log shows it; --json prints the event
as the local API gives it.`,
		Example: `  parley room show 2b7cq4xa
  parley room show 2b7cq4xa --as reviewer --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var book localapi.NameBook
			self := "" // this node's peer ID: its rooms show as created by you
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.Item, error) {
				res, err := c.Read(ctx, as, localapi.ReadRequest{ID: args[0]})
				if err != nil {
					return localapi.Item{}, err
				}
				if len(res.Messages) != 1 {
					return localapi.Item{}, fmt.Errorf("the node gave %d events for %s, not one", len(res.Messages), termtext.Line(args[0]))
				}
				if !g.json {
					book = nameBook(ctx, c)
					if id, err := c.ID(ctx); err == nil {
						self = id.PeerID
					}
				}
				return res.Messages[0], nil
			}, func(w io.Writer, it localapi.Item) { printItem(w, it, book, self) })
		},
	}
	cmd.Flags().StringVar(&as, "as", defaultAs(), "agent that reads (an agent reads its own rooms' events; human, any room's)")
	return cmd
}

// printItem prints one event whole (room show): a line each for its ID,
// room, author, time and kind, then its text, every line of it indented,
// with every text from the network shown escaped as printEvent does.
// self is this node's peer ID.
func printItem(w io.Writer, it localapi.Item, book localapi.NameBook, self string) {
	agent := func(a string) string { return termtext.Line(book.Agent(a)) }
	created := book.Text(localapi.CreatedBy(it.RoomCreator))
	if it.RoomCreator != "" && it.RoomCreator == self {
		created = ", created by you"
	}
	room := "room_id " + it.Room + created
	if it.RoomName != "" {
		room = quoted(it.RoomName) + " (" + room + ")"
	}
	kind := termtext.Line(it.Kind)
	switch it.Kind {
	case "message":
		if it.ReplyTo != "" {
			kind = "reply to " + it.ReplyTo
		}
		if it.To != "" {
			kind += ", for " + agent(it.To)
		}
	case "ask":
		kind = "ask of everyone in the room"
		if it.To != "" {
			kind = "ask of " + agent(it.To)
		}
		if it.ReplyTo != "" {
			kind += ", in reply to " + it.ReplyTo
		}
	default: // invite, join, leave, create, board events
		if it.To != "" {
			kind += " of " + agent(it.To)
		}
		if it.Target != "" {
			kind += " of node " + termtext.Line(book.Node(it.Target))
		}
	}
	if it.Purpose != "" {
		kind += " (purpose: " + termtext.Line(it.Purpose) + ")"
	}
	fmt.Fprintf(w, "event %s\n", it.ID)
	fmt.Fprintf(w, "room  %s\n", room)
	fmt.Fprintf(w, "from  %s\n", agent(it.From))
	fmt.Fprintf(w, "time  %s\n", time.UnixMilli(it.Time).Local().Format("2006-01-02 15:04:05 -0700"))
	fmt.Fprintf(w, "kind  %s\n", kind)
	text := strings.TrimRight(it.Text, "\n")
	fmt.Fprintf(w, "text  (%d characters)\n", utf8.RuneCountInString(it.Text))
	if text != "" {
		// termtext.Lines indents every line after the first by two
		// spaces: the text's lines all start deeper than the ones above.
		fmt.Fprintf(w, "  %s\n", termtext.Lines(text))
	}
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
			var book localapi.NameBook
			// --timeout bounds the wait for the node's first answer
			// only: then the tail follows until interrupted.
			err = c.TailWithin(cmd.Context(), args[0], g.timeout, func(v localapi.Event) error {
				if g.json {
					return enc.Encode(v)
				}
				if _, ok := book[v.Author]; !ok {
					book = nameBook(cmd.Context(), c) // a node not named yet: ask again
				}
				printEvent(out, v, book)
				return nil
			})
			// A tail ends, but for an interrupt, only when the node
			// stops: say so, and fail (a script following a room must
			// not read it as a room gone quiet).
			if st := (*localapi.Stopped)(nil); errors.As(err, &st) && st.Stream {
				how := "the node stopped"
				if !errors.Is(st.Err, localapi.ErrStreamStopped) {
					how = fmt.Sprintf("the node stopped without a word (it crashed or was killed; its log: %s)", filepath.Join(home, node.LogFileName))
				}
				st.Explain = fmt.Sprintf("%s: the tail of room %s ends here; start the node again with `%s` and tail again", how, args[0], node.UpCommand(home, false))
				return st
			}
			return g.apiErr(err)
		},
	}
}

func roomLeaveCmd(g *globals) *cobra.Command {
	var as string
	var node bool
	cmd := &cobra.Command{
		Use:   "leave ROOM",
		Short: "Leave a room: the agent leaves (the node too once none of its agents is in), or with --node the node",
		Long: `The agent (--as, default human) leaves the room: it can no longer post there until it
is invited again. When no agent of this node is left in the room, or with --node, the node
leaves it: it stops following the room (no gossip, no sync), the members stop sending to it,
and the room drops out of ` + "`parley room list`" + `. The history stays on disk; a new invite
brings the node back.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.LeaveResult, error) {
				return c.Leave(ctx, as, localapi.LeaveRequest{Room: args[0], Node: node})
			}, func(w io.Writer, v localapi.LeaveResult) {
				if v.NodeLeft {
					fmt.Fprintf(w, "this node left %s (event %s)\n", quoted(v.Room.Name), v.ID)
					return
				}
				fmt.Fprintf(w, "%s left %s (event %s)\n", as, quoted(v.Room.Name), v.ID)
			})
		},
	}
	cmd.Flags().StringVar(&as, "as", defaultAs(), "agent that leaves")
	cmd.Flags().BoolVar(&node, "node", false, "the whole node leaves the room")
	return cmd
}

func roomRemoveCmd(g *globals) *cobra.Command {
	var as string
	cmd := &cobra.Command{
		Use:   "remove ROOM PEER_ID|NAME@PEER_ID",
		Short: "Remove a member node, or one agent, from a room (the room's creator only)",
		Long: `Take a member node out of a room this node created. Every member refuses the node's
later events, stops sending to it and refuses its sync: it gets nothing new.

Given an agent's address (NAME@PEER_ID or NAME@HANDLE), take only that agent out: its
node stays a member, the agent is told and posts nothing more there (its node refuses)
until an invite names it again. Rooms created before 2026-12-04 take out whole nodes only.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.EventID, error) {
				return c.Remove(ctx, args[0], localapi.RemoveRequest{PeerID: args[1], Agent: as})
			}, func(w io.Writer, v localapi.EventID) { fmt.Fprintf(w, "removed %s (event %s)\n", args[1], v.ID) })
		},
	}
	cmd.Flags().StringVar(&as, "as", defaultAs(), "agent that removes it")
	return cmd
}

// notes prints the node's notes on a call that went through (an agent it
// could not check), nodes named as people read them.
func notes(ctx context.Context, c *localapi.Client, w io.Writer, ns ...string) {
	var book localapi.NameBook
	for _, n := range ns {
		if n == "" {
			continue
		}
		if book == nil {
			book = nameBook(ctx, c)
		}
		fmt.Fprintf(w, "note: %s\n", termtext.Line(book.Text(n)))
	}
}

// nameBook fetches the names of the nodes the node knows; without them,
// nodes show as short peer IDs.
func nameBook(ctx context.Context, c *localapi.Client) localapi.NameBook {
	es, err := c.Names(ctx)
	if err != nil {
		return nil
	}
	return localapi.NewNameBook(es)
}

// quoted is a room's name in quotes, as a sentence of the CLI gives it:
// strconv.Quote escapes, once, every character termtext.Line would
// (controls, format characters such as bidi overrides, line separators,
// bytes that are not UTF-8), and the quotes and backslashes in it.
func quoted(name string) string { return strconv.Quote(name) }

// printEvent prints one event on a line: time, short ID, agent@handle and
// what it did, with every text from the network shown escaped.
func printEvent(w io.Writer, e localapi.Event, book localapi.NameBook) {
	ts := time.UnixMilli(e.Time).Local().Format("15:04:05")
	who := termtext.Line(e.Agent + "@" + book.Node(e.Author))
	short := func(p string) string { return termtext.Line(book.Node(p)) }
	shortAddr := func(a string) string { return termtext.Line(book.Agent(a)) }
	id := e.ID[:min(8, len(e.ID))]
	switch e.Kind {
	case "message", "ask":
		reply := ""
		if e.ReplyTo != "" {
			reply = " ↳" + e.ReplyTo[:min(8, len(e.ReplyTo))]
		}
		to := ""
		if e.To != "" {
			to = " → " + shortAddr(e.To)
		}
		verb := ""
		if e.Kind == "ask" {
			verb = " asks"
		}
		fmt.Fprintf(w, "%s %s %s%s%s%s: %s\n", ts, id, who, verb, to, reply, termtext.Lines(strings.TrimRight(e.Text, "\n")))
	case "create":
		purpose := ""
		if e.Purpose != "" {
			purpose = fmt.Sprintf(" (purpose: %s)", termtext.Line(e.Purpose))
		}
		fmt.Fprintf(w, "%s %s %s created the room %s%s\n", ts, id, who, quoted(e.Text), purpose)
	case "invite":
		whom := "node " + short(e.Target)
		if e.To != "" {
			whom = shortAddr(e.To)
		}
		fmt.Fprintf(w, "%s %s %s invited %s\n", ts, id, who, whom)
	case "join":
		fmt.Fprintf(w, "%s %s %s joined\n", ts, id, who)
	case "leave":
		switch {
		case e.Target == "" && e.To != "" && strings.HasSuffix(e.To, "@"+e.Author):
			fmt.Fprintf(w, "%s %s %s took %s out\n", ts, id, who, shortAddr(e.To))
		case e.Target == "" && e.To != "":
			fmt.Fprintf(w, "%s %s %s removed %s\n", ts, id, who, shortAddr(e.To))
		case e.Target == "":
			fmt.Fprintf(w, "%s %s %s left\n", ts, id, who)
		case e.Target == e.Author:
			fmt.Fprintf(w, "%s %s %s left, with its node\n", ts, id, who)
		default:
			fmt.Fprintf(w, "%s %s %s removed node %s\n", ts, id, who, short(e.Target))
		}
	default:
		fmt.Fprintf(w, "%s %s %s %s\n", ts, id, who, termtext.Line(e.Kind))
	}
}

// utf8Arg refuses text that is not valid UTF-8: the local API's JSON would
// carry it with each bad byte replaced (U+FFFD), so the room would get
// other text than the one given.
func utf8Arg(what, s string) error {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return fmt.Errorf("%s is not valid UTF-8 (byte %d of %d): give text", what, i+1, len(s))
		}
		i += n
	}
	return nil
}
