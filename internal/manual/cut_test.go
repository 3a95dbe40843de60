package manual

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/parley-mesh/parley/internal/localapi"
)

// cutLine is the marker of a cut: how many characters were left out and
// the call that shows the event whole, on a line of Parley's own.
var cutLine = regexp.MustCompile(`\n… \[cut: ([0-9,]+) more characters; parley_read \{"message_id":"([^"]*)"\} shows it whole\]`)

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
	if m[2] != id {
		t.Fatalf("the marker names %q, want %q", m[2], id)
	}
	left, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	if err != nil || left <= 0 || left >= len(s) {
		t.Fatalf("the marker counts %q left out of %d", m[1], len(s))
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
	if r := Reminder(items[0]); !strings.Contains(r, `more characters; parley_read {"message_id":"`+items[0].ID+`"} shows it whole]`) || strings.Contains(r, "\n") {
		t.Fatalf("reminder: %q", r)
	}
	if !strings.Contains(w, `more characters; parley_read {"message_id":"`+items[1].ID+`"} shows it whole]`) {
		t.Fatalf("the wake text's line for a second ask does not say it is cut:\n%s", w)
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
