package names

// Tidy does what the service does every few seconds while it runs: keeps
// the cards of requesters that became wanted, drops those of peers no
// longer asking.
func (s *Service) Tidy() { s.tidyPassing() }

// RefusePushes makes the service refuse the next n cards pushed to it,
// as a peer that lost the stream would.
func (s *Service) RefusePushes(n int) {
	s.pushMu.Lock()
	s.refusePushes, s.refused = n, 0
	s.pushMu.Unlock()
}

// PushesRefused is how many pushes were refused since RefusePushes.
func (s *Service) PushesRefused() int {
	s.pushMu.Lock()
	defer s.pushMu.Unlock()
	return s.refused
}

// Show is how a name shows handle h (characters that show nothing
// escaped).
func Show(h string) string { return show(h) }
