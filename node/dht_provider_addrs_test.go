package node_test

import (
	"testing"

	dhtpb "github.com/libp2p/go-libp2p-kad-dht/pb"
)

// A stranger in the node's DHT answers a provider lookup (a find's
// cap:go) with one provider and as many addresses for it as fit in a
// message. The DHT keeps at most maxDHTAddrs of them (capDHTAddrs), but
// the find took the answer's provider as it came and put every address in
// the peerstore before it asked the provider for its cards: 200 ports of
// this machine dialled, and as many addresses held per provider, 200
// providers a query.
func TestProviderAnswerSteersFewDials(t *testing.T) {
	st := steeringDHT(t, func(req, resp *dhtpb.Message, named *dhtpb.Message_Peer) {
		if req.GetType() == dhtpb.Message_GET_PROVIDERS {
			resp.ProviderPeers = []*dhtpb.Message_Peer{named}
		}
	})
	if _, err := st.na.Agents().Search(st.ctx, "cap:go"); err != nil {
		t.Fatal(err)
	}
	if n := st.dials(t); n == 0 {
		t.Fatal("node 0 dialled none of the addresses the provider answer named")
	} else if n > steerMost {
		t.Fatalf("one provider answer of a stranger's had node 0 dial %d addresses of the provider (at most %d)", n, steerMost)
	}
	if n := len(st.na.Host().Peerstore().Addrs(st.target)); n > steerMost {
		t.Fatalf("node 0 keeps %d addresses of the provider (at most %d)", n, steerMost)
	}
}
