package discovery

import (
	"bytes"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
)

// testNow is the fixed clock of the tests.
var testNow = time.UnixMilli(1_700_000_000_000)

// testValidator is a Validator on the fixed test clock.
var testValidator = Validator{Now: func() time.Time { return testNow }}

// testKey returns a deterministic Ed25519 key and its peer ID.
func testKey(tb testing.TB, n byte) (crypto.PrivKey, peer.ID) {
	tb.Helper()
	priv, _, err := crypto.GenerateEd25519Key(bytes.NewReader(bytes.Repeat([]byte{n}, 32)))
	if err != nil {
		tb.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		tb.Fatal(err)
	}
	return priv, id
}

// testCard returns a valid card of p that expires an hour after testNow.
func testCard(p peer.ID) *Card {
	return &Card{
		Peer: p, Handle: "Alice", Agent: "claude-api", Role: "backend reviewer",
		Capabilities: []string{"go", "review", "sql"}, Client: "claude-code",
		Seq: 7, Expires: testNow.Add(time.Hour).UnixMilli(),
	}
}

func mustSealCard(tb testing.TB, priv crypto.PrivKey, c *Card) []byte {
	tb.Helper()
	w, err := SealCard(priv, c)
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// signRaw encodes v (a payload struct or raw bytes) and signs it under
// domain with no validation, to build messages that Seal would refuse.
func signRaw(tb testing.TB, priv crypto.PrivKey, domain string, v any) []byte {
	tb.Helper()
	payload, ok := v.([]byte)
	if !ok {
		var err error
		if payload, err = encMode.Marshal(v); err != nil {
			tb.Fatal(err)
		}
	}
	sig, err := identity.Sign(priv, domain, payload)
	if err != nil {
		tb.Fatal(err)
	}
	w, err := encMode.Marshal(signedWire{Payload: payload, Sig: sig})
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

func testPresence(p peer.ID) *Presence {
	return &Presence{
		Peer: p, Seq: 3, Time: testNow.UnixMilli(),
		Agents: []AgentState{
			{Agent: "claude-api", State: StateBusy, WorkingOn: "refactoring the sync protocol\n(step 2 of 3)",
				LastSeen: testNow.UnixMilli(), Role: "backend", Capabilities: []string{"go", "sql"}},
			{Agent: "codex", State: StateIdle, LastSeen: testNow.Add(-time.Minute).UnixMilli()},
			{Agent: "human", State: StateOffline},
		},
	}
}
