package inbox

import (
	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// States returns how many agents' states the inbox keeps in memory.
func States(b *Inbox) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.states)
}

// OwedTextBytes returns how many asks agent owes and the bytes of their
// texts the inbox holds in memory.
func OwedTextBytes(b *Inbox, agent string) (n, textBytes int) {
	withState(b, agent, func(st *state) {
		for _, a := range st.owed {
			textBytes += len(a.Text)
		}
		n = len(st.owed)
	})
	return n, textBytes
}

// withState runs f on agent's state, locked, if the inbox holds one.
func withState(b *Inbox, agent string, f func(st *state)) {
	b.mu.Lock()
	st := b.states[identity.AgentName(agent)]
	b.mu.Unlock()
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	f(st)
}

// HandRecords returns how many open hand-out records of agent the store
// holds, and the size of the largest.
func HandRecords(b *Inbox, agent string) (n, largest int, err error) {
	err = b.db.ScanFrom(schema.AgentItem(agent, "h", ""), nil, false, func(k, v []byte) bool {
		n++
		largest = max(largest, len(v))
		return true
	})
	return n, largest, err
}

// Waiting reports whether a call waits on agent's state (state.woken): a
// Wait that looked at the state and found nothing to return.
func Waiting(b *Inbox, agent string) (waiting bool) {
	withState(b, agent, func(st *state) { waiting = st.wake != nil })
	return waiting
}

// AskedTextBytes returns how many of its own asks agent has open and the
// bytes of their texts, and of the replies to them, the inbox holds in
// memory.
func AskedTextBytes(b *Inbox, agent string) (n, textBytes int) {
	withState(b, agent, func(st *state) {
		for _, a := range st.asked {
			textBytes += len(a.Text)
			if a.Reply != nil {
				textBytes += len(a.Reply.Text)
			}
		}
		n = len(st.asked)
	})
	return n, textBytes
}

// NoteTextBytes returns how many items agent has to show once (replies,
// invitations, items offered again) and the bytes of their texts the
// inbox holds in memory.
func NoteTextBytes(b *Inbox, agent string) (n, textBytes int) {
	withState(b, agent, func(st *state) {
		for _, it := range st.notes {
			textBytes += len(it.Text)
		}
		n = len(st.notes)
	})
	return n, textBytes
}
