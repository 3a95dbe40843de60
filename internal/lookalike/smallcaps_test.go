package lookalike_test

import (
	"testing"

	"github.com/parley-mesh/parley/internal/lookalike"
)

// TestSmallCapitalsReadAsTheirLetters: a handle in small capitals
// ("ʙᴏʙ", "ᴀʟɪᴄᴇ") reads as the same word in capitals, which reads as the
// handle itself. Before, only the small capitals the confusables data maps
// (ᴏ, ᴄ, ᴠ, ᴡ, ᴢ, ꜱ…) were, so "ʙᴏʙ" and "ᴀʟɪᴄᴇ" read as no one and showed
// bare beside the contacts bob and alice (found by a hostile review on
// 2026-12-08).
func TestSmallCapitalsReadAsTheirLetters(t *testing.T) {
	for _, p := range [][2]string{
		{"ʙᴏʙ", "bob"},
		{"ᴀʟɪᴄᴇ", "alice"},
		{"ᴄᴀʀᴏʟ", "carol"},
		{"ᴍᴀʟʟᴏʀʏ", "mallory"},
		{"ꜰʀᴀɴᴋ", "frank"},
		{"ᴅᴀᴠᴇ", "dave"},
		{"ɢʀᴀᴄᴇ", "grace"},
		{"ʜᴇɪᴅɪ", "heidi"},
		{"ᴊᴜᴅʏ", "judy"},
		{"ᴋᴇɴ", "ken"},
		{"ᴘᴇɢɢʏ", "peggy"},
		{"ꞯᴜɪɴɴ", "quinn"},
		{"ᴛʀᴇɴᴛ", "trent"},
		{"ᴡᴀʟᴛᴇʀ", "walter"},
		{"ᴢᴏᴇ", "zoe"},
		{"ꜱʏʙɪʟ", "sybil"},
		{"ᴀʟɪᴄᴇ (admin)", "alice (admin)"},
		{"\U00010784ob", "bob"}, // a modifier small capital B, which NFKC makes ʙ
	} {
		if !lookalike.Same(p[0], p[1]) {
			t.Errorf("%q does not read as %q: keys %+q", p[0], p[1], lookalike.Keys(p[0]))
		}
	}
}

// TestEnclosingMarksOfAScriptOnAnotherLeftOut: the enclosing marks of a
// script of its own (the Cyrillic number signs U+0488, U+0489, U+A670 to
// U+A672, drawn around a letter) on a Latin letter read as the
// general-purpose enclosing marks do (a circle, U+20DD, or a keycap,
// U+20E3, which are left out). Before, only nonspacing marks were held to
// their letter's script: "b҉ob" read as no one and showed bare beside the
// contact bob (found by a hostile review on 2026-12-08).
func TestEnclosingMarksOfAScriptOnAnotherLeftOut(t *testing.T) {
	for _, m := range []rune{'\u0488', '\u0489', '\ua670', '\ua671', '\ua672', '\u20dd'} {
		for _, h := range []string{"bob" + string(m), "b" + string(m) + "ob"} {
			if !lookalike.Same(h, "bob") {
				t.Errorf("%+q (%U on a Latin letter) does not read as \"bob\": keys %+q", h, m, lookalike.Keys(h))
			}
		}
	}
}
