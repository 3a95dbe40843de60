// Package names gives people readable names for nodes: each node's user
// handle, carried in a card the node signs (discovery.NodeCard), so that
// what a person reads says agent@handle instead of a 52-character peer ID.
//
// # Protocol /parley/name/1
//
// The node that opens the stream writes nothing; the other writes its own
// signed node card as one frame (internal/frame: uvarint length, then at most
// discovery.MaxNodeCardWire bytes) and closes. A node asks every peer it
// connects to (at most once in RefetchAfter, a few at a time; an ask that
// brought no card, the peer still starting, is made again when the peer
// connects again or starts serving the protocol), keeps the card only if
// it is the peer's own and newer (higher seq) than the one it has, and
// stores it under schema.NodeCard, so names survive restarts and peers
// that are not connected keep theirs.
//
// # Protocol /parley/name-push/1
//
// When a node's card changes (its organisation membership taken or lost,
// looked at every 2 s; or its handle or membership changed across a
// restart: the card last handed to peers is stored at schema.KeyOwnCard,
// and a node that starts with the same handle and membership pushes
// nothing: its card, sealed afresh at start so that a home restored from
// an older copy still shows the newest, is fetched as before), it opens this stream to each connected peer
// whose card it keeps (contacts and room members), and to each other such
// peer when it connects (or starts serving the protocol), writes its new
// card as one frame and closes. The receiver takes it as a fetched card (its sender's
// own, newer, from a peer it keeps cards of) and refuses a push from the
// same peer within PushEvery, asking that peer for its card once PushEvery
// has passed instead (so two changes close together end on the newest).
//
// # Display
//
// A known node shows as its handle, or as handle~SUFFIX, with the shortest
// tail of its peer ID that tells it from the nodes whose handles read like
// its own (at least 4 characters), when it must be told apart. Handles read
// the same when they share a key (internal/lookalike: the same confusable
// skeleton, ignoring case, width, invisible characters, small marks and
// look-alike letters of other scripts). The node itself keeps its bare
// handle; any other node keeps it when every node whose handle reads the
// same ranks below it (contacts and nodes it asked, then room members, then
// requesters and cards kept from before). A node whose handle reads as the
// node's own, or as "here" or "you" (words that stand for the node), alone
// or with more around it, always shows with its tail; so does one whose
// handle holds a node's of its rank or above with more around it ("bob
// (laptop)", "[admin] carol"), one whose handle reads like a display form
// (handle~SUFFIX, …SUFFIX, a peer ID), and one whose handle holds
// characters that show nothing (shown escaped, \uXXXX). A node with no
// handle known shows as …SUFFIX (the last 8 characters of its peer ID).
// Contacts' handles from their requests serve until a node's card arrives.
// Resolve turns a displayed name back into the peer ID, so an agent can
// address NAME@handle (or NAME@handle~SUFFIX) as it reads it.
package names
