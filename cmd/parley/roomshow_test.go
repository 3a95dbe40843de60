package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/internal/localapi"
)

// `room show ID` prints one event whole, by its ID or its first 8
// characters, as the agent --as names (a room of its own only) or as human
// (any room of the node); a wake-up pasted into a terminal agent's pane
// names it for a text it cut. Nothing is marked read.
func TestCLIRoomShowShowsOneEventWhole(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback, "--handle", "alice")
	self := peerID(t, home)
	for _, a := range []string{"coder", "writer"} {
		if _, errs, code := run(t, "--home", home, "agent", "register", a); code != 0 {
			t.Fatalf("agent register %s: %s", a, errs)
		}
	}
	var room struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &room, "--home", home, "room", "create", "design", "--member", "coder")
	say := func(args ...string) string {
		t.Helper()
		out, errs, code := run(t, append([]string{"--home", home, "room", "say"}, args...)...)
		if code != 0 {
			t.Fatalf("room say %q: exit %d: %s", args[:1], code, errs)
		}
		return strings.TrimSpace(out)
	}
	show := func(args ...string) (string, string, int) {
		t.Helper()
		return run(t, append([]string{"--home", home, "room", "show"}, args...)...)
	}
	// A text of 5,000 characters, over what a wake-up or a notice gives.
	var b strings.Builder
	for i := 0; b.Len() < 5000; i++ {
		fmt.Fprintf(&b, "+ line %04d of the diff under review\n", i)
	}
	long := b.String()[:5000]
	id := say("design", long)

	// Whole, by its ID and by its first 8 characters.
	whole, errs, code := show(id)
	if code != 0 {
		t.Fatalf("room show: exit %d: %s", code, errs)
	}
	for _, want := range []string{"event " + id + "\n", `room  "design" (room_id ` + room.RoomID + ")\n", "from  human@alice\n",
		"kind  message\n", "text  (5000 characters)\n"} {
		if !strings.Contains(whole, want) {
			t.Fatalf("room show lacks %q:\n%.600s", want, whole)
		}
	}
	_, body, _ := strings.Cut(whole, "text  (5000 characters)\n")
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		if !strings.HasPrefix(l, "  ") {
			t.Fatalf("a line of the text not indented: %q", l)
		}
		lines = append(lines, strings.TrimPrefix(l, "  "))
	}
	if got := strings.Join(lines, "\n"); got != strings.TrimRight(long, "\n") {
		t.Fatalf("room show gave %d characters of the text, not the 5000 whole", len(got))
	}
	if short, errs, code := show(id[:8]); code != 0 || short != whole {
		t.Fatalf("room show by 8 characters: exit %d %s\n%.300s", code, errs, short)
	}

	// --json: the event as the local API gives it.
	var it localapi.Item
	runJSON(t, &it, "--home", home, "room", "show", id[:10])
	if it.ID != id || it.Text != long || it.Room != room.RoomID || it.RoomName != "design" || it.From != "human@"+self || it.Kind != "message" {
		t.Fatalf("room show --json: %+v", it)
	}

	// A reply says what it answers; controls in a text are escaped.
	reply := say("design", "ok \x1b]0;owned\x07 \x1b[2J done", "--reply-to", id[:8], "--as", "coder")
	out, errs, code := show(reply)
	if code != 0 || !strings.Contains(out, "kind  reply to "+id+"\n") || !strings.Contains(out, "from  coder@alice\n") ||
		strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `ok \x1b]0;owned\x07 \x1b[2J done`) {
		t.Fatalf("room show of a reply: exit %d %s\n%q", code, errs, out)
	}

	// An agent in the room reads it, and it stays unread.
	if out, errs, code := show(id, "--as", "coder"); code != 0 || out != whole {
		t.Fatalf("room show --as coder, in the room: exit %d %s\n%.300s", code, errs, out)
	}
	// (In a room of short messages: the long one keeps those after it
	// from the inbox's list, for a read.)
	runJSON(t, &struct{}{}, "--home", home, "room", "create", "notes", "--member", "coder")
	note := say("notes", "a short note")
	if _, errs, code := show(note, "--as", "coder"); code != 0 {
		t.Fatalf("room show --as coder: exit %d %s", code, errs)
	}
	var inbox localapi.Pending
	runJSON(t, &inbox, "--home", home, "inbox", "--as", "coder")
	unread := false
	for _, it := range inbox.Items {
		unread = unread || it.ID == note
	}
	if !unread {
		t.Fatalf("a message shown by room show is no longer unread: %+v", inbox.Items)
	}

	// To an agent not in the room the event is as one that does not
	// exist, exit 1; by its first 8 characters too, its ID not given.
	out, errs, code = show(id, "--as", "writer")
	if code != 1 || out != "" || !strings.Contains(errs, "no event "+id+" in the rooms you (writer) were let into") {
		t.Fatalf("room show --as writer, not in the room: exit %d %q %q", code, out, errs)
	}
	out, errs, code = show(id[:8], "--as", "writer")
	if code != 1 || out != "" || !strings.Contains(errs, "no event of the rooms you (writer) were let into begins with "+id[:8]) || strings.Contains(errs, id) {
		t.Fatalf("room show --as writer of 8 characters, not in the room: exit %d %q %q", code, out, errs)
	}
	var jerr struct {
		Error string `json:"error"`
	}
	out, errs, code = show(id, "--as", "writer", "--json")
	if code != 1 || out != "" || json.Unmarshal([]byte(errs), &jerr) != nil || !strings.Contains(jerr.Error, "in the rooms you (writer) were let into") {
		t.Fatalf("room show --as writer --json: exit %d %q %q", code, out, errs)
	}

	// Unknown IDs, whole or a start, and what is no ID at all.
	for arg, want := range map[string]string{
		strings.Repeat("a", 52): "no event " + strings.Repeat("a", 52) + " in the rooms of this node",
		"aaaaaaaa":              "no event of the rooms of this node begins with aaaaaaaa",
		"abc":                   `"abc" is not an event ID`,
	} {
		out, errs, code := show(arg)
		if code != 1 || out != "" || !strings.Contains(errs, want) || strings.Contains(errs, "parley_") {
			t.Fatalf("room show %s: exit %d %q %q; want %q", arg, code, out, errs, want)
		}
	}

	// human, the node's user, reads a room it is not in (one an agent
	// made); the agent does too.
	runJSON(t, &struct{}{}, "--home", home, "room", "create", "side", "--as", "writer")
	side := say("side", "in writer's room", "--as", "writer")
	for _, as := range []string{"human", "writer"} {
		if out, errs, code := show(side, "--as", as); code != 0 || !strings.Contains(out, "from  writer@alice\n") || !strings.Contains(out, "  in writer's room\n") {
			t.Fatalf("room show --as %s of writer's room: exit %d %s\n%s", as, code, errs, out)
		}
	}
	if _, errs, code := show(side, "--as", "coder"); code != 1 || !strings.Contains(errs, "no event "+side+" in the rooms you (coder) were let into") {
		t.Fatalf("room show --as coder of writer's room: exit %d %s", code, errs)
	}
}
