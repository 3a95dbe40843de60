package mcp

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/parley-mesh/parley/internal/manual"
)

// ReplyBudget bounds a reply to the agent's ask in a tool result, in bytes
// of its text both as the structured output's JSON and as the result's
// text (clipLong). A reply is given twice in a result, and a result may
// also carry PendingBudget of other texts: a client refuses a result over
// about 100 KB (Claude Code: 25,000 tokens), and a result it refuses,
// once written, has still handed out its items. A longer reply ends with
// the marker of the cut (manual.CutRest), and parley_read pages through it.
const ReplyBudget = 8 << 10

// ReadPage bounds the part of one event's text that parley_read gives,
// measured as ReplyBudget is: read by message_id, a page of the text and
// the call for the next; read in a room's order, a message longer than a
// page cut with the marker that names that call. Two pages' worth (the
// text and the structured output) leaves room for the pending items.
const ReadPage = 16 << 10

// clipLong is the longest start of s whose size, as a JSON string and as
// a text from another node in a tool result (manual.Block at TextDepth),
// is within budget bytes, and how many characters of s it leaves out (0:
// s whole). Escapes make either form longer than s, so both are measured.
// A start of one character is given whatever its size, so that a page
// always moves on.
func clipLong(s string, budget int) (string, int) {
	fits := func(t string) bool {
		if len(t) > budget {
			return false
		}
		j, _ := json.Marshal(t)
		return len(j) <= budget && len(manual.Block(t, TextDepth)) <= budget
	}
	if fits(s) {
		return s, 0
	}
	r := []rune(s)
	// The longest start that fits; budget bytes hold at most budget
	// characters.
	lo, hi := 1, min(len(r), budget)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if fits(string(r[:mid])) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return string(r[:lo]), len(r) - lo
}

// cutText is a long text of event id as a tool result shows it from
// character offset on: the start of text that fits budget (clipLong),
// and, when that leaves some out, the marker that says how much and how
// to read on (manual.CutRest; empty when text is whole), and how many
// characters were left out.
type cutText struct {
	head   string
	marker string
	left   int
}

func cutEvent(text, id string, offset, budget int) cutText {
	head, left := clipLong(text, budget)
	c := cutText{head: head, left: left}
	if left > 0 {
		c.marker = manual.CutRest(left, offset+utf8.RuneCountInString(head), id)
	}
	return c
}

// shown is the structured output's form: the start and the marker.
func (c cutText) shown() string { return c.head + c.marker }

// block is the result text's form: the start indented as a text from
// another node (manual.Block), the marker on a line of Parley's own.
func (c cutText) block() string { return manual.Block(c.head, TextDepth) + c.marker }
