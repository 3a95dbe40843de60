package rooms

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
)

// LeftRoomSyncState reports what room id, which this node left and serves
// for a while (leaving), keeps of catch-ups with p: whether a sync back
// was recorded for p, whether a catch-up with p is marked queued or
// running, and how many catch-ups wait in its queue. Zero values when the
// room is not served as left.
func (m *Manager) LeftRoomSyncState(id identity.RoomID, p peer.ID) (syncedBack, syncing bool, queued int) {
	r := m.leaving.get(id)
	if r == nil {
		return false, false, 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, syncedBack = r.syncedBack[p]
	return syncedBack, r.syncing[p], len(r.syncQ)
}

// StallFrom makes room id back off from p for d, as after a catch-up with
// p that brought only events the room refused (noteProgress).
func (m *Manager) StallFrom(id identity.RoomID, p peer.ID, d time.Duration) {
	r := m.room(id)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stalls[p] = stall{n: 1, until: time.Now().Add(d)}
}

// StalledFrom reports whether room id backs off from p now.
func (m *Manager) StalledFrom(id identity.RoomID, p peer.ID) bool {
	return m.room(id).stalledFrom(p)
}

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
