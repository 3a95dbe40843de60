package inbox

import "github.com/parley-mesh/parley/identity"

// States returns how many agents' states the inbox keeps in memory.
func States(b *Inbox) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.states)
}

// OwedTextBytes returns how many asks agent owes and the bytes of their
// texts the inbox holds in memory.
func OwedTextBytes(b *Inbox, agent string) (n, textBytes int) {
	b.mu.Lock()
	st := b.states[identity.AgentName(agent)]
	b.mu.Unlock()
	if st == nil {
		return 0, 0
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, a := range st.owed {
		textBytes += len(a.Text)
	}
	return len(st.owed), textBytes
}
