// Package schema is the whole key schema of a Parley database. Every key any package writes is
// built by a function here, so the layout can be read in one place. Its version (Version) is
// kept beside the keys, in the database folder's parley.schema file (internal/store), so a
// Parley that does not know it refuses the folder before opening it.
//
//	m/node                             the peer ID (bytes) of the node whose database
//	                                   this is; a key of another identity is refused
//	m/journal                          epoch:8BE seq:8BE: the write journal's epoch and
//	                                   the number of the last write Badger holds of it
//	                                   (internal/store, written with every write)
//	m/card                             this node's signed node card as last handed to its
//	                                   peers (internal/names): a card changed across a
//	                                   restart is pushed to them
//	i/<room>                           rooms this node is in → metadata (JSON)
//	r/<room>/e/<id>                    depth:8BE then the event's wire bytes
//	r/<room>/o/<depth:8BE><id>         display-order index (value empty)
//	r/<room>/a/<author>/<seq:8BE>      author sequence index → event id
//	r/<room>/f/<author>/<seq:8BE><id>  an event that reuses a seq its author already
//	                                   used here (a fork: an older copy of the author's
//	                                   data, or equivocation); kept like any event, outside
//	                                   the sequence index and the version vector (value empty)
//	r/<room>/h/<id>                    current heads (value empty)
//	r/<room>/m/<peer>                  member nodes → id of admitting event
//	r/<room>/v/<author>                author → highest contiguous seq stored
//	r/<room>/l/<n:8BE>                 local arrival log: n-th event stored here → id
//	r/<room>/g/<agent>@<peer>          agent membership: depth:8BE id:32 in:1 arrival:8BE
//	                                   of the latest event (display order) that let the
//	                                   agent in (create, invite naming it, join, message,
//	                                   ask) or out (leave)
//	r/<room>/x/<peer>                  a node that left or was removed: cutoff:8BE
//	                                   admit:32 first:8BE back:1 (its events up to seq
//	                                   cutoff belong to the membership that admit began
//	                                   at seq first; back: invited again since)
//	w/<room>                           an invite from a node that is not a contact, waiting
//	                                   for the user's answer, or declined (JSON, rooms)
//	c/<peer>                           contact records (consent.Contact), in pieces
//	c/<peer><i:1>                      under the value threshold (SetPieces, pieces.go)
//	p/<peer>                           where a contact or room member was last reached:
//	                                   CBOR {t, a: [multiaddr]} (internal/reconnect)
//	o/r/<org><group:1><subject>        the newest organisation record (sealed, consent.OrgRecord)
//	                                   of one org, group (m: member/revoke, t: trust/untrust)
//	                                   and subject (internal/org)
//	o/c/<peer>                         a contact made through organisation trust → the org
//	o/o/<org>                          a membership of org a contact pushed, waiting for the
//	                                   user's answer: uvarint length, the pusher's peer ID, then
//	                                   the sealed records (consent.EncodeOrgRecords)
//	g/<agent>                          local agent registrations (JSON, internal/agents)
//	t/<agent>                          the agent's terminal wake route (JSON, internal/wake:
//	                                   the tmux socket, pane, its program's pid, the prompt
//	                                   and the session key), so a restarted node finds the
//	                                   panes of its `parley run` agents again
//	s/k/<session>                      agent session key → its agent's name and card (JSON,
//	                                   internal/agents; a bare name from older nodes)
//	s/a/<agent>/<cursor>/<room>        an agent's cursors: d (scanned for its pending
//	                                   items), r (messages shown to it)
//	n/<peer>                           a node's signed node card: its handle
//	n/<peer><i:1>                      (discovery.NodeCard, internal/names), in pieces
//	                                   under the value threshold (SetPieces, pieces.go)
//	k/<agent>@<peer>                   moderation: what holds for an agent (JSON,
//	                                   internal/moderation: muted, until, killed)
//	s/a/<agent>/<item>/<event id>      an agent's open items (JSON): o (an ask it owes),
//	                                   q (an ask it asked, until answered), n (a notice to
//	                                   show once: an invitation, or the reply to its ask)
//	s/a/<agent>/h/<token>              an open two-step hand-out of the agent's items,
//	                                   until confirmed (JSON, internal/inbox)
//	b/w/<len:1><agent><seq:8BE>        a refused claim the board watches, to tell its agent
//	b/w/<len:1><agent><seq:8BE><i:1>   when its paths go free (rooms/board): a CBOR map, in
//	                                   pieces under the value threshold (SetPieces,
//	                                   pieces.go); len counts agent and seq; seq orders an
//	                                   agent's watches by age
//	b/t/<len:1><digest:16>             a board notice told to an agent of this node, so it
//	b/t/<len:1><digest:16><i:1>        is not told again after a restart (rooms/board): a
//	                                   CBOR map of the notice ID and the expiry of its
//	                                   claim, written with SetPieces; digest is the first
//	                                   16 bytes of the ID's SHA-256 (an ID names a path,
//	                                   too long for a length byte)
//
// Pending events (parents not yet stored) live only in memory: catch-up sync
// fetches them again after a restart.
//
// <room> is the textual room ID; <id> the 32 raw bytes of an event ID;
// <author> and <peer> the raw bytes of a peer ID prefixed by one length byte.
package schema

import (
	"crypto/sha256"
	"encoding/binary"
)

// Version is the schema version, written in the database folder's
// parley.schema file. A change to a key's layout or a value's encoding that
// an older Parley would misread raises it. Schema 1 kept every value whole;
// schema 2 keeps contact records and node cards of more than PieceSize
// bytes in pieces (SetPieces), which a Parley of schema 1 would take for
// damaged records. Schema 2 reads schema 1's whole records as they are, so a
// folder of schema 1 is recorded as schema 2 once opened, with nothing else
// changed.
const Version = 2

// KeyNode is where the peer ID of the database's node lives.
func KeyNode() []byte { return []byte("m/node") }

// KeyJournal is where the write journal's position lives.
func KeyJournal() []byte { return []byte("m/journal") }

// KeyOwnCard is where this node's card as last handed to its peers lives.
func KeyOwnCard() []byte { return []byte("m/card") }

// KeyInvitesTold is where the time (Unix nanoseconds, by the wall clock)
// from which the inbox tells the node's user of node invites lives.
func KeyInvitesTold() []byte { return []byte("m/invites-told") }

func roomKey(room, sub string, extra ...[]byte) []byte {
	n := 2 + len(room) + 1 + len(sub)
	for _, e := range extra {
		n += len(e)
	}
	b := make([]byte, 0, n)
	b = append(b, "r/"...)
	b = append(b, room...)
	b = append(b, '/')
	b = append(b, sub...)
	for _, e := range extra {
		b = append(b, e...)
	}
	return b
}

// PeerBytes encodes a raw peer ID with a length prefix so that keys holding
// peers sort and split unambiguously.
func PeerBytes(p []byte) []byte {
	return append([]byte{byte(len(p))}, p...)
}

// BE8 is an 8-byte big-endian number.
func BE8(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// RoomPrefix is the prefix of every key of a room.
func RoomPrefix(room string) []byte { return roomKey(room, "") }

// RoomIndex is a room's entry in the list of rooms this node is in.
func RoomIndex(room string) []byte { return append([]byte("i/"), room...) }

// RoomIndexPrefix is the prefix of the room list.
func RoomIndexPrefix() []byte { return []byte("i/") }

// RoomEvent is an event's wire bytes.
func RoomEvent(room string, id []byte) []byte { return roomKey(room, "e/", id) }

// RoomOrderPrefix is the prefix of the display-order index.
func RoomOrderPrefix(room string) []byte { return roomKey(room, "o/") }

// RoomOrder is one display-order index entry.
func RoomOrder(room string, depth uint64, id []byte) []byte {
	return roomKey(room, "o/", BE8(depth), id)
}

// RoomAuthorPrefix is the prefix of one author's sequence index.
func RoomAuthorPrefix(room string, author []byte) []byte {
	return roomKey(room, "a/", PeerBytes(author))
}

// RoomAuthorsPrefix is the prefix of every author's sequence index.
func RoomAuthorsPrefix(room string) []byte { return roomKey(room, "a/") }

// RoomAuthorSeq maps (author, seq) to an event ID.
func RoomAuthorSeq(room string, author []byte, seq uint64) []byte {
	return roomKey(room, "a/", PeerBytes(author), BE8(seq))
}

// RoomForkPrefix is the prefix of a room's fork index.
func RoomForkPrefix(room string) []byte { return roomKey(room, "f/") }

// RoomFork is one event that reuses its author's seq.
func RoomFork(room string, author []byte, seq uint64, id []byte) []byte {
	return roomKey(room, "f/", PeerBytes(author), BE8(seq), id)
}

// RoomHeadPrefix is the prefix of the heads set a store written before
// tips (RoomTip) keeps; read once, then deleted.
func RoomHeadPrefix(room string) []byte { return roomKey(room, "h/") }

// RoomHead is one head of a store written before tips.
func RoomHead(room string, id []byte) []byte { return roomKey(room, "h/", id) }

// RoomTip is a room's heads and version vector as of one arrival; the
// events that arrived after it give the rest (rooms, tip.go).
func RoomTip(room string) []byte { return roomKey(room, "t") }

// RoomMemberPrefix is the prefix of the member set.
func RoomMemberPrefix(room string) []byte { return roomKey(room, "m/") }

// RoomMember is one member node.
func RoomMember(room string, p []byte) []byte { return roomKey(room, "m/", PeerBytes(p)) }

// RoomArrivalPrefix is the prefix of a room's local arrival log.
func RoomArrivalPrefix(room string) []byte { return roomKey(room, "l/") }

// RoomArrival is the n-th event this node stored in a room.
func RoomArrival(room string, n uint64) []byte { return roomKey(room, "l/", BE8(n)) }

// RoomVVPrefix is the prefix of the version vector a store written
// before tips (RoomTip) keeps; read once, then deleted.
func RoomVVPrefix(room string) []byte { return roomKey(room, "v/") }

// RoomVV is one author's highest contiguous seq, in a store written
// before tips.
func RoomVV(room string, author []byte) []byte { return roomKey(room, "v/", PeerBytes(author)) }

// RoomAgentPrefix is the prefix of a room's agent membership records.
func RoomAgentPrefix(room string) []byte { return roomKey(room, "g/") }

// RoomAgent is the membership record of one agent (NAME@PEER_ID).
func RoomAgent(room, addr string) []byte { return roomKey(room, "g/", []byte(addr)) }

// RoomOutPrefix is the prefix of a room's records of nodes that left.
func RoomOutPrefix(room string) []byte { return roomKey(room, "x/") }

// RoomOut is the record of a node that left the room or was removed.
func RoomOut(room string, p []byte) []byte { return roomKey(room, "x/", PeerBytes(p)) }

// RoomsPrefix is the prefix of every room key.
func RoomsPrefix() []byte { return []byte("r/") }

// WaitingInvite is an invite waiting for the user's answer (rooms).
func WaitingInvite(room string) []byte { return append([]byte("w/"), room...) }

// WaitingInvitePrefix is the prefix of every waiting invite.
func WaitingInvitePrefix() []byte { return []byte("w/") }

// Contact is one contact record.
func Contact(p []byte) []byte { return append([]byte("c/"), PeerBytes(p)...) }

// ContactPrefix is the prefix of every contact record.
func ContactPrefix() []byte { return []byte("c/") }

// PeerAddrs is the record of where a peer was last reached (internal/reconnect).
func PeerAddrs(p []byte) []byte { return append([]byte("p/"), PeerBytes(p)...) }

// PeerAddrsPrefix is the prefix of every peer address record.
func PeerAddrsPrefix() []byte { return []byte("p/") }

// OrgRecord is the newest organisation record of (org, group, subject).
func OrgRecord(org []byte, group byte, subj []byte) []byte {
	k := append([]byte("o/r/"), PeerBytes(org)...)
	k = append(k, group)
	return append(k, PeerBytes(subj)...)
}

// OrgRecordPrefix is the prefix of every organisation record.
func OrgRecordPrefix() []byte { return []byte("o/r/") }

// OrgContact tags a contact made through organisation trust.
func OrgContact(p []byte) []byte { return append([]byte("o/c/"), PeerBytes(p)...) }

// OrgContactPrefix is the prefix of every organisation contact tag.
func OrgContactPrefix() []byte { return []byte("o/c/") }

// OrgOffer is a membership of org pushed to this node, waiting for its user.
func OrgOffer(org []byte) []byte { return append([]byte("o/o/"), PeerBytes(org)...) }

// OrgOfferPrefix is the prefix of every membership waiting for the user.
func OrgOfferPrefix() []byte { return []byte("o/o/") }

// LocalAgent is one local agent registration (internal/agents).
func LocalAgent(agent string) []byte { return append([]byte("g/"), agent...) }

// Terminal is an agent's terminal wake route (a `parley run` pane).
func Terminal(agent string) []byte { return append([]byte("t/"), agent...) }

// TerminalPrefix is the prefix of every terminal wake route.
func TerminalPrefix() []byte { return []byte("t/") }

// LocalAgentPrefix is the prefix of every local agent registration.
func LocalAgentPrefix() []byte { return []byte("g/") }

// NodeCard is a node's signed card (its handle).
func NodeCard(p []byte) []byte { return append([]byte("n/"), PeerBytes(p)...) }

// NodeCardPrefix is the prefix of every node card.
func NodeCardPrefix() []byte { return []byte("n/") }

// Moderation is what holds for one agent (NAME@PEER_ID): muted, killed.
func Moderation(addr string) []byte { return append([]byte("k/"), addr...) }

// ModerationPrefix is the prefix of every moderation record.
func ModerationPrefix() []byte { return []byte("k/") }

// Session maps an agent session key to its agent name.
func Session(key string) []byte { return append([]byte("s/k/"), key...) }

// AgentCursor is one of an agent's per-room cursors ("d", "r" or "x").
func AgentCursor(agent, cursor, room string) []byte {
	return []byte("s/a/" + agent + "/" + cursor + "/" + room)
}

// AgentCursorPrefix is the prefix of one kind of an agent's cursors.
func AgentCursorPrefix(agent, cursor string) []byte {
	return []byte("s/a/" + agent + "/" + cursor + "/")
}

// AgentItem is one of an agent's open items ("o", "q" or "n") by event ID,
// or an open hand-out ("h") by its token.
func AgentItem(agent, kind, id string) []byte {
	return []byte("s/a/" + agent + "/" + kind + "/" + id)
}

// AgentPrefix is the prefix of every key of one agent.
func AgentPrefix(agent string) []byte { return []byte("s/a/" + agent + "/") }

// BoardWatch is the key of the record of agent's board watch seq, kept
// with SetPieces: b/w/, a length byte counting agent and seq, agent,
// seq:8BE. Its pieces are one byte longer, as Joiner reads them; an
// agent's watches sort by seq. agent is at most 247 bytes.
func BoardWatch(agent string, seq uint64) []byte {
	return append(BoardWatchPrefix(), PeerBytes(append([]byte(agent), BE8(seq)...))...)
}

// BoardWatchPrefix is the prefix of every board watch.
func BoardWatchPrefix() []byte { return []byte("b/w/") }

// Op is one write in an atomic batch: a set, or a delete when Delete is true.
type Op struct {
	Key, Val []byte
	Delete   bool
}

// BoardTold is the key of the record of a board notice told, by its ID:
// the first 16 bytes of the ID's SHA-256, with a length byte as
// PeerBytes gives (so SetPieces can keep the record in pieces).
func BoardTold(id string) []byte {
	sum := sha256.Sum256([]byte(id))
	return append(BoardToldPrefix(), PeerBytes(sum[:16])...)
}

// BoardToldPrefix is the prefix of every board notice told.
func BoardToldPrefix() []byte { return []byte("b/t/") }
