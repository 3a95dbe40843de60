package discovery

// heldBytes is the bytes of the records the store keeps.
func (s *ValueStore) heldBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, v := range s.vals {
		n += len(k.String()) + len(v)
	}
	return n
}
