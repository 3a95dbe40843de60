package rooms

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// Store is the key-value store a room log lives in; internal/store's DB
// implements it. Keys follow internal/store/schema.
type Store interface {
	// Lookup returns a copy of the value at key and whether it exists.
	Lookup(key []byte) ([]byte, bool, error)
	// ScanFrom calls fn for the keys with prefix from start (nil: the first,
	// or with reverse the last) in key order, or reverse order, until fn
	// returns false. key and val are valid only during the call.
	ScanFrom(prefix, start []byte, reverse bool, fn func(key, val []byte) bool) error
	// Apply writes ops atomically; with durable set it returns once they
	// are on disk.
	Apply(ops []schema.Op, durable bool) error
	// Sync returns once every write so far is on disk.
	Sync() error
}

// queuedStore is a Store that can take a write without waiting for it to
// be written (internal/store's DB.ApplyQueued): every read that begins
// after it returns sees it, and ops must not change after it.
type queuedStore interface {
	ApplyQueued(ops []schema.Op) error
}

// storedEvent is the value at r/<room>/e/<id>: the depth, then the wire.
func storedEvent(depth uint64, wire []byte) []byte {
	v := make([]byte, 8+len(wire))
	binary.BigEndian.PutUint64(v, depth)
	copy(v[8:], wire)
	return v
}

func splitStored(v []byte) (uint64, []byte, error) {
	if len(v) < 8 {
		return 0, nil, fmt.Errorf("rooms: stored event is %d bytes", len(v))
	}
	return binary.BigEndian.Uint64(v), v[8:], nil
}

// checkStored splits a stored event and checks its wire against its ID
// (one SHA-256): damaged bytes are ErrCorrupt, never an event.
func checkStored(id ID, v []byte) (uint64, []byte, error) {
	d, wire, err := splitStored(v)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: event %s: %w", ErrCorrupt, id, err)
	}
	if sha256.Sum256(wire) != id {
		return 0, nil, fmt.Errorf("%w: event %s does not match its ID", ErrCorrupt, id)
	}
	return d, wire, nil
}

func be8(v []byte) uint64 {
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// peerFromKey returns the peer encoded by schema.PeerBytes at the start of b.
func peerFromKey(b []byte) (peer.ID, []byte, bool) {
	if len(b) < 1 || len(b) < 1+int(b[0]) {
		return "", nil, false
	}
	id, err := peer.IDFromBytes(b[1 : 1+int(b[0])])
	if err != nil {
		return "", nil, false
	}
	return id, b[1+int(b[0]):], true
}

func storedKey(room identity.RoomID, id ID) []byte { return schema.RoomEvent(string(room), id[:]) }
