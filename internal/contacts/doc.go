// Package contacts is the node's contact service: it runs the consent
// package's Book behind the /parley/contact/1 stream protocol, persists the
// records the Book hands back under c/<peer> (internal/store/schema.Contact, in
// pieces under the store's value threshold: schema.SetPieces),
// re-sends what a peer missed while it was offline, and answers the rooms'
// consent questions (it implements rooms.Policy).
//
// # Exchanges
//
// Each exchange is one stream: the opener writes one consent.Message frame
// and reads one answer (see the consent package for the frames).
//
//	Request  requester → target   {request}          → {ack} or {error}
//	Approve  approver → requester {approve}          → {countersign} or {error}
//	Deny     approver → requester {deny}             → {ack}
//	Revoke   either → the other   {revoke}           → {ack} or {error}
//
// A request is sent only once the target is reached (a multiaddr given, the
// peerstore, or the DHT through Config.FindPeer); an unreachable target
// stores nothing. An approval or revocation made while the peer is offline
// takes effect locally at once and is kept in the contact (Offer,
// Revocation); it is sent again when the peer connects and every
// Config.RetryInterval. Deny is best effort: a requester that missed it
// learns it when its request is refused with the "denied" code.
//
// Incoming requests expire after consent's PendingTTL (7 days), checked at
// Start (so a restart does not keep them) and every RetryInterval; at the
// cap on strangers' requests the oldest gives way, while requests of peers
// Config.Known reports (room co-members, and organisation members as the
// node learns of them) are kept apart and never crowded out.
//
// Every message is taken as from the peer authenticated by the connection.
// A peer may send at most Config.RateLimit messages a minute; more are
// refused with "rate-limited". Every refusal of bad input (forged or
// misaddressed certificates, expired or not-yet-valid ones, replayed
// revocations, floods, oversized notes, undecodable frames) is answered with
// a consent error message, counted in parley_contact_rejected_total{reason},
// and stores nothing.
//
// # Policy for rooms
//
// CanInvite(target) is nil for a live certificate with target: one granting
// the "invite" scope (the invite opens the room there at once,
// TrustInvite), or one without it (that invite waits on target's node for
// its user's answer). A co-member that is no contact is not invited (its
// inviter vouches for it to every member, below). Else the error names
// `parley contact request`.
//
// Allowed(p), asked by rooms for every invite notice, event author, gossip
// sender and sync partner, is nil when
//   - p is this node (its own agents need no consent), or
//   - p holds a live certificate with this node, or
//   - p is a member node of a room this node is in (Config.SharesRoom):
//     a member invited it, so a contact vouched for it,
//
// unless p's contact is revoked, expired or denied: then it fails whatever
// else holds, so a revoked or expired node is cut off at once from every
// room, its events are ignored, sync with it is refused and the rooms' peer
// filter keeps it off their topics. Its events that a member this node
// takes events from built on still come in, through that member (a room
// would be split here for good without them), and the inbox keeps them
// from this node's agents (inbox.Config.CutOff). A stranger (no contact, no shared room)
// is refused: it cannot invite this node into a room of its own.
package contacts
