// Package reconnect keeps a node connected to the peers its user deals
// with (contacts and the member nodes of its rooms): it remembers where
// each of them was last reached, and redials them at start, when a
// connection drops and when the node's own addresses change (a laptop that
// moved networks), with back-off.
//
// # What is kept
//
// For each such peer the store holds, under schema.PeerAddrs, the
// addresses the peer announced in identify (its listen addresses, relay
// addresses included) and the address this node dialled it on, at most
// MaxAddrs (past that, relayed and public addresses first, then the
// dialled one, then private ones) and maxRecordWire bytes in all (under
// the store's value threshold, so a record written over is compacted away
// rather than left in the value log; no address over maxAddrLen), with the
// time they were learnt. The record is local (never
// sent): CBOR {t: unix seconds, a: [multiaddr bytes]}. Records of peers
// the node no longer deals with are dropped. A peer is noted when identify
// completes with it, and, for a peer that was connected before the node
// dealt with it (a new contact, a new room member), at the next refresh of
// the wanted set (every 5 s) or when the node stops (Save).
//
// # Redial
//
// A wanted peer that is not connected is dialled at its known addresses
// (stored ones are put in the peerstore at start), then, failing that,
// looked up through FindPeer (the DHT). A failed attempt doubles the
// peer's wait, from MinBackoff up to MaxBackoff; a success, a change of
// the node's own addresses or an inbound connection resets it.
package reconnect
