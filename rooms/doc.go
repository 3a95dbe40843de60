// Package rooms holds Parley's rooms: signed events, the causal DAG they
// form, and the catch-up protocol that moves them between nodes.
//
// This part of the package is pure: the event wire format (Seal, Decode),
// the causal-delivery pool (Pending) and the sync frames (Hello, Batch).
// It starts no goroutines and does no I/O of its own.
//
// # Events
//
// An event is a CBOR map with small-integer keys, encoded in core
// deterministic mode (RFC 8949 §4.2.1: shortest integers, definite lengths,
// keys sorted), with zero-valued fields left out:
//
//	1 v        uint   version, 1
//	2 room     text   identity.RoomID
//	3 author   bytes  the author node's peer ID (Ed25519 only)
//	4 agent    text   identity.AgentName of the speaking agent
//	5 seq      uint   per (room, author): 1, 2, 3, … without gaps
//	6 parents  [bytes] the author's heads: 32-byte IDs, ≤ 20, sorted, unique
//	7 depth    uint   max parent depth + 1; 1 for create; < 2^40
//	8 time     int    author's clock, unix milliseconds, ≥ 0
//	9 kind     text   create | invite | join | leave | message | ask | claim | release
//	10 body    bytes  ≤ 64 KiB; see below
//	11 reply_to bytes optional: the 32-byte ID of the event answered
//	12 to      text   optional: agent address NAME or NAME@PEER, canonical form
//
// The body by kind: create, the 16-byte nonce, the room's name, and (when
// there is one) a NUL byte and its purpose (one line); invite, the invited
// peer ID; message and ask, UTF-8 text; leave, empty when an agent leaves,
// or cutoff (8 bytes, big-endian) then a peer ID when a node is out of the
// room: by itself (the peer is the author; cutoff is ignored and the
// leave's own seq is used) or removed by the room's creator; claim and
// release, a CBOR map that package rooms/board defines and checks (rooms
// stores it as it is). To on an
// invite names the agent invited (NAME@PEER); on an ask the agent asked
// (none: the whole room); on a message whom it is for.
//
// These bytes are the payload. The wire form is the CBOR map
// {1: payload, 2: sig}, also deterministic, where sig is the author's
// Ed25519 signature of payload under domain identity.DomainRoomEvent. The
// event ID is SHA-256 of the wire form; it is written as 52 characters of
// lower-case base32 without padding.
//
// Decode accepts at most 80 KiB of wire and refuses any encoding that is not
// the canonical one (by re-encoding and comparing), so one event has exactly
// one ID; Ed25519 signatures cannot be re-shaped by a third party either.
// It also refuses unknown versions and kinds, and enforces: seq ≥ 1; a create
// event has seq 1, no parents and depth 1; any other event has 1 to 20
// parents and depth ≥ 2. An author that signs two events with the same seq
// forks its chain; Decode cannot see that, the room can (see Forks).
//
// # Causal delivery
//
// An event is stored, and shown, only after all its parents are stored and
// the room's rules accept it: its depth equals its parents' maximum depth
// plus one (Event.CheckDepth), and its author node is a member in its causal
// past. An event whose parents are not all stored waits in a bounded Pending
// pool, and the IDs it waits for (Pending.Missing) are fetched by sync. When
// an event is stored, Pending.Ready releases the events that waited only for
// it; storing those in turn releases more, so delivery follows causal order.
// If an event is refused, Pending.Discard drops everything that waits on it.
//
// Every node shows a room in the same display order, (depth, event ID),
// which extends the causal order; OrderKey gives it as a byte-ordered key.
//
// # Membership
//
// A node is a member from the event that admits it (the create event for
// its creator, an invite for the others) until its leave. The first event
// of a membership must have the admitting event in its causal past. An own
// first event names it among its parents, which is taken at once; otherwise
// it must be found by a walk back from the parents, through at most 64
// events in rooms whose create event is dated from NamedAdmitSince on (where
// any invite of an author never taken out will do) and 100,000 in older
// ones. A node
// whose leave (or removal, by the creator only) is stored has its events
// after the leave's cutoff refused by every member; it is dropped from the
// topic's mesh (the member leaves and joins the topic again, so the peer
// filter vets the mesh anew), members serve its sync only up to its
// removal, and an invite makes it a member again from its next seq. The
// creator tells a node it removed on /parley/invite/1, with the leave event
// in place of an invite; the node checks that the sender created the room,
// signed the event and removes this node, and syncs with it at once, so it
// learns of its removal without waiting for anti-entropy. A node that leaves stops following
// the room, and answers its members' sync for it for LeavingServeFor (14
// days) only, so they learn of its leave.
//
// Agents are members too: an agent is in from the latest event, in display
// order, that names it (create, join, a message or ask of its own, an invite
// naming it) until its leave or its node's. The node enforces it for its own
// agents: an agent that left cannot post until invited again.
//
// # Catch-up: /parley/sync/1
//
// GossipSub delivers new events, but its gossip covers only seconds. On
// joining, on connecting to a member, on a missing parent, and periodically,
// a node opens a stream with protocol /parley/sync/1 to a member of the room
// and catches up. A catch-up that fails on the way (the member does not
// serve sync yet, as while it starts, or the stream breaks) is made again
// while the member stays connected: about 1 s after the failure, then each
// time twice as long after the one before fails (give or take a half), up
// to 5 times, in one chain per room and member that a success or the
// member's disconnection ends. One the member refused (it resets the
// stream: its policy, the room not open there, not a member) is not; one it
// found busy (a reset with code 0x70617201: its serving slots stayed taken
// for 10 s) is. A requester gives an answer up after 20 s without a byte,
// or when it is not done by the end of the exchange's minute: such a
// member is not asked again by the room for a while (1 s, doubling while
// it stays so, at most 5 min). A responder writes what its batch holds
// once 2.5 s passed since its last write, full or not. A room runs
// up to two catch-ups at a time, each with a different member, so one slow
// or silent member does not hold its catch-ups with the others (a room told
// back, below, one).
// Each frame on the stream is a uvarint length (minimal encoding, 1 to 1
// MiB) followed by that many bytes of CBOR (definite lengths, no tags, no
// duplicate or unknown keys).
//
// The requester writes one Hello frame:
//
//	{1: room text, 2: heads [bytes] (≤ 64), 3: vv [[author bytes, seq uint]] (≤ 4096),
//	 4: want [bytes] (≤ 256), 5: limit uint, 6: from bytes, 7: to bytes}
//
// vv maps each author node to the highest seq the requester holds without a
// gap; want names events it misses (typically Pending.Missing); limit is the
// most events it wants back (0: the responder chooses). When the requester
// knows more authors than one vv lists, it asks for them a part at a time,
// in the order of their IDs' bytes: from and to (peer IDs; each absent for
// no bound) say the Hello speaks of the authors from ≤ author < to alone. vv
// then lists those alone, and the responder serves their events alone (and
// the wanted ones); the next Hello begins at to. The responder serves only
// members of the room. It sends the events of the room that the requester
// lacks — those of each author above its vv entry, and the wanted ones it
// holds — in display order (so each arrives after its parents), as Batch
// frames {1: [event wire bytes] (1 to 1024)}, and then one end frame {2:
// true, 3: more}, where more says it stopped at a limit, or sent wanted
// events whose own parents the requester may lack, and the requester should
// ask again (with what it still misses). Every event received is checked
// with Decode and the room's rules like one from gossip. A Hello that
// lists every author tells the responder whether the requester has
// something it lacks. A vv above the responder's for some author (a seq of
// 2^63-1 aside: the requester asks for none of that author's events) makes
// the responder sync the other way on a stream of its own, once for what
// it shows in the requester's connected period; a node that starts thus
// gets its peers to fetch what it posted before a crash as soon as it
// pulls from them. When the vv is nowhere above the responder's, a head
// the responder lacks is a fork (below), and the responder syncs the other
// way, wanting it.
//
// # Forks and a node's own seq
//
// A node whose data is an older copy (a backup put back, a recovered
// database) holds fewer of its own events than its members do. After it
// starts, a room posts nothing until a member has answered one sync (which
// sends every event of this node the member holds above the node's vv), for
// at most Config.OwnEventsWait; a post meanwhile waits, and past the wait
// fails with ErrOwnEventsUnknown while members are connected (an offline
// node goes on). If a node did reuse a seq anyway, the two events fork its
// chain. Both are valid and signed, so every node keeps both, whichever
// arrived first: the first holds the seq in the author index and the
// version vector, the other is stored as a fork (r/<room>/f/…) in the DAG
// and the display order like any event. All nodes end with the same events
// in the same order; forks travel by gossip, as missing parents (want), and
// as heads (above). The author's next seq follows the highest it used. A
// second create event is still refused.
//
// # Rooms told back: /parley/held/1
//
// An older copy may also lack whole rooms, created or joined since. On each
// new connection a node asks the peer about the open rooms it holds in
// which the peer is a member that created the room or has spoken since it
// was last admitted: it writes one frame {1: [room id text] (≤ 256; more
// rooms, more asks)}, and the peer answers {1: [room id text]}: the ones
// it has not open, or every one it does not know the asker to be a member
// of, so an outsider learns nothing. An ask that gets no answer, as from a
// node still starting, is made again up to 5 times while connected, 1 s,
// 2 s, 4 s … apart; a reset, a malformed answer, or a peer that serves
// sync and not /parley/held/1 (served first) ends it. For each room named,
// once, it sends an invite notice on /parley/invite/1 whose field 3 is the
// event that admitted the peer, 5 the create event (absent when field 3 is
// it) and 6 the peer's latest event in the room. The peer takes it only if
// 6 is its own, signed by its key, in that room, and not its leave (nor an
// agent's), 5 (or 3) founds the room and, when it did not create it, 3
// invites it, and only if it holds no record of the room (a room it left,
// was removed from or failed to open stays as recorded). The sender is the
// stream's peer: it is recorded as the inviter. A notice from an active
// contact trusted to invite opens the room provisionally at once; one from
// a stranger (a co-member the older copy does not know) or a co-member not
// trusted to invite waits for the user among the invites (told back), and
// opens it provisionally once accepted; a revoked, denied or expired
// contact is refused. A provisional room writes no record, is not listed or
// open to the API, and posts nothing; every teller heard is a source, and
// it catches up from them and from any member connected. When a catch-up
// from a member ends complete, the member is heard, and the room is judged
// at its state then: this node in (a member that spoke since its last
// admission) confirms it, writing its record, once every member node the
// room knows is heard (or, after ToldBackWait, every one connected: one
// stale member cannot confirm it alone); out, by a catch-up that brought
// events, with no other under way, drops it with nothing written, and that
// teller's evidence is refused while it stays connected. A catch-up that brings nothing decides nothing; a room
// unconfirmed after ProvisionalTTL is dropped. Provisional rooms are
// bounded per teller and in all. A notice without field 6 is capped as
// before (one event and a name). A provisional room is answered "lacks" on
// /parley/held/1, so every member tells it.
package rooms
