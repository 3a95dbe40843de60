package main

import (
	"testing"
	"time"
)

// --valid with more days than a time.Duration holds is refused. Before,
// 200000d overflowed to a negative duration, which the signer reads as
// "unset": a membership of one year, without a word.
func TestParseValidRefusesOverflow(t *testing.T) {
	if d, err := parseValid("90d"); err != nil || d != 90*24*time.Hour {
		t.Fatalf("90d: %v %v", d, err)
	}
	for _, s := range []string{"200000d", "106752d", "9223372036854775807d"} {
		if d, err := parseValid(s); err == nil {
			t.Fatalf("--valid %s: %v, want an error", s, d)
		}
	}
}
