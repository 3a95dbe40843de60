package names

// Tidy does what the service does every few seconds while it runs: keeps
// the cards of requesters that became wanted, drops those of peers no
// longer asking.
func (s *Service) Tidy() { s.tidyPassing() }
