package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/termtext"
)

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func inboxCmd(g *globals) *cobra.Command {
	var as string
	var take bool
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "inbox",
		Short: "What waits for you: asks to answer, invitations, replies, unread messages, contact requests",
		Long: `Lists what the agent (--as, default human: you) has yet to see, as an agent's
parley_read does: the asks it owes (each with the command that answers it), invitations,
replies to its asks, unread messages and board notices; for human, also the requests to be
contacts that wait for your approval. Nothing is marked as seen unless --take is given; an
ask stays until it is answered. --wait waits for something new first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if wait < 0 || wait > localapi.MaxWait {
				return fmt.Errorf("--wait %s: use 0 to %s", wait, localapi.MaxWait)
			}
			// As the node reads it: --as HUMAN is human, and gets the
			// contact requests that wait for the user.
			as = givenAgent(as)
			var book localapi.NameBook
			self := ""
			g2 := *g
			g2.timeout += wait
			return call(&g2, cmd, func(ctx context.Context, c *localapi.Client) (v inboxView, err error) {
				book = nameBook(ctx, c)
				if id, err := c.ID(ctx); err == nil {
					self = id.PeerID
				}
				switch {
				case wait > 0:
					v.Pending, err = c.Wait(ctx, as, localapi.WaitRequest{Seconds: wait.Seconds(), Take: take})
				case take:
					v.Pending, err = c.Take(ctx, as)
				default:
					v.Pending, err = c.Peek(ctx, as)
				}
				v.Pending = v.Pending.OrEmpty()
				v.ContactRequests = []localapi.ContactEntry{}
				if err == nil && as == human {
					v.ContactRequests = contactRequests(ctx, c)
				}
				return v, err
			}, func(w io.Writer, v inboxView) { printPending(w, v.Pending, book, self, as, v.ContactRequests) })
		},
	}
	cmd.Flags().StringVar(&as, "as", defaultAs(), "agent whose inbox to show")
	cmd.Flags().BoolVar(&take, "take", false, "mark what is shown as seen (asks stay until answered)")
	durationFlag(cmd.Flags(), &wait, "wait", 0, "wait up to this long for something new (at most 50s)")
	return cmd
}

// inboxView is what `parley inbox` shows: an agent's pending items and,
// for human, the requests to be contacts that wait for the user
// (`--json`: the local API's fields, and contact_requests, [] for an
// agent).
type inboxView struct {
	localapi.Pending
	ContactRequests []localapi.ContactEntry `json:"contact_requests"`
}

// contactRequests returns the requests to be contacts that wait for the
// user's approval; none when they cannot be read (the inbox is shown
// anyway).
func contactRequests(ctx context.Context, c *localapi.Client) []localapi.ContactEntry {
	out := []localapi.ContactEntry{}
	cs, err := c.Contacts(ctx)
	if err != nil {
		return out
	}
	for _, e := range cs {
		if e.State == "pending-in" {
			out = append(out, e)
		}
	}
	return out
}

// printPending prints agent as's pending items, each with what to do
// about it, the unread messages left unlisted, and the requests to be
// contacts that wait for the user. self is this node's peer ID.
func printPending(w io.Writer, v localapi.Pending, book localapi.NameBook, self, as string, requests []localapi.ContactEntry) {
	if len(v.Items) == 0 && len(v.MoreUnread) == 0 && len(requests) == 0 {
		if as != human {
			// Another agent's inbox, read by you: "you" would be you.
			fmt.Fprintf(w, "nothing waits for %s\n", termtext.Line(as))
			return
		}
		fmt.Fprintln(w, "nothing waits for you")
		return
	}
	defer func() {
		for _, r := range requests {
			fmt.Fprintf(w, "CONTACT REQUEST from %s", r.PeerID)
			if r.Handle != "" {
				fmt.Fprintf(w, " (handle %q, its own word)", termtext.Line(r.Handle))
			}
			if r.Note != "" {
				fmt.Fprintf(w, ": %s", termtext.Line(r.Note))
			}
			fmt.Fprintf(w, "\n    approve: parley contact approve %s; deny: parley contact deny %s\n", r.ID, r.ID)
		}
	}()
	// The commands shown act as the agent whose inbox this is: pasted
	// as they are, they do not answer as human (nor as PARLEY_AGENT).
	asFlag := ""
	if as != human || givenAgent(defaultAs()) != human {
		asFlag = " --as " + termtext.Line(as)
	}
	agent := func(a string) string { return termtext.Line(book.Agent(a)) }
	short := func(id string) string { return id[:min(8, len(id))] }
	room := func(it localapi.Item) string {
		if it.RoomName != "" {
			// Another room here has the name: say whose this one is.
			return quoted(it.RoomName) + roomAside(it.Room, it.RoomCreator, self, book)
		}
		return short(it.Room)
	}
	text := func(s string) string { return termtext.Lines(book.Text(strings.TrimRight(s, "\n"))) }
	for _, it := range v.Items {
		ts := time.UnixMilli(it.Time).Local().Format("15:04:05")
		switch it.Kind {
		case "ask":
			fmt.Fprintf(w, "%s ASK %s from %s in %s: %s\n", ts, short(it.ID), agent(it.From), room(it), text(it.Text))
			if it.Brought {
				fmt.Fprintf(w, "    it brought you into %s for this ask", room(it))
				if it.Purpose != "" {
					fmt.Fprintf(w, " (purpose: %s)", termtext.Line(it.Purpose))
				}
				fmt.Fprintf(w, "; read it: parley room log %s; leave it: parley room leave %s%s\n", it.Room, it.Room, asFlag)
			}
			fmt.Fprintf(w, "    answer: parley room say %s \"…\" --reply-to %s%s\n", it.Room, it.ID, asFlag)
		case "reminder":
			fmt.Fprintf(w, "%s ASK %s from %s in %s still waits for your answer: %s\n", ts, short(it.ID), agent(it.From), room(it), text(it.Text))
			fmt.Fprintf(w, "    answer: parley room say %s \"…\" --reply-to %s%s\n", it.Room, it.ID, asFlag)
		case "invitation":
			fmt.Fprintf(w, "%s INVITATION from %s to %s", ts, agent(it.From), room(it))
			if it.Purpose != "" {
				fmt.Fprintf(w, " (purpose: %s)", termtext.Line(it.Purpose))
			}
			fmt.Fprintln(w)
			if len(it.Members) > 0 {
				names := make([]string, len(it.Members))
				for i, m := range it.Members {
					names[i] = agent(m)
				}
				fmt.Fprintf(w, "    in it: %s\n", strings.Join(names, ", "))
			}
			fmt.Fprintf(w, "    read it: parley room log %s; leave it: parley room leave %s%s\n", it.Room, it.Room, asFlag)
		case "removed":
			fmt.Fprintf(w, "%s REMOVED from %s by %s: you no longer post or read there, and the asks you owed there are dropped; a member can invite you back\n", ts, room(it), agent(it.From))
		case "reply":
			fmt.Fprintf(w, "%s REPLY from %s in %s to your ask %s: %s\n", ts, agent(it.From), room(it), short(it.ReplyTo), text(it.Text))
		case "message":
			to := ""
			if it.To != "" {
				to = " → " + agent(it.To)
			}
			fmt.Fprintf(w, "%s %s %s%s in %s: %s\n", ts, short(it.ID), agent(it.From), to, room(it), text(it.Text))
		default: // board notices and what later versions add
			paths := ""
			if len(it.Paths) > 0 {
				paths = " (" + termtext.Line(strings.Join(it.Paths, ", ")) + ")"
			}
			fmt.Fprintf(w, "%s %s%s: %s\n", ts, strings.ToUpper(strings.ReplaceAll(it.Kind, "_", " ")), paths, text(it.Text))
		}
	}
	if v.OwedLeftOut > 0 {
		fmt.Fprintf(w, "%d more asks owed, not listed here: they are listed as those above are answered\n", v.OwedLeftOut)
	}
	for _, r := range v.MoreUnread {
		name := r.Room
		if r.RoomName != "" {
			name = quoted(r.RoomName) + roomAside(r.Room, r.RoomCreator, self, book)
		}
		fmt.Fprintf(w, "%d more unread in %s (parley room log %s)\n", r.Count, name, r.Room)
	}
}

// roomAside is localapi.RoomAside as the user reads it: the creator by
// its handle, and a room this node created as created by you.
func roomAside(id, creator, self string, book localapi.NameBook) string {
	if creator != "" && creator == self {
		return " (created by you, room_id " + id + ")"
	}
	return book.Text(localapi.RoomAside(id, creator))
}
