// Package discovery holds how Parley nodes and their agents find each
// other: agent cards in the DHT, provider records to look them up, and
// presence between contacts.
//
// This part of the package is pure: the card and presence wire formats, the
// DHT record validator, provider keys and presence frames. It starts no
// goroutines and does no I/O of its own; node wires it into its host.
//
// # DHT
//
// Parley runs its own Kademlia DHT, apart from the IPFS one:
// dht.ProtocolPrefix("/parley") gives the protocol /parley/kad/1.0.0.
// Nodes that can be reached run it in server mode. Agent cards are values
// in it (namespace "parley-agent", Validator) and lookups go through
// provider records (ProviderKey).
//
// # Agent cards
//
// A card is an agent's public face, signed by its node's key. Its payload
// is a CBOR map with small-integer keys, encoded in core deterministic mode
// (RFC 8949 §4.2.1), with zero-valued fields left out:
//
//	1 v        uint    version, 1
//	2 peer     bytes   the node's peer ID (Ed25519 only)
//	3 handle   text    optional: the user's handle, ≤ 64 bytes, one line
//	4 agent    text    identity.AgentName
//	5 role     text    optional: ≤ 64 bytes, one line
//	6 caps     [text]  ≤ 32, each 1–64 of [a-z0-9._-], sorted, unique
//	7 client   text    optional: e.g. "claude-code", ≤ 64 bytes, one line
//	8 seq      uint    ≥ 1; a higher seq replaces a lower one
//	9 expires  int     unix milliseconds, > 0
//
// One-line texts are UTF-8 without control, format (e.g. bidi overrides)
// or line-separator characters, and without surrounding white space. The
// wire form is the deterministic CBOR map {1: payload, 2: sig}, where sig
// is the node's Ed25519 signature of payload under domain
// identity.DomainAgentCard; it is at most 4 KiB. DecodeCard re-encodes what
// it decoded and refuses any other encoding, so a card has one wire form.
//
// A card is stored under the key
//
//	/parley-agent/<peer>/<agent>
//
// with the peer ID in its canonical string form (peer.ID.String) — see
// CardKey and ParseCardKey. kad-dht hands the validator registered for
// namespace "parley-agent" this whole key. Validator accepts a value only
// if the key parses, the value decodes (size, canonical form, limits), the
// card's peer and agent are those of the key, the signature is the key's
// peer's (so nobody can publish under another node's keys), and it expires
// after now but at most MaxCardTTL (24 h) plus MaxClockSkew (10 min) from
// now, so junk cannot outlive a day. Select picks the highest seq, then the
// latest expiry, then the bytewise smallest value, and skips invalid
// values. A node seals its cards with seq = unix milliseconds at sealing,
// which grows across restarts without storage, and re-publishes them on
// change and well before they expire (e.g. every MaxCardTTL/2), since
// kad-dht does not re-publish values by itself. What an agent works on is
// never in its card.
//
// # Provider records
//
// To be found, a node announces each card as a provider of
//
//	CIDv1(raw, sha2-256("parley:" + kind + ":" + value))
//
// for kind "handle" (the card's handle), "agent" (its agent name) and
// "cap" (each capability), where value is trimmed and lower-cased (see
// ProviderKey, Card.ProviderKeys). A searcher turns its query into keys
// with ParseQuery ("cap:go", "agent:x", "handle:y", or a free word tried as
// all three), calls FindProviders on each, and fetches and validates the
// providers' cards from the DHT. Provider records say only "this peer has
// something under this name"; the signed card is what counts. A DHT server
// keeps others' provider records in a ProviderStore, which is bounded and,
// when full, makes room for a newcomer's record rather than refuse it.
//
// # Presence: /parley/presence/1
//
// Presence is selective exposure: a contact (a peer with a live consent
// certificate) sees each of a node's agents' state (idle, busy, offline),
// what it works on and when it was last seen; anyone else sees only the
// public cards. A node sends its presence only to contacts, on a stream of
// protocol /parley/presence/1 that it opens: when it changes (coalesced,
// at most once per PresenceMinInterval) and as a heartbeat every
// PresenceHeartbeat. A contact that hears nothing for three heartbeats
// shows the node's agents as offline.
//
// Each frame on the stream is a uvarint length (minimal encoding, 1 to
// 64 KiB) followed by that many bytes: the wire form of a presence message
// (WriteFrame, ReadFrame). Its payload is a deterministic CBOR map:
//
//	1 v       uint   version, 1
//	2 peer    bytes  the node's peer ID (Ed25519 only)
//	3 seq     uint   ≥ 1, increasing per node
//	4 time    int    sender's clock, unix milliseconds, ≥ 0
//	5 agents  [map]  ≤ 64, sorted by agent, unique:
//	   1 agent       text    identity.AgentName
//	   2 state       text    idle | busy | offline
//	   3 working_on  text    optional: ≤ 500 characters, may span lines
//	   4 last_seen   int     unix milliseconds, ≥ 0
//	   5 role        text    optional: as in a card
//	   6 caps        [text]  as in a card
//
// and its wire form is {1: payload, 2: sig} with sig under domain
// identity.DomainPresence, at most 64 KiB. The receiver runs
// DecodePresence and accepts the message only if its peer is the stream's
// remote peer and a contact, and its seq is above the last one accepted
// from that peer; so a message cannot be replayed or passed on by anyone
// else.
package discovery
