package board

import "github.com/parley-mesh/parley/internal/store/schema"

// Tell has the service remember it told the notices ids, of claims
// expiring at expires[i] (unix ms), as a notice handed out does.
func Tell(s *Service, ids []string, expires []int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ops []schema.Op
	for i, id := range ids {
		ops = append(ops, s.tellLocked(id, expires[i])...)
	}
	return s.applyStore("notices told", ops)
}

// IsTold reports whether the service remembers it told the notice id.
func IsTold(s *Service, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.told[id]
	return ok
}

// SetMaxTold sets maxTold to n until the test ends, and returns the
// bound it had.
func SetMaxTold(t interface{ Cleanup(func()) }, n int) int {
	was := maxTold
	maxTold = n
	t.Cleanup(func() { maxTold = was })
	return was
}

// EncodeTold is encodeTold.
var EncodeTold = encodeTold
