package rooms

import (
	"sync"

	"github.com/parley-mesh/parley/identity"
)

// changeLog numbers the changes of the node's rooms: each time a room
// stores events (or opens, or closes) it gets the next change number, so a
// reader that remembers the last number it saw learns which rooms to look
// at without visiting the others.
type changeLog struct {
	mu    sync.Mutex // protects seq and rooms
	seq   uint64
	rooms map[identity.RoomID]uint64 // room → its latest change number
}

// changed records a change of room id and wakes the Changes listeners.
func (m *Manager) changed(id identity.RoomID) {
	c := &m.changeLog
	c.mu.Lock()
	if c.rooms == nil {
		c.rooms = make(map[identity.RoomID]uint64)
	}
	c.seq++
	c.rooms[id] = c.seq
	c.mu.Unlock()
	m.pulse()
}

// ChangedSince returns the rooms that changed after change number after
// (stored events, opened or closed; all rooms for 0) and the latest change
// number, to pass as after next time. Change numbers start again from 1
// when the node starts.
func (m *Manager) ChangedSince(after uint64) ([]identity.RoomID, uint64) {
	c := &m.changeLog
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []identity.RoomID
	for id, s := range c.rooms {
		if s > after {
			out = append(out, id)
		}
	}
	return out, c.seq
}
