// Package identity holds what names a Parley user and what they sign.
//
// A node's Ed25519 libp2p keypair is its user's identity: the peer ID derived
// from the public key names the user's node everywhere. The key lives in the
// node's home as identity.key (libp2p protobuf encoding, file mode 0600);
// LoadOrCreate refuses a key file that group or others can read, as ssh does.
//
// The package also defines the named ID types used across Parley (AgentName,
// RoomID) and the signing domains: every signature Parley makes is taken over
// a domain string plus the payload, so a signature for one record type can
// never be replayed as another.
//
// identity imports no networking and no storage.
package identity
