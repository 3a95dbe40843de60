package manual

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/parley-mesh/parley/internal/localapi"
)

// cutLine is the marker of a cut: how many characters were left out and
// the call that reads the event on from the first of them, on a line of
// Parley's own; in a text for a terminal (a Shell set), also the command
// line that shows it whole.
var cutLine = regexp.MustCompile(`\n… \[cut: ([0-9,]+) more characters; parley_read \{"message_id":"([^"]*)","offset":([0-9]+)\} reads on(?:, or, from a shell, parley room show (\S+) --as (\S+) shows it whole)?\]`)

// diff is an ASCII text of n characters on lines of its own.
func diff(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "+ line %04d of the diff under review\n", i)
	}
	return b.String()[:n]
}

// checkCut checks that text holds text s of event id cut at depth: the
// block before the marker is the start of s, and the marker counts the
// characters of s after it.
func checkCut(t *testing.T, text, s, id string, depth int) {
	t.Helper()
	loc := cutLine.FindStringSubmatchIndex(text)
	if loc == nil {
		t.Fatalf("no marker of the cut in:\n%s", tail(text))
	}
	m := cutLine.FindStringSubmatch(text)
	if m[2] != id || (m[4] != "" && m[4] != id) {
		t.Fatalf("the marker names %q (and %q), want %q", m[2], m[4], id)
	}
	left, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	if err != nil || left <= 0 || left >= len(s) {
		t.Fatalf("the marker counts %q left out of %d", m[1], len(s))
	}
	// The call reads on from the first character left out.
	if offset, err := strconv.Atoi(m[3]); err != nil || offset != utf8.RuneCountInString(s)-left {
		t.Fatalf("the marker reads on from %s, want %d (%d characters, %d left out)", m[3], utf8.RuneCountInString(s)-left, utf8.RuneCountInString(s), left)
	}
	// The block is the lines indented by depth just before the marker.
	lines := strings.Split(text[:loc[0]], "\n")
	var block []string
	for i := len(lines) - 1; i >= 0 && strings.HasPrefix(lines[i], strings.Repeat(" ", depth)); i-- {
		block = append([]string{lines[i][depth:]}, block...)
	}
	shown := strings.Join(block, "\n")
	if want := strings.TrimRight(s[:len(s)-left], "\n"); shown != want {
		t.Fatalf("the marker counts %d left out, but the text shows %d of %d characters", left, len(shown), len(s))
	}
}

// oneLineCut is the marker of a text cut on one line (a reminder, a
// wake-up's line for an ask after its first): the quoted start, then how
// many characters were left out and the call that reads on.
var oneLineCut = regexp.MustCompile(`"((?:[^"\\]|\\.)*)…" … \[cut: ([0-9,]+) more characters; parley_read \{"message_id":"([^"]*)","offset":([0-9]+)\} reads on`)

// checkOneLineCut checks that line holds text s of event id cut on one
// line: the marker's offset is where, in s, the start shown ends (its
// white space made single spaces), and it counts the characters after it.
func checkOneLineCut(t *testing.T, line, s, id string) {
	t.Helper()
	m := oneLineCut.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no marker of a cut on one line in %q", line)
	}
	start, err := strconv.Unquote(`"` + m[1] + `"`)
	if err != nil || m[3] != id {
		t.Fatalf("the start %q (%v), the marker names %q, want %q", m[1], err, m[3], id)
	}
	left, _ := strconv.Atoi(strings.ReplaceAll(m[2], ",", ""))
	offset, _ := strconv.Atoi(m[4])
	r := []rune(s)
	if offset+left != len(r) || offset <= 0 {
		t.Fatalf("the marker reads on from %d and counts %d left out, of %d characters", offset, left, len(r))
	}
	if got := oneLine(string(r[:offset])); got != start {
		t.Fatalf("the marker reads on from %d, but the start shown, %q, is not the text up to there, %q", offset, start, got)
	}
}

// An ask too long for MaxLen ends with the marker: how many characters
// were left out, and the call that shows it whole; the notice stays within
// MaxLen, the marker included.
func TestAskCutSaysWhatWasLeftOutAndHowToReadIt(t *testing.T) {
	peer := "12D3KooW" + strings.Repeat("x", 44)
	id := strings.Repeat("b", 52)
	for _, n := range []int{1800, 5000, 64 << 10} {
		s := diff(n)
		for _, brought := range []bool{false, true} {
			it := localapi.Item{Kind: "ask", ID: id, Room: "r1", RoomName: "review", From: "alpha@" + peer, To: "beta@" + peer, Text: s,
				Brought: brought, Purpose: strings.Repeat("p", 400)}
			text := Ask(it)
			if c := utf8.RuneCountInString(text); c > MaxLen {
				t.Fatalf("%d characters (brought %v): %d, over %d", n, brought, c, MaxLen)
			}
			checkCut(t, text, s, id, 2)
			if !strings.Contains(text, `parley_reply {"message_id":"`+id+`"`) {
				t.Fatalf("the call that answers is gone:\n%s", tail(text))
			}
		}
	}
	// A text that fits is whole, with no marker.
	if text := Ask(localapi.Item{ID: id, Room: "r", Text: diff(1000)}); cutLine.MatchString(text) || strings.Contains(text, "…") {
		t.Fatalf("an ask that fits is cut:\n%s", text)
	}
	// Escapes make the block longer than the text: it still fits.
	hiding := strings.Repeat("a\u200b\u202e\n", 2000)
	if text := Ask(localapi.Item{ID: id, Room: "r", Text: hiding}); utf8.RuneCountInString(text) > MaxLen || !cutLine.MatchString(text) {
		t.Fatalf("an ask of escapes, %d characters:\n%s", utf8.RuneCountInString(text), tail(text))
	}
	// A wake-up's first ask, given less room by the items after it, is cut
	// the same way.
	var items []localapi.Item
	for i := range 20 {
		items = append(items, localapi.Item{Kind: "ask", ID: fmt.Sprintf("%s%02d", id[:50], i), Room: "r1", RoomName: "review", From: "alpha@" + peer, Text: diff(5000)})
	}
	w := Wake(items, "beta@"+peer, Shell{Agent: "beta"})
	if c := utf8.RuneCountInString(w); c > MaxLen {
		t.Fatalf("wake text of %d characters", c)
	}
	checkCut(t, w, diff(5000), items[0].ID, 2)
	// One-line recalls of a long ask say it too, on their line.
	if r := Reminder(items[0]); strings.Contains(r, "\n") {
		t.Fatalf("reminder: %q", r)
	} else {
		checkOneLineCut(t, r, items[0].Text, items[0].ID)
	}
	if !strings.Contains(w, `","offset":`) || !strings.Contains(w, `} reads on, or, from a shell, parley room show `+items[1].ID+` --as beta shows it whole]`) {
		t.Fatalf("the wake text's line for a second ask does not say it is cut:\n%s", w)
	}
	checkOneLineCut(t, w[strings.Index(w, "\n• "):], items[1].Text, items[1].ID)
}

// A text for a terminal agent (a Shell set: the wake-up pasted into a
// `parley run` pane) may reach a program without Parley's MCP tools: the
// marker of a cut gives the command line that shows the event whole,
// `parley room show ID --as AGENT`, beside parley_read, and the text keeps
// within its bound; a text with no Shell (an MCP client's, a hook's) has
// the marker as before.
func TestShellCutNamesTheCommandThatShowsItWhole(t *testing.T) {
	peer := "12D3KooW" + strings.Repeat("x", 44)
	id := strings.Repeat("b", 52)
	plain := func(left, offset int, id string) string {
		return fmt.Sprintf("\n… [cut: %s more characters; parley_read {\"message_id\":%q,\"offset\":%d} reads on]", thousands(left), id, offset)
	}
	for _, agent := range []string{"beta", strings.Repeat("a", 64)} {
		sh := Shell{Agent: agent}
		show := "parley room show " + id + " --as " + agent
		for _, n := range []int{5000, 64 << 10} {
			s := diff(n)
			for _, brought := range []bool{false, true} {
				ask := localapi.Item{Kind: "ask", ID: id, Room: "r1", RoomName: "review", From: "alpha@" + peer, To: agent + "@" + peer, Text: s,
					Brought: brought, Purpose: strings.Repeat("p", 400)}
				w := Wake([]localapi.Item{ask}, agent+"@"+peer, sh)
				if c := utf8.RuneCountInString(w); c > MaxLen {
					t.Fatalf("wake text (%s, %d characters, brought %v): %d characters, over %d", agent, n, brought, c, MaxLen)
				}
				checkCut(t, w, s, id, 2)
				if m := cutLine.FindStringSubmatch(w); m[4] != id || m[5] != agent || !strings.Contains(w, show+" shows it whole]") {
					t.Fatalf("the wake text's marker does not give %q:\n%s", show, tail(w))
				}
				// With no Shell, the same ask's texts are as they were.
				for what, text := range map[string]string{"ask": Ask(ask), "wake": Wake([]localapi.Item{ask}, agent+"@"+peer, Shell{})} {
					m := cutLine.FindStringSubmatch(text)
					if m == nil || strings.Contains(text, "parley room show") {
						t.Fatalf("%s with no Shell:\n%s", what, tail(text))
					}
					left, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
					offset, _ := strconv.Atoi(m[3])
					if !strings.Contains(text, plain(left, offset, id)) {
						t.Fatalf("%s with no Shell: the marker is not %q:\n%s", what, plain(left, offset, id), tail(text))
					}
				}
			}
		}
		// A wake-up's first ask given little room by the items after it,
		// and the one-line recalls of those, within MaxLen.
		var items []localapi.Item
		for i := range 20 {
			items = append(items, localapi.Item{Kind: "ask", ID: fmt.Sprintf("%s%02d", id[:50], i), Room: "r1", RoomName: "review", From: "alpha@" + peer, Text: diff(5000)})
		}
		w := Wake(items, agent+"@"+peer, sh)
		if c := utf8.RuneCountInString(w); c > MaxLen {
			t.Fatalf("wake text of %d asks: %d characters", len(items), c)
		}
		checkCut(t, w, diff(5000), items[0].ID, 2)
		// The line of a second ask, when it fits beside the first (a short
		// agent name), gives it too.
		if second := strings.Contains(w, "(ask "+items[1].ID+")"); (second || agent == "beta") &&
			!strings.Contains(w, "parley room show "+items[1].ID+" --as "+agent+" shows it whole] (ask "+items[1].ID+").") {
			t.Fatalf("the line of a second ask does not give parley room show:\n%s", w)
		}
		// A notice for a terminal: a message's and a reply's markers too,
		// within the notice's bound.
		msg := localapi.Item{Kind: "message", ID: strings.Repeat("m", 52), Room: "r1", RoomName: "review", From: "alpha@" + peer, Text: diff(3000)}
		reply := localapi.Item{Kind: "reply", ID: strings.Repeat("p", 52), ReplyTo: "q1", Room: "r1", RoomName: "review", From: "alpha@" + peer, Text: diff(4000)}
		for _, limit := range []int{100000, 2500} {
			text, shown := NoticeShown(localapi.Pending{Items: []localapi.Item{items[0], msg, reply}}, agent+"@"+peer, sh, limit)
			if c := utf8.RuneCountInString(text); c > limit || len(shown) == 0 {
				t.Fatalf("notice within %d: %d characters, shows %v", limit, c, shown)
			}
			for _, it := range []localapi.Item{items[0], msg, reply} {
				if !slices.Contains(shown, it.ID) {
					continue
				}
				i := 0 // the ask comes first, its ID in its marker only
				if it.Kind != "ask" {
					i = strings.Index(text, it.ID) // the item's first line
				}
				checkCut(t, text[i:], it.Text, it.ID, 2)
				if !strings.Contains(text, "parley room show "+it.ID+" --as "+agent+" shows it whole]") {
					t.Fatalf("the notice's marker of %s does not give parley room show:\n%s", it.ID, text)
				}
			}
		}
		// Clip keeps within its bound however small, the longer marker
		// included.
		for _, n := range []int{150, 300, 500, 1499, 2999} {
			got := sh.Clip(diff(3000), 2, n, id)
			if c := utf8.RuneCountInString(got); c > n {
				t.Fatalf("Clip to %d: %d characters", n, c)
			}
			if n >= sh.minClip(id) {
				checkCut(t, "\n"+got, diff(3000), id, 2)
			}
		}
	}
}

// A hook's notice cuts a long message or reply with the marker, and keeps
// within its bound.
func TestNoticeCutSaysWhatWasLeftOutAndHowToReadIt(t *testing.T) {
	peer := "12D3KooW" + strings.Repeat("x", 44)
	msg := localapi.Item{Kind: "message", ID: strings.Repeat("m", 52), Room: "r1", RoomName: "review", From: "alpha@" + peer, Text: diff(3000)}
	reply := localapi.Item{Kind: "reply", ID: strings.Repeat("p", 52), ReplyTo: "q1", Room: "r1", RoomName: "review", From: "alpha@" + peer, Text: diff(4000)}
	short := localapi.Item{Kind: "message", ID: strings.Repeat("s", 52), Room: "r1", RoomName: "review", From: "alpha@" + peer, Text: "short"}
	for _, limit := range []int{100000, 10000, 2500, 1000} {
		text, shown := NoticeShown(localapi.Pending{Items: []localapi.Item{msg, reply, short}}, "beta@"+peer, Shell{}, limit)
		if c := utf8.RuneCountInString(text); c > limit {
			t.Fatalf("limit %d: %d characters", limit, c)
		}
		for _, it := range []localapi.Item{msg, reply} {
			i := strings.Index(text, it.ID)
			shownIt := false
			for _, id := range shown {
				shownIt = shownIt || id == it.ID
			}
			if !shownIt {
				continue
			}
			checkCut(t, text[i:], it.Text, it.ID, 2)
		}
		if limit == 100000 && len(shown) != 3 {
			t.Fatalf("shows %v of three", shown)
		}
	}
	if text := Notice(localapi.Pending{Items: []localapi.Item{short}}, "", Shell{}, 10000); cutLine.MatchString(text) {
		t.Fatalf("a short message cut:\n%s", text)
	}
}

// Clip keeps within its bound however small, and counts what it left out.
func TestClipKeepsWithinItsBound(t *testing.T) {
	s := diff(3000)
	for _, n := range []int{150, 200, 500, 1499, 2999, 3100} {
		got := Clip(s, 2, n, "ID")
		if c := utf8.RuneCountInString(got); c > n {
			t.Fatalf("Clip to %d: %d characters", n, c)
		}
		if n >= 200 && n < 3000 {
			checkCut(t, "\n"+got, s, "ID", 2)
		}
	}
	if got := Clip("x\n", 2, 10, "ID"); got != "  x" {
		t.Fatalf("Clip of a short text: %q", got)
	}
	if got := thousands(3214); got != "3,214" {
		t.Fatalf("thousands(3214) = %q", got)
	}
	if got := thousands(1234567); got != "1,234,567" {
		t.Fatalf("thousands(1234567) = %q", got)
	}
}
