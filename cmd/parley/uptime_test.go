package main

import "testing"

// How long the node has run reads as a person reads a duration: 21m47s,
// not 1307s.
func TestUptimeReadsInHoursMinutesSeconds(t *testing.T) {
	for sec, want := range map[float64]string{6: "6s", 1307.4: "21m47s", 90061: "25h1m1s"} {
		if got := uptime(sec); got != want {
			t.Errorf("uptime(%v) = %q, want %q", sec, got, want)
		}
	}
}
