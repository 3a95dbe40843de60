package inbox

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// fold is a room name as it is compared for look-alikes, as the dashboard
// compares them (internal/ui/assets/app.js, fold): NFKC, without format
// and other default-ignorable characters (U+200B, U+2060, U+FEFF, bidi
// controls, variation selectors…), case-folded, whitespace collapsed.
// Letters of other scripts that look alike are not folded.
func fold(s string) string {
	strip := func(t string) string {
		return strings.Map(func(r rune) rune {
			if unicode.In(r, unicode.Cf, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector) {
				return -1
			}
			return r
		}, norm.NFKC.String(t))
	}
	s = strings.ToLower(strings.ToUpper(strip(strip(s))))
	return strings.Join(strings.Fields(s), " ")
}
