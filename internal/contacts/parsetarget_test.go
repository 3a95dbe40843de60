package contacts_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/internal/contacts"
)

// A contact target may be the ready line's addrs= as it is (several
// addresses of one node, separated by commas), as --bootstrap takes it:
// the request dials any of them. Addresses of two nodes are refused.
func TestContactTargetTakesTheReadyLinesAddressList(t *testing.T) {
	const id = "12D3KooWEzhXh71wmFGZ87iDSH4FDwS6kTRTJA6FrYsfZ4VSGWrH"
	const other = "12D3KooWH1SKCfpWXWHMQ7uKMerJf5Gnng6N3aAtbCUSc9MhmHJy"
	list := "/ip4/127.0.0.1/tcp/42639/p2p/" + id + ",/ip4/127.0.0.1/udp/60505/quic-v1/p2p/" + id
	ai, err := contacts.ParseTarget(list)
	if err != nil {
		t.Fatalf("the ready line's addrs=: %v", err)
	}
	if ai.ID.String() != id || len(ai.Addrs) != 2 {
		t.Fatalf("parsed %v, want %s with two addresses", ai, id)
	}
	_, err = contacts.ParseTarget("/ip4/127.0.0.1/tcp/1/p2p/" + id + ",/ip4/127.0.0.1/tcp/2/p2p/" + other)
	if !errors.Is(err, contacts.ErrBadInput) || !strings.Contains(err.Error(), "two nodes") {
		t.Fatalf("addresses of two nodes: %v", err)
	}
}
