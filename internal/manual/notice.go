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
// --as). With it set, a text says beside each call the command line that
// does the same (answers an ask, reads a room) and the marker of a cut
// text names `parley room show ID --as AGENT` beside parley_read (Cut);
// an empty Shell leaves the command lines out.
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

// moreLine is the line that stands for n owed items left out of a wake-up
// text, and what lists them: with sh set, the command line too.
func (s Shell) moreLine(n int) string {
	if s.Agent == "" {
		return fmt.Sprintf("\n… and %d more (parley_read, or parley room log ROOM, shows them).", n)
	}
	return fmt.Sprintf("\n… and %d more (parley_read, or from a shell parley inbox --as %s, lists them).", n, s.Agent)
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
	text, _ := WakeShown(items, you, sh)
	return text
}

// WakeShown is Wake, and the IDs of the items its text shows (the first in
// full, the others a line each); those it only counts ("… and N more")
// are not among them.
func WakeShown(items []localapi.Item, you string, sh Shell) (string, []string) {
	var owed []localapi.Item
	for _, it := range items {
		if it.Kind == "ask" || it.Kind == "invitation" {
			owed = append(owed, it)
		}
	}
	if len(owed) == 0 {
		return "", nil
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
		line := "\n• " + oneItem(it, sh)
		if it.Kind == "ask" {
			line += sh.answerLine(it)
		}
		more = append(more, line)
	}
	// The lines after the first item take up to a third of the text, and
	// with sh set the room of one marker's command line more, so that a
	// second ask cut short still shows (the first gets less room).
	share := MaxLen/3 + sh.cutExtra(first.ID)
	tail := extra
	shown := []string{first.ID}
	for i, m := range more {
		if utf8.RuneCountInString(tail+m) > share {
			tail += sh.moreLine(len(more) - i)
			break
		}
		tail += m
		shown = append(shown, owed[i+1].ID)
	}
	budget := MaxLen - utf8.RuneCountInString(b.String()) - utf8.RuneCountInString(tail)
	var head string
	if first.Kind == "ask" {
		// Its question cut to what is left, with the call that shows it
		// whole.
		head = askWithin(first, budget, sh)
	} else {
		head = cut(Invitation(first, you), budget)
	}
	b.WriteString(head)
	b.WriteString(tail)
	return b.String(), shown
}

// maxItemText is the most characters a notice gives a message's or a
// reply's text, the marker of a cut included (Clip).
const maxItemText = 1500

func kindRank(k string) int {
	if k == "ask" {
		return 0
	}
	return 1
}

// oneItem is an owed item on one line (a cut ask's marker as sh gives it).
func oneItem(it localapi.Item, sh Shell) string {
	if it.Kind == "invitation" {
		return fmt.Sprintf("%s invited you into room %s (room_id %s%s).", cut(it.From, 80), quote(it.RoomName, 40), it.Room, localapi.CreatedBy(it.RoomCreator))
	}
	return fmt.Sprintf("%s asked in %s%s: %s (ask %s).", cut(it.From, 80), quote(it.RoomName, 40), localapi.RoomAside(it.Room, it.RoomCreator), snippet(it, 80, sh), it.ID)
}

// Notice renders an agent's pending items (as a take returns them) as plain
// text of at most max characters, for a hook's context on a tool result or
// a wake-up: asks owed first, in full, then reminders, invitations, replies
// and messages. It is empty when nothing is pending. See NoticeShown for
// what happens to the items that do not fit.
func Notice(p localapi.Pending, you string, sh Shell, max int) string {
	text, _ := NoticeShown(p, you, sh, max)
	return text
}

// NoticeShown is Notice, and the IDs of the items its text shows (never
// nil, empty when it shows none). An item is shown whole or not at all:
// the first that does not fit is left out, and those after it, and the
// text ends with a note that they come again with the agent's next tool
// result, which is true once the caller confirms the hand-out with these
// IDs (localapi.AckRequest.Shown: the node offers the others again at
// once). The counts of unread messages past the take (Pending.MoreUnread)
// are lines, not items: nothing to confirm, they stay unread, and one left
// out is summed up in the note. So is the count of asks owed that the take
// left out (Pending.OwedLeftOut), after the reminders.
func NoticeShown(p localapi.Pending, you string, sh Shell, max int) (string, []string) {
	shown := []string{}
	if p.Empty() {
		return "", shown
	}
	type part struct {
		text string
		id   string
		item bool // an item of p.Items (else a count of unread messages)
		owed bool // the count of asks owed left out (Pending.OwedLeftOut)
	}
	var parts []part
	add := func(it localapi.Item, s string) { parts = append(parts, part{text: s, id: it.ID, item: true}) }
	for _, it := range p.Items {
		if it.Kind == "ask" {
			add(it, "Someone is waiting on you through Parley. "+askWithin(it, MaxLen, sh)+sh.answerLine(it))
		}
	}
	for _, it := range p.Items {
		if it.Kind == "reminder" {
			add(it, reminder(it, sh))
		}
	}
	if p.OwedLeftOut > 0 {
		// Asks owed the take left out (past the reminders it lists, or
		// its budget): a line, not an item; they come as these are
		// answered.
		parts = append(parts, part{text: fmt.Sprintf("… and %d more asks you owe, left out to keep this short: they are shown as you answer or dismiss these.", p.OwedLeftOut), owed: true})
	}
	for _, it := range p.Items {
		if it.Kind == "invitation" {
			add(it, Invitation(it, you)+sh.readLine(it.Room))
		}
	}
	for _, it := range p.Items {
		switch it.Kind {
		case "ask", "reminder", "invitation":
		case "reply":
			add(it, fmt.Sprintf("Reply %s from %s to your ask %s, in room %s%s:\n%s", it.ID, cut(it.From, 120), it.ReplyTo, quote(it.RoomName, 80), localapi.RoomAside(it.Room, it.RoomCreator), sh.Clip(it.Text, 2, maxItemText, it.ID)))
		default:
			add(it, fmt.Sprintf("Message %s from %s in room %s (room_id %s%s):\n%s\nparley_reply {\"message_id\":%q,\"text\":\"...\"} answers it.",
				it.ID, cut(it.From, 120), quote(it.RoomName, 80), it.Room, localapi.CreatedBy(it.RoomCreator), sh.Clip(it.Text, 2, maxItemText, it.ID), it.ID))
		}
	}
	for _, m := range p.MoreUnread {
		parts = append(parts, part{text: fmt.Sprintf("%d more unread in room %s%s: parley_read {\"room\":%q} shows them.", m.Count, quote(m.RoomName, 80), localapi.CreatedBy(m.RoomCreator), m.Room)})
	}
	var b strings.Builder
	b.WriteString("Parley (messages for you):")
	used := utf8.RuneCountInString(b.String())
	// rest[i] is the length of parts i and after; a part is written when
	// all that is left fits, or when it leaves room for the note should a
	// later one not fit (the longest the note can be).
	rest := make([]int, len(parts)+1)
	for i := len(parts) - 1; i >= 0; i-- {
		rest[i] = rest[i+1] + utf8.RuneCountInString("\n\n"+parts[i].text)
	}
	reserve := utf8.RuneCountInString(leftOut(len(p.Items), len(p.MoreUnread)))
	for i, pt := range parts {
		s := "\n\n" + pt.text
		n := utf8.RuneCountInString(s)
		if used+rest[i] > max && used+n+reserve > max {
			items, counts := 0, 0
			for _, left := range parts[i:] {
				switch {
				case left.item:
					items++
				case !left.owed:
					counts++
				}
			}
			if note := leftOut(items, counts); used+utf8.RuneCountInString(note) <= max {
				b.WriteString(note)
			}
			break
		}
		b.WriteString(s)
		used += n
		if pt.item {
			shown = append(shown, pt.id)
		}
	}
	return b.String(), shown
}

// leftOut is the note that ends a notice whose last items (and counts of
// unread messages) did not fit. The items come again: the caller confirms
// only those it showed (see NoticeShown), and the node offers the others
// to the agent at once, which every tool result of the agent's carries (a
// Parley tool's, and the hooks' on the client's own tools).
func leftOut(items, counts int) string {
	switch {
	case items > 0 && counts > 0:
		return fmt.Sprintf("\n\n(%d more items did not fit here: they come again with your next tool result. More messages wait unread in %d rooms: parley_read shows them.)", items, counts)
	case items > 0:
		return fmt.Sprintf("\n\n(%d more items did not fit here: they come again with your next tool result.)", items)
	default:
		return fmt.Sprintf("\n\n(More messages wait unread in %d rooms: parley_read shows them.)", counts)
	}
}
