// Package consent decides who may talk to whom across users: contact
// requests, contact certificates signed by both sides, revocation and
// expiry. It is pure: no networking, no storage, no goroutines; time is
// passed in. The node runs the stream protocol below and persists the
// records that Book hands back.
//
// # Records
//
// All records are canonical CBOR (core deterministic encoding); decoders
// re-encode and compare, so every record has exactly one wire form. Peer IDs
// travel as their bytes, times as unix milliseconds. Every signature is
// identity.Sign over a domain and the payload bytes.
//
//	request     {payload, sig}          domain identity.DomainContactReq, signed by from
//	  payload   {from, to, handle (≤ 64 runes), note (≤ 500 runes), time, nonce (16 bytes)}
//	  ID        first 16 characters of lower-case base32(sha256(wire))
//	certificate {payload, sig_a, sig_b} domain identity.DomainContactCert, signed by a and b
//	  payload   {a, b, scopes, not_before, not_after, seq}  a < b (bytes); scopes sorted, unique
//	revocation  {payload, sig}          domain identity.DomainRevocation, signed by issuer
//	  payload   {issuer, subject, cert_seq, time, seq}
//
// A certificate is valid from not_before (inclusive) to not_after
// (exclusive). Its seq grows with every certificate between the same two
// peers; a revocation ends every certificate with seq ≤ cert_seq. A
// revocation's own seq grows per issuer and subject; one not above the last
// seen is a replay. Book picks both seqs as max(last+1, unix ms), so they
// keep growing even if a node lost its records.
//
// # Protocol /parley/contact/1
//
// One stream per exchange. The opener writes one message and reads one
// answer; then both close. A frame is a uvarint length and that many bytes
// of CBOR (a Message); frames above 16 KiB (MaxFrame) are refused. The
// remote peer is the one authenticated by the libp2p connection: its
// messages are taken as from that peer only.
//
//	exchange  opener sends                         peer answers                  calls
//	request   {k:"request", req}                   {k:"ack", id}                 OutgoingRequest; IncomingRequest
//	approve   {k:"approve", id, payload, sig,      {k:"countersign", id, sig}    Approve; Countersign; Complete
//	           handle?}
//	deny      {k:"deny", id}                       {k:"ack", id}                 Deny; Denied
//	revoke    {k:"revoke", rev}                    {k:"ack"}                     Revoke; ApplyRevocation
//	cert      {k:"cert", cert, handle?}            {k:"ack"}                     RestoreCertificate
//
// The request is opened by the requester; approve and deny by the approver;
// revoke by either side; cert by either side of an active contact when they
// connect: it shows the sealed certificate the opener holds, and a peer
// started on an older copy of its home, which forgot it, holds it as a
// pending request for its user to approve (RestoreCertificate: both
// signatures, valid now, newer than anything the book holds for the
// opener, the contact unchanged since it began); one that completes the
// peer's own outstanding offer is taken at once. A revoke may also carry the receiver's own
// revocation back to it: the revoked node keeps the revocation it was sent
// (Contact.PeerRevocation) and shows it to the revoker whenever they connect,
// so a revoker started on an older copy of its home takes its decision back
// in (ApplyRevocation, when it is newer than the book's last revocation of
// that peer and ends the current certificate); a revoker that knows it
// answers with a replay error. The approver's sig is its signature over payload;
// the countersign sig is the requester's over the same payload, which the
// approver passes to Complete.
//
// Any message may be answered with {k:"error", code, text}; ErrorMessage
// builds one from an error, Message.Err turns it back into one that wraps
// ErrRemote and the sentinel named by code. A node that cannot reach the
// peer keeps the bytes to send (Contact.OutRequest, Contact.Offer with
// OfferSig, Contact.Revocation) and retries; every step is idempotent or
// answered with a precise error. Revocations, either side's, are sent again
// on each new connection between the two nodes (the peer may have lost
// them to a restored copy).
//
// # Book
//
// Book is one node's contacts, one Contact per remote peer, with states
// pending-in, pending-out, active, denied and revoked; expired is reported
// for an active contact past not_after. Every mutating call returns the
// Records that changed, for the node to store under c/<peer>; Load rebuilds
// a Book from them. Allowed is the check to make before invites, direct asks,
// presence and accepting another user's events.
//
// The approver signs first and its contact stays pending-in until the
// countersignature arrives; the requester becomes active as soon as it
// countersigns. A countersignature that is lost leaves the approver
// pending-in: approving again makes a fresh offer with a higher seq, which
// the requester countersigns as a renewal. Only the approver renews: a
// node that approved the current certificate (Contact.Approver) refuses
// approvals from the requester with ErrNotRequested, so a requester cannot
// extend its own certificate. A renewal is countersigned without a request
// only while the contact is live, with scopes no wider than the current
// certificate's and not_after no later than the current one or now +
// Policy.DefaultValidity. Countersign refuses a payload whose not_before
// is more than Policy.ClockSkew ahead (ErrNotYetValid); within the skew it
// is taken and Allowed fails until not_before.
//
// Incoming requests are bounded against strangers with fresh keys. A
// request waits Policy.PendingTTL (7 days) for an answer, then Expire (or
// the next IncomingRequest) drops it, and the contact goes back to what it
// was before (or away, with a Record whose Delete is set). Requests of
// peers the node does not know are capped at Policy.MaxPendingIn (100): at
// the cap a new one, once its signature checks, drops the oldest. Requests
// of known peers (IncomingRequest's known: a room co-member, an
// organisation member; or a past contact, or a peer this node asked) have
// their own cap, Policy.MaxPendingKnown (100), and never give way to
// strangers'.
//
// The node's service (internal/contacts) runs the protocol, persists the
// records, limits each peer's messages (ErrRateLimited, code "rate-limited")
// and decides, from the Book, what rooms accept; see its documentation.
package consent
