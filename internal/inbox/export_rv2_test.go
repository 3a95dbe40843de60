package inbox

// States returns how many agents' states the inbox keeps in memory.
func States(b *Inbox) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.states)
}
