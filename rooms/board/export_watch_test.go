package board

// Watches returns how many refused claims the service watches for their
// paths to go free, over all agents.
func Watches(s *Service) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ws := range s.watches {
		n += len(ws)
	}
	return n
}
