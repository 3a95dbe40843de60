package manual

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/parley-mesh/parley/internal/localapi"
)

// Shell is how an agent without Parley's MCP tools answers: the parley
// command line of its node. Agent is the agent's name on the node (for
// --as); an empty Shell leaves the command-line lines out.
type Shell struct {
	Agent string
}

// answerLine is the command line that answers an ask from a shell.
func (s Shell) answerLine(it localapi.Item) string {
	if s.Agent == "" {
		return ""
	}
	return fmt.Sprintf("\nFrom a shell: parley room say %s \"your answer\" --reply-to %s --as %s", it.Room, it.ID, s.Agent)
}

// readLine is the command line that shows a room from a shell.
func (s Shell) readLine(room string) string {
	if s.Agent == "" {
		return ""
	}
	return fmt.Sprintf("\nFrom a shell: parley room log %s shows it; parley room say %s \"...\" --as %s writes there.", room, room, s.Agent)
}

// Wake is the text that wakes an idle agent for the items it owes (asks and
// invitations, as Inbox.Peek lists them): who is blocked on it, where, the
// message, and the calls (and, with sh, the command lines) that answer,
// read more and leave. It is at most MaxLen characters: the first item in
// full, the others as one line each.
func Wake(items []localapi.Item, you string, sh Shell) string {
	var owed []localapi.Item
	for _, it := range items {
		if it.Kind == "ask" || it.Kind == "invitation" {
			owed = append(owed, it)
		}
	}
	if len(owed) == 0 {
		return ""
	}
	// Asks first: someone waits on them.
	slices.SortStableFunc(owed, func(a, b localapi.Item) int {
		return cmp.Compare(kindRank(a.Kind), kindRank(b.Kind))
	})
	var b strings.Builder
	b.WriteString("Parley: ")
	first := owed[0]
	var extra string
	if first.Kind == "ask" {
		extra = sh.answerLine(first)
	} else {
		extra = sh.readLine(first.Room)
	}
	var more []string
	for _, it := range owed[1:] {
		line := "\n• " + oneItem(it)
		if it.Kind == "ask" {
			line += sh.answerLine(it)
		}
		more = append(more, line)
	}
	tail := extra
	for i, m := range more {
		if utf8.RuneCountInString(tail+m) > MaxLen/3 {
			tail += fmt.Sprintf("\n… and %d more (parley_read, or parley room log ROOM, shows them).", len(more)-i)
			break
		}
		tail += m
	}
	budget := MaxLen - utf8.RuneCountInString(b.String()) - utf8.RuneCountInString(tail)
	var head string
	if first.Kind == "ask" {
		head = Ask(first)
	} else {
		head = Invitation(first, you)
	}
	b.WriteString(cut(head, budget))
	b.WriteString(tail)
	return b.String()
}

func kindRank(k string) int {
	if k == "ask" {
		return 0
	}
	return 1
}

// oneItem is an owed item on one line.
func oneItem(it localapi.Item) string {
	if it.Kind == "invitation" {
		return fmt.Sprintf("%s invited you into room %s (room_id %s%s).", cut(it.From, 80), quote(it.RoomName, 40), it.Room, localapi.CreatedBy(it.RoomCreator))
	}
	return fmt.Sprintf("%s asked in %s%s: %q (ask %s).", cut(it.From, 80), quote(it.RoomName, 40), localapi.RoomAside(it.Room, it.RoomCreator), cut(oneLine(it.Text), 80), it.ID)
}

// Notice renders an agent's pending items (as a take returns them) as plain
// text of at most max characters, for a hook's context on a tool result or
// a wake-up: asks owed first, in full, then reminders, invitations, replies
// and messages. It is empty when nothing is pending.
func Notice(p localapi.Pending, you string, sh Shell, max int) string {
	if p.Empty() {
		return ""
	}
	var parts []string
	add := func(s string) { parts = append(parts, s) }
	for _, it := range p.Items {
		if it.Kind == "ask" {
			add("Someone is waiting on you through Parley. " + Ask(it) + sh.answerLine(it))
		}
	}
	for _, it := range p.Items {
		switch it.Kind {
		case "reminder":
			add(Reminder(it))
		case "invitation":
			add(Invitation(it, you) + sh.readLine(it.Room))
		}
	}
	for _, it := range p.Items {
		switch it.Kind {
		case "ask", "reminder", "invitation":
		case "reply":
			add(fmt.Sprintf("Reply %s from %s to your ask %s, in room %s%s:\n%s", it.ID, cut(it.From, 120), it.ReplyTo, quote(it.RoomName, 80), localapi.RoomAside(it.Room, it.RoomCreator), Block(cut(it.Text, 1500), 2)))
		default:
			add(fmt.Sprintf("Message %s from %s in room %s (room_id %s%s):\n%s\nparley_reply {\"message_id\":%q,\"text\":\"...\"} answers it.",
				it.ID, cut(it.From, 120), quote(it.RoomName, 80), it.Room, localapi.CreatedBy(it.RoomCreator), Block(cut(it.Text, 1500), 2), it.ID))
		}
	}
	for _, m := range p.MoreUnread {
		add(fmt.Sprintf("%d more unread in room %s%s: parley_read {\"room\":%q} shows them.", m.Count, quote(m.RoomName, 80), localapi.CreatedBy(m.RoomCreator), m.Room))
	}
	var b strings.Builder
	b.WriteString("Parley (messages for you):")
	for i, s := range parts {
		s = "\n\n" + s
		left := max - utf8.RuneCountInString(b.String())
		if utf8.RuneCountInString(s) > left {
			note := fmt.Sprintf("\n\n(%d more items: parley_read shows them.)", len(parts)-i)
			if left > utf8.RuneCountInString(note)+200 {
				b.WriteString(cut(s, left-utf8.RuneCountInString(note)))
			}
			if utf8.RuneCountInString(b.String()+note) <= max {
				b.WriteString(note)
			}
			break
		}
		b.WriteString(s)
	}
	return b.String()
}
