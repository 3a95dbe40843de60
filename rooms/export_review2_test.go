package rooms

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
)

// BackWaiting reports whether room id has a sync back from p waiting
// (syncBackLater): the wait a Hello of p started and that has not
// looked again yet.
func (m *Manager) BackWaiting(id identity.RoomID, p peer.ID) bool {
	r := m.room(id)
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, waiting := r.backWaits[p]
	return waiting
}

// SyncedBackLead reports the lead room id last synced back from p for
// (syncBack), if it keeps one, and whether a catch-up with p is marked
// queued or running.
func (m *Manager) SyncedBackLead(id identity.RoomID, p peer.ID) (kept, syncing bool) {
	r := m.room(id)
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, kept = r.syncedBack[p]
	return kept, r.syncing[p]
}

// RequestSyncLeft has room id, which this node left and serves for a
// while (leaving), ask for a catch-up with p (requestSync), and reports
// whether it says one is to come. False when the room is not served as
// left.
func (m *Manager) RequestSyncLeft(id identity.RoomID, p peer.ID) bool {
	r := m.leaving.get(id)
	if r == nil {
		return false
	}
	return r.requestSync(p)
}
