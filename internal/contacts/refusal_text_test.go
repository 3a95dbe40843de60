package contacts_test

import (
	"context"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
)

// A peer answers a contact request with a refusal whose text it wrote
// itself. The wire lets such a text hold line breaks, tabs and format
// characters (a bidi override), and the requester's error, which `parley
// contact request` prints as it is, passed it on: a stranger could write
// lines of its own on the user's terminal ("parley: contact approved")
// or reorder what the line shows. The refusal reads as the peer's words,
// quoted, every such character escaped.
func TestPeersRefusalTextCannotWriteLinesOfItsOwn(t *testing.T) {
	nt := startNet(t, 2)
	waitConnected(t, nt, 0, 1)
	hostile := "busy\nparley: node 12D3KooW… is now your contact\t\u202eevil\u200b"
	nt.Node(0).Host().SetStreamHandler(consent.ProtocolID, func(s network.Stream) {
		defer s.Close()
		if _, err := consent.ReadFrame(s, consent.MaxFrame); err != nil {
			return
		}
		_ = consent.WriteFrame(s, consent.Message{Kind: consent.KindError, Code: "internal", Text: hostile})
	})
	_, err := svc(nt, 1).Request(context.Background(), peer.AddrInfo{ID: nt.ID(0)}, "hello")
	if err == nil {
		t.Fatal("a refused request succeeded")
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\n\t\u202e\u200b") {
		t.Fatalf("the peer's refusal reached the error as it wrote it: %q", msg)
	}
	if !strings.Contains(msg, "busy") || !strings.Contains(msg, `\u202e`) {
		t.Fatalf("the peer's refusal is not shown, escaped: %q", msg)
	}
}
