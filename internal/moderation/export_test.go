package moderation

// Limits returns how many agents' post limits the service keeps.
func Limits(s *Service) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.limits)
}
