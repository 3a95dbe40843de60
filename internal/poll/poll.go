// Package poll waits for a condition by asking it again and again until a
// deadline: what tests do instead of sleeping for a guessed time. Packages
// below node (whose tests cannot import node/nodetest) use it directly;
// nodetest.Poll and WaitFor are built on it.
package poll

import "time"

// Until asks cond until it holds (true) or timeout passes (false), at
// intervals growing from 1 ms to 50 ms.
func Until(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	wait := time.Millisecond
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait) // a pacing interval between asks, not a wait for an event
		if wait < 50*time.Millisecond {
			wait *= 2
		}
	}
}
