package inbox

import "github.com/parley-mesh/parley/identity"

// AskedTextBytes returns how many of its own asks agent has open and the
// bytes of their texts, and of the replies to them, the inbox holds in
// memory.
func AskedTextBytes(b *Inbox, agent string) (n, textBytes int) {
	b.mu.Lock()
	st := b.states[identity.AgentName(agent)]
	b.mu.Unlock()
	if st == nil {
		return 0, 0
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, a := range st.asked {
		textBytes += len(a.Text)
		if a.Reply != nil {
			textBytes += len(a.Reply.Text)
		}
	}
	return len(st.asked), textBytes
}
