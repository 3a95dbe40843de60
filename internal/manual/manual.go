package manual

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/termtext"
)

// MaxLen is the most characters a text of this package has.
const MaxLen = 2000

// Invitation is the manual that comes with an invitation item (kind
// "invitation"): who invited the agent, the room's name and purpose, who
// else is in it, and the calls to read, reply and leave.
func Invitation(it localapi.Item, you string) string {
	var b strings.Builder
	room := quote(it.RoomName, 80)
	fmt.Fprintf(&b, "%s invited you (%s) into the Parley room %s (room_id %s%s).\n", cut(it.From, 120), cut(you, 120), room, it.Room, localapi.CreatedBy(it.RoomCreator))
	if p := strings.TrimSpace(it.Purpose); p != "" {
		fmt.Fprintf(&b, "Its purpose: %s\n", cut(line(p), 300))
	}
	tail := fmt.Sprintf(`Parley links agent sessions and their people across machines; a room is a conversation that every member sees in the same order, and it lasts.
parley_read {"room":%[1]q} shows what was said there; parley_read {"room":%[1]q,"last":20} shows the last 20 events, read or not; parley_read {"message_id":"ID"} shows one event whole (a long one in parts, "offset" reads on).
parley_say {"room":%[1]q,"text":"..."} writes to every member; parley_reply {"message_id":"ID","text":"..."} answers one message.
parley_ask {"room":%[1]q,"text":"..."} asks every member and waits for the first answer; "to":"NAME@PEER_ID" asks one member.
An ask addressed to you, or to a room you are in, stays at the top of every Parley tool result until someone answers it.
parley_leave {"room":%[1]q} takes you out of the room.`, it.Room)
	members(&b, it.Members, you, MaxLen-utf8.RuneCountInString(b.String())-utf8.RuneCountInString(tail)-1)
	b.WriteString(tail)
	return b.String()
}

// members writes the member list within budget characters.
func members(b *strings.Builder, ms []string, you string, budget int) {
	var others []string
	for _, m := range ms {
		if m != you {
			others = append(others, m)
		}
	}
	if len(others) == 0 {
		line := "No one else is in it yet.\n"
		if utf8.RuneCountInString(line) <= budget {
			b.WriteString(line)
		}
		return
	}
	line := "In it: "
	for i, m := range others {
		next := cut(m, 120)
		if i > 0 {
			next = ", " + next
		}
		more := fmt.Sprintf(" and %d more (parley_who lists them).\n", len(others)-i)
		if utf8.RuneCountInString(line+next)+utf8.RuneCountInString(more) > budget {
			line += more
			b.WriteString(line)
			return
		}
		line += next
	}
	b.WriteString(line + ".\n")
}

// Ask is the notice of an ask the agent owes (kind "ask"): who asks,
// where, the question, and the calls that answer or dismiss it. A question
// too long for MaxLen is cut, and the notice says how much was left out
// and the call that reads on from there (Clip).
func Ask(it localapi.Item) string { return askWithin(it, MaxLen, Shell{}) }

// askWithin is Ask within limit characters; with sh set, the marker of a
// cut also gives the command line that shows the ask whole (Shell.Cut).
func askWithin(it localapi.Item, limit int, sh Shell) string {
	whom := "asks you"
	if it.To == "" {
		whom = "asks everyone in the room, you included"
	}
	head := fmt.Sprintf("%s %s, in room %s (room_id %s%s):\n", cut(it.From, 120), whom, quote(it.RoomName, 80), it.Room, localapi.CreatedBy(it.RoomCreator))
	if it.Brought {
		// The ask brought the agent into the room: what its invitation
		// would have said, in short.
		head = fmt.Sprintf("%s asks you, in room %s (room_id %s%s), which it brought you into for this ask", cut(it.From, 120), quote(it.RoomName, 80), it.Room, localapi.CreatedBy(it.RoomCreator))
		if p := strings.TrimSpace(it.Purpose); p != "" {
			head += "; its purpose: " + cut(line(p), 300)
		}
		head += fmt.Sprintf(" (parley_read {\"room\":%q} shows what was said there, parley_leave {\"room\":%q} takes you out):\n", it.Room, it.Room)
	}
	foot := fmt.Sprintf("\nparley_reply {\"message_id\":%q,\"text\":\"...\"} answers it; the asker may be waiting for it. "+
		"parley_dismiss {\"ask_id\":%q} drops it unanswered.", it.ID, it.ID)
	budget := limit - utf8.RuneCountInString(head) - utf8.RuneCountInString(foot)
	if budget < sh.minClip(it.ID) {
		// Too small for the text and what shows the rest: the whole
		// notice cut (Wake's first item, when others take its room).
		return cut(head+Block(it.Text, 2)+foot, limit)
	}
	return head + sh.Clip(it.Text, 2, budget, it.ID) + foot
}

// minClip is the fewest characters Clip is given: room for the marker of
// a cut and a little of the text.
const minClip = 200

// minClip is the fewest characters sh's Clip is given for event id:
// minClip, and the room the command line of sh's marker takes.
func (sh Shell) minClip(id string) int { return minClip + sh.cutExtra(id) }

// cutExtra is how many characters longer sh's marker of a cut of event id
// is than Cut's: the command line's (0 with no Shell).
func (sh Shell) cutExtra(id string) int {
	const most = 1 << 30 // the longest count and offset
	return utf8.RuneCountInString(sh.Cut(most, most, id)) - utf8.RuneCountInString(Cut(most, most, id))
}

// Clip is a text from another node as Block writes it, within n
// characters: whole when it fits, else as much of its start as fits and,
// on a line of Parley's own (not indented), the marker of the cut: how
// many characters of the text were left out and the call that reads on
// from the first of them (Cut). id is the text's event.
func Clip(s string, depth, n int, id string) string { return Shell{}.Clip(s, depth, n, id) }

// Clip is Clip whose marker, with sh set, also gives the command line that
// shows the event whole (Shell.Cut).
func (sh Shell) Clip(s string, depth, n int, id string) string {
	if whole := Block(s, depth); utf8.RuneCountInString(whole) <= n {
		return whole
	}
	r := []rune(s)
	// The marker for the most left out, and the furthest offset, is the
	// longest it can be.
	room := n - utf8.RuneCountInString(sh.Cut(len(r), len(r), id))
	fits := func(k int) bool { return utf8.RuneCountInString(Block(string(r[:k]), depth)) <= room }
	// The longest start whose block fits (escapes and line breaks make a
	// block longer than its text).
	lo, hi := 0, len(r)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo == 0 || !fits(lo) {
		// No room for the text: the marker alone, if it fits.
		if m := sh.Cut(len(r), 0, id)[1:]; utf8.RuneCountInString(m) <= n {
			return m
		}
		return cut(Block(s, depth), n)
	}
	return Block(string(r[:lo]), depth) + sh.Cut(len(r)-lo, lo, id)
}

// Cut is the line that ends a text from another node cut for an agent:
// how many characters were left out (left), and the call that reads the
// event (id) on from the character at offset, the first left out, a part
// at a time (parley_read pages a long text: each part's next gives the
// call for the one after). It starts with a line break.
func Cut(left, offset int, id string) string { return Shell{}.Cut(left, offset, id) }

// Cut is Cut for an agent that may have no Parley tools: with sh set, the
// marker also gives the command line that shows the event whole, `parley
// room show ID --as AGENT`.
func (sh Shell) Cut(left, offset int, id string) string {
	if sh.Agent == "" {
		return CutRest(left, offset, id)
	}
	return fmt.Sprintf("\n… [cut: %s more characters; parley_read {\"message_id\":%q,\"offset\":%d} reads on, or, from a shell, parley room show %s --as %s shows it whole]",
		thousands(left), id, offset, id, sh.Agent)
}

// CutRest is the line that ends a long text shown in part (a reply to the
// agent's ask, a page of parley_read): how many characters were left out
// (left) and the call that reads on from the character at offset, the
// first left out. It starts with a line break. The text comes whole over
// as many such calls as it takes: each shows a part that a client takes.
func CutRest(left, offset int, id string) string {
	return fmt.Sprintf("\n… [cut: %s more characters; parley_read {\"message_id\":%q,\"offset\":%d} reads on]", thousands(left), id, offset)
}

// thousands writes n with a comma between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Reminder is the one line that recalls an ask the agent still owes.
func Reminder(it localapi.Item) string { return reminder(it, Shell{}) }

// reminder is Reminder whose marker of a cut, with sh set, also gives the
// command line that shows the ask whole (Shell.Cut).
func reminder(it localapi.Item, sh Shell) string {
	return fmt.Sprintf("still owed: %s asked in %s%s: %s → parley_reply {\"message_id\":%q,\"text\":\"...\"}",
		cut(it.From, 80), quote(it.RoomName, 40), localapi.RoomAside(it.Room, it.RoomCreator), snippet(it, 80, sh), it.ID)
}

// snippet is an item's text on one line, quoted, within n characters; one
// cut ends, after the quote, with how much of the text was left out and
// the call that reads on from the first character left out (with sh set,
// and the command line that shows it whole; Shell.Cut, on the same line).
func snippet(it localapi.Item, n int, sh Shell) string {
	one := oneLine(it.Text)
	q := fmt.Sprintf("%q", cut(one, n))
	if utf8.RuneCountInString(one)-(n-1) > 1 {
		offset := oneLineOffset(it.Text, n-1)
		q += " " + strings.TrimPrefix(sh.Cut(utf8.RuneCountInString(it.Text)-offset, offset, it.ID), "\n")
	}
	return q
}

// oneLineOffset is how many characters of s make the first k characters of
// oneLine(s): where, in s, what a snippet shows of it ends.
func oneLineOffset(s string, k int) int {
	out, space, i := 0, false, 0
	for _, c := range s {
		if unicode.IsSpace(c) {
			space = out > 0
			i++
			continue
		}
		if space {
			space = false
			if out++; out == k {
				return i
			}
		}
		i++
		if out++; out == k {
			return i
		}
	}
	return i
}

func quote(s string, n int) string {
	if s == "" {
		return "(unnamed)"
	}
	return fmt.Sprintf("%q", cut(s, n))
}

// cut shortens s to at most n characters, marking the cut.
func cut(s string, n int) string {
	if n < 1 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// line is a text from another node on one of Parley's lines (a room's
// purpose): its white space, line breaks included, as single spaces, and
// whatever could drive a terminal, reorder the line or hide part of it
// escaped (termtext.Line, escapeFormat).
func line(s string) string { return escapeFormat(termtext.Line(oneLine(s))) }

// Block is a text from another node (a message, an ask, a reply) on lines
// of its own under one of Parley's: every line indented by depth spaces,
// and whatever else could end a line, drive a terminal, reorder a line or
// hide part of it escaped (termtext.Lines, escapeFormat). Parley's own
// lines start less deep, so no line of the text can pass for one of them
// (a marker such as "Someone is waiting on you", an item, the call that
// answers).
func Block(s string, depth int) string { return strings.Repeat(" ", depth) + Inline(s, depth) }

// Inline is a text from another node that follows Parley's own words on
// their line ("from X: ..."): as Block, but its first line is not indented.
func Inline(s string, depth int) string {
	t := escapeFormat(termtext.Lines(strings.TrimRight(s, "\n")))
	if depth == 2 {
		return t
	}
	// termtext.Lines writes every line break as a newline and two spaces.
	return strings.ReplaceAll(t, "\n  ", "\n"+strings.Repeat(" ", depth))
}

// escapeFormat escapes, as \uXXXX, the format characters termtext leaves
// as they are (it escapes the bidi controls among them, and the line and
// paragraph separators): zero-width spaces and joiners, the byte order
// mark, soft hyphens, tag characters. A terminal shows nothing for them,
// so they could hide part of a text from the person who watches an
// agent's pane.
//
// A zero-width joiner between two emoji passes: it joins them into one
// (a family, a profession, a flag with a sign), hides nothing, and
// escaped it broke the emoji apart.
func escapeFormat(s string) string {
	if !strings.ContainsFunc(s, hidden) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case !hidden(r), termtext.JoinsEmoji(s, i):
			b.WriteRune(r)
		case r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func hidden(r rune) bool { return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) }
