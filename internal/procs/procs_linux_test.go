package procs

import "testing"

func TestParseStat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"123 (bash) S 45 123 123 0 -1", 45, true},
		{"123 (a) b) (c) R 77 1 1", 77, true}, // a command name with ") (" in it
		{"123 (x y) S 9", 9, true},
		{"123 (x) S", 0, false},
		{"garbage", 0, false},
		{"123 (x) S notanumber 1", 0, false},
	} {
		got, ok := parseStat(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("parseStat(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
