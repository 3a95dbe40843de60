package mcp

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/parley-mesh/parley/internal/manual"
)

// TestClipLongMeasuresTheEscapedForms: a text of characters that JSON or
// the result's text escapes (control characters, <, >, &, zero-width
// spaces), of four-byte characters, or of line breaks (each indented in
// the text) is cut so that both forms stay within the budget, and the
// parts clipLong gives, taken one after the other, are the text whole.
func TestClipLongMeasuresTheEscapedForms(t *testing.T) {
	const budget = 4 << 10
	for name, s := range map[string]string{
		"control":   strings.Repeat("\x01\x02<&>", 5000),
		"zerowidth": strings.Repeat("a\u200b", 8000),
		"emoji":     strings.Repeat("🦜", 9000),
		"lines":     strings.Repeat("\n", 9000),
		"ascii":     strings.Repeat("x", 9000),
	} {
		var whole strings.Builder
		rest, parts := s, 0
		for rest != "" {
			head, left := clipLong(rest, budget)
			parts++
			j, _ := json.Marshal(head)
			if len(j) > budget || len(manual.Block(head, TextDepth)) > budget || head == "" {
				t.Fatalf("%s: a part of %d characters is %d bytes as JSON, %d as text", name, utf8.RuneCountInString(head), len(j), len(manual.Block(head, TextDepth)))
			}
			if left != utf8.RuneCountInString(rest)-utf8.RuneCountInString(head) {
				t.Fatalf("%s: %d left out, want %d", name, left, utf8.RuneCountInString(rest)-utf8.RuneCountInString(head))
			}
			whole.WriteString(head)
			rest = rest[len(head):]
		}
		if whole.String() != s || parts < 2 {
			t.Fatalf("%s: %d parts do not make the text whole", name, parts)
		}
	}
}
