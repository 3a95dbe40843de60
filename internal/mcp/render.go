package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/manual"
)

// Marker is the line that tells a model someone waits on it.
const Marker = "⚠️ SOMEONE IS BLOCKED ON YOU — answer this first:"

// TextDepth is how deep a text from another node (a message, an ask, a
// reply, on lines of its own or the lines after its first) is indented in
// a tool result: deeper than any line Parley writes itself (an item starts
// at the left edge, the call that answers it two spaces in), so none of its
// lines can pass for Parley's.
const TextDepth = 4

// convert turns the node's pending items into the tools' items, each with
// the call that answers or acts on it (the wording lives here, not in the
// node).
func (s *Server) convert(agent string, p localapi.Pending) ([]Pending, []RoomCount) {
	you := agent
	s.mu.Lock()
	if s.agent.Name == agent && s.agent.Address != "" {
		you = s.agent.Address
	} else {
		// A thread's agent: its full address too, so that the
		// invitation's member list leaves it out.
		for _, ta := range s.threads {
			if ta.info.Name == agent && ta.info.Address != "" {
				you = ta.info.Address
				break
			}
		}
	}
	s.mu.Unlock()
	items := make([]Pending, 0, len(p.Items))
	for _, it := range p.Items {
		out := Pending{Kind: it.Kind, ID: it.ID, Room: it.Room, RoomName: it.RoomName, RoomCreator: it.RoomCreator, From: it.From, Text: it.Text,
			ReplyTo: it.ReplyTo, To: it.To, Time: msTime(it.Time), Purpose: it.Purpose, Members: it.Members}
		switch it.Kind {
		case "ask":
			out.Answer = fmt.Sprintf(`parley_reply {"message_id":%q,"text":"<your answer>"}`, it.ID)
			out.Text = manual.Ask(it)
		case "reminder":
			out.Answer = fmt.Sprintf(`parley_reply {"message_id":%q,"text":"<your answer>"} or parley_dismiss {"ask_id":%q}`, it.ID, it.ID)
			out.Text = manual.Reminder(it)
		case "invitation":
			out.Answer = fmt.Sprintf(`parley_read {"room":%q}`, it.Room)
			out.Text = manual.Invitation(it, you)
		case "reply":
			out.Answer = fmt.Sprintf(`parley_reply {"message_id":%q,"text":"..."}`, it.ID)
			// A long reply is cut as an owed ask is, with the call that
			// reads on: given whole, twice, it made a result no client
			// takes, and the reply was gone with it.
			out.cut = cutEvent(it.Text, it.ID, 0, ReplyBudget)
			out.Text, out.TextLeftOut = out.cut.shown(), out.cut.left
		case "removed":
			out.Text = fmt.Sprintf("%s removed you from room %q%s: you no longer post or read there, and the asks you owed there are dropped; a member can invite you back", it.From, it.RoomName, localapi.RoomAside(it.Room, it.RoomCreator))
		case "claim_free", "claim_lost":
			paths, _ := json.Marshal(it.Paths)
			out.Answer = fmt.Sprintf(`parley_claim {"paths":%s,"note":"<why>"}`, paths)
		case "claim_contested":
			out.Answer = `parley_board {"history":true}`
			if len(it.Paths) > 0 {
				path, _ := json.Marshal(it.Paths[0])
				out.Answer = fmt.Sprintf(`parley_board {"history":true,"path":%s}`, path)
			}
		case "claim_expiring":
			paths, _ := json.Marshal(it.Paths)
			out.Answer = fmt.Sprintf(`parley_claim {"paths":%s,"note":"<why>"} to renew, or parley_release {"paths":%s}`, paths, paths)
		default:
			out.Answer = fmt.Sprintf(`parley_reply {"message_id":%q,"text":"..."} or parley_say {"room":%q,"text":"..."}`, it.ID, it.Room)
		}
		if len(out.Members) > roomMembers {
			// The text names as many as fit; a room of hundreds would
			// make one item a result no client takes: an invitation, or
			// the ask that brought the agent in and stands for it (it
			// carries the room's members too; before, all of them).
			out.Members, out.MembersLeftOut = out.Members[:roomMembers], len(out.Members)-roomMembers
		}
		items = append(items, out)
	}
	more := make([]RoomCount, 0, len(p.MoreUnread))
	for _, m := range p.MoreUnread {
		more = append(more, RoomCount(m))
	}
	return items, more
}

// renderPending writes the pending items after a tool's own text: asks
// owed first, under the marker; then reminders one line each; then
// invitations, replies and messages. owedLeft counts the asks owed that
// the items leave out (Envelope.OwedLeftOut): one line says so.
func renderPending(items []Pending, more []RoomCount, owedLeft int) string {
	if len(items) == 0 && len(more) == 0 && owedLeft == 0 {
		return ""
	}
	var b strings.Builder
	section := func(title, kind string, each func(Pending)) {
		first := true
		for _, it := range items {
			if it.Kind != kind {
				continue
			}
			if first {
				b.WriteString("\n\n" + title)
				first = false
			}
			each(it)
		}
	}
	section(Marker, "ask", func(it Pending) {
		fmt.Fprintf(&b, "\n• [ask %s] %s\n  → %s", it.ID, indent(it.Text), it.Answer)
	})
	section("⏳ Asks you still owe:", "reminder", func(it Pending) {
		fmt.Fprintf(&b, "\n• %s", it.Text)
	})
	if owedLeft > 0 {
		if !slices.ContainsFunc(items, func(it Pending) bool { return it.Kind == "reminder" }) {
			b.WriteString("\n\n⏳ Asks you still owe:")
		}
		fmt.Fprintf(&b, "\n• … and %d more ask(s) you owe, left out to keep this small: shown as you answer or dismiss these (owed_left_out).", owedLeft)
	}
	section("📨 Invitations:", "invitation", func(it Pending) {
		fmt.Fprintf(&b, "\n• %s", indent(it.Text))
	})
	section("🚪 Removed from rooms:", "removed", func(it Pending) {
		fmt.Fprintf(&b, "\n• %s", it.Text)
	})
	section("↩️ Replies to your asks:", "reply", func(it Pending) {
		fmt.Fprintf(&b, "\n• [reply %s to your ask %s] from %s:\n%s", it.ID, it.ReplyTo, it.From, it.cut.block())
	})
	for _, k := range []string{"claim_lost", "claim_contested", "claim_free", "claim_expiring"} {
		section("📌 The board:", k, func(it Pending) {
			fmt.Fprintf(&b, "\n• %s\n  → %s", it.Text, it.Answer)
		})
	}
	section("💬 Unread messages:", "message", func(it Pending) {
		fmt.Fprintf(&b, "\n• [%s %s] room %q%s, from %s%s:\n%s\n  → %s", it.Kind, it.ID, it.RoomName, localapi.RoomAside(it.Room, it.RoomCreator), it.From, labelled(" to ", it.To), manual.Block(it.Text, TextDepth), it.Answer)
	})
	for _, m := range more {
		fmt.Fprintf(&b, "\n(+%d more unread in room %q%s: parley_read {\"room\":%q})", m.Count, m.RoomName, localapi.CreatedBy(m.RoomCreator), m.Room)
	}
	return b.String()
}

// notice says in a few lines what waits among the pending items, for the
// structured output: a client may give its model only the structured
// output (Claude Code does when there is one), which has no header lines
// of its own.
func notice(items []Pending, more []RoomCount, owedLeft int) string {
	count := map[string]int{}
	for _, it := range items {
		count[it.Kind]++
	}
	var lines []string
	if n := count["ask"]; n > 0 {
		lines = append(lines, fmt.Sprintf("%s %d ask(s) in pending (kind ask) wait for your answer: answer each with its answer call.", Marker, n))
	}
	if n := count["reminder"]; n > 0 {
		lines = append(lines, fmt.Sprintf("⏳ You still owe %d ask(s) (pending, kind reminder).", n))
	}
	if owedLeft > 0 {
		lines = append(lines, fmt.Sprintf("⏳ … and %d more ask(s) you owe, left out to keep this small: shown as you answer or dismiss those in pending (owed_left_out).", owedLeft))
	}
	if n := count["invitation"]; n > 0 {
		lines = append(lines, fmt.Sprintf("📨 %d invitation(s) (pending, kind invitation): each text holds how to take part.", n))
	}
	if n := count["reply"]; n > 0 {
		lines = append(lines, fmt.Sprintf("↩️ %d reply(ies) to your asks (pending, kind reply).", n))
	}
	unread := 0
	for _, m := range more {
		unread += m.Count
	}
	if n := count["message"]; n > 0 || unread > 0 {
		lines = append(lines, fmt.Sprintf("💬 %d unread message(s) in pending, %d more to read with parley_read (more_unread).", n, unread))
	}
	return strings.Join(lines, "\n")
}

// indent nests one of Parley's own texts of several lines (an ask's notice,
// an invitation's manual) under its bullet; the texts from other nodes in
// them are indented further (manual.Block).
func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }

// bookTTL is how long the names of nodes are used before they are asked
// for again (at once when a text holds a node not in them).
const bookTTL = 30 * time.Second

// named writes the agent addresses of a tool's text as people read them,
// NAME@HANDLE (NAME@HANDLE~SUFFIX when two nodes share a handle); the node
// takes either form back. A node whose handle is not known keeps its peer
// ID. The structured output keeps peer IDs.
func (s *Server) named(ctx context.Context, text string) string {
	ps := localapi.Peers(text)
	if len(ps) == 0 {
		return text
	}
	s.namesMu.Lock()
	defer s.namesMu.Unlock()
	stale := time.Since(s.bookAt) > bookTTL
	for _, p := range ps {
		if _, ok := s.book[p]; !ok && time.Since(s.bookAt) > 2*time.Second {
			stale = true
		}
	}
	if stale {
		es, err := s.api.Names(ctx)
		if err != nil {
			s.log.Debug("names of nodes", "err", err)
		} else {
			s.book, s.bookAt = localapi.NewNameBook(es), time.Now()
		}
	}
	return s.book.Text(text)
}
