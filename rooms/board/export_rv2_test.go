package board

// HeldAhead returns how many entries of project key's board are held back
// as dated ahead of the clock, and the bytes of their bodies.
func HeldAhead(s *Service, key string) (n, bodyBytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[key]
	if p == nil {
		return 0, 0
	}
	for _, e := range p.later {
		bodyBytes += len(e.Body)
	}
	return len(p.later), bodyBytes
}

// Projects returns how many projects the service keeps in memory.
func Projects(s *Service) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.projects)
}

// FoldedBodies returns how many entries project key's fold keeps, and the
// bytes of their bodies.
func FoldedBodies(s *Service, key string) (n, bodyBytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[key]
	if p == nil {
		return 0, 0
	}
	for _, e := range p.state.entries {
		bodyBytes += len(e.Body)
	}
	return len(p.state.entries), bodyBytes
}
