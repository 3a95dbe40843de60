package rooms

import (
	"context"
	"crypto/sha256"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
)

// SealUnchecked signs e as Seal does, without checking it: the events of a
// node that does not keep the rules.
func SealUnchecked(priv crypto.PrivKey, e *Event) ([]byte, ID, error) {
	if e.V == 0 {
		e.V = Version
	}
	payload, err := encMode.Marshal(e.payload())
	if err != nil {
		return nil, ID{}, err
	}
	sig, err := identity.Sign(priv, identity.DomainRoomEvent, payload)
	if err != nil {
		return nil, ID{}, err
	}
	wire, err := encMode.Marshal(signedEvent{Payload: payload, Sig: sig})
	if err != nil {
		return nil, ID{}, err
	}
	return wire, sha256.Sum256(wire), nil
}

// SendInviteNamed sends target the notice of an invite event, from any
// host, with the room's name as the inviter gives it.
func SendInviteNamed(ctx context.Context, h host.Host, target peer.ID, id identity.RoomID, name string, wire []byte, topic string) error {
	return sendInviteNotice(ctx, h, target, inviteNotice{Room: string(id), Name: name, Event: wire, Topic: topic})
}

// ProcessUnchecked has room id process events (as catch-up, one batch, on
// the caller's goroutine) decoded as stored events are, without Decode's
// checks: a room as a node of any version stored it.
func (m *Manager) ProcessUnchecked(id identity.RoomID, wires ...[]byte) error {
	r := m.room(id)
	batch := make([]input, 0, len(wires))
	for _, w := range wires {
		e, err := decodeStored(w)
		if err != nil {
			return err
		}
		batch = append(batch, input{item: &Item{ID: sha256.Sum256(w), Event: e, Wire: w}, catchUp: true})
	}
	r.procMu.Lock()
	defer r.procMu.Unlock()
	r.process(r.ctx, batch)
	return nil
}

// ServeInviteRefusal makes host h refuse every invite notice with text, as
// a node may word its refusal as it pleases.
func ServeInviteRefusal(h host.Host, text string) {
	h.SetStreamHandler(ProtocolInvite, func(s network.Stream) {
		defer s.Close()
		_, _ = readFrame(s, maxInviteFrame)
		_ = writeCBORFrame(s, inviteAnswer{Error: text})
	})
}
