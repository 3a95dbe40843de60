package localapi

import "time"

// Info names the node.
type Info struct {
	PeerID string   `json:"peer_id"`
	Handle string   `json:"handle"`
	Addrs  []string `json:"addrs"`
}

// Status is a summary of the running node.
type Status struct {
	Info
	Home       string    `json:"home"`
	Version    string    `json:"version"`
	Started    time.Time `json:"started"`
	UptimeSec  float64   `json:"uptime_seconds"`
	Peers      int       `json:"peers"`
	DHTPeers   int       `json:"dht_routing_table"`
	PubSubPeer int       `json:"pubsub_peers"`
	MDNS       bool      `json:"mdns"`
}

// Peer is a connected peer.
type Peer struct {
	PeerID string   `json:"peer_id"`
	Addrs  []string `json:"addrs"`
}

// ConnectRequest asks the node to dial an address.
type ConnectRequest struct {
	Addr string `json:"addr"`
}
