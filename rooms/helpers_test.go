package rooms

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
)

const testRoom identity.RoomID = "abcdefghijklmnopqrstuvwxyz"

// testKey returns a deterministic Ed25519 key and its peer ID.
func testKey(tb testing.TB, n byte) (crypto.PrivKey, peer.ID) {
	tb.Helper()
	seed := bytes.Repeat([]byte{n}, 32)
	priv, _, err := crypto.GenerateEd25519Key(bytes.NewReader(seed))
	if err != nil {
		tb.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		tb.Fatal(err)
	}
	return priv, id
}

// fakeID returns a deterministic ID for n.
func fakeID(n int) ID {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(n))
	return sha256.Sum256(b[:])
}

func createEvent(author peer.ID) *Event {
	return &Event{
		V: Version, Room: testRoom, Author: author, Agent: "claude-api",
		Seq: 1, Depth: 1, Time: 1_700_000_000_000, Kind: KindCreate,
	}
}

func messageEvent(author peer.ID, body string, parents ...ID) *Event {
	return &Event{
		V: Version, Room: testRoom, Author: author, Agent: "claude-api",
		Seq: 2, Parents: SortIDs(parents), Depth: 2, Time: 1_700_000_000_001,
		Kind: KindMessage, Body: []byte(body),
	}
}

// signRaw encodes and signs a payload with no validation, to build events
// that Seal would refuse.
func signRaw(tb testing.TB, priv crypto.PrivKey, p eventPayload) []byte {
	tb.Helper()
	payload, err := encMode.Marshal(p)
	if err != nil {
		tb.Fatal(err)
	}
	return signPayload(tb, priv, payload)
}

func signPayload(tb testing.TB, priv crypto.PrivKey, payload []byte) []byte {
	tb.Helper()
	sig, err := identity.Sign(priv, identity.DomainRoomEvent, payload)
	if err != nil {
		tb.Fatal(err)
	}
	wire, err := encMode.Marshal(signedEvent{Payload: payload, Sig: sig})
	if err != nil {
		tb.Fatal(err)
	}
	return wire
}

func mustSeal(tb testing.TB, priv crypto.PrivKey, e *Event) ([]byte, ID) {
	tb.Helper()
	wire, id, err := Seal(priv, e)
	if err != nil {
		tb.Fatal(err)
	}
	return wire, id
}
