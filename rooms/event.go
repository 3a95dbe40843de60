package rooms

import (
	"bytes"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/canon"
)

// Limits of the event format (version 1). Changing any of them changes
// which events a node accepts, so they are part of the protocol.
const (
	// Version is the only event version this package reads and writes.
	Version = 1
	// MaxBody is the largest event body, in bytes.
	MaxBody = 64 << 10
	// MaxParents is the largest number of parents of one event.
	MaxParents = 20
	// MaxDepth is the largest event depth (2^40 - 1).
	MaxDepth = 1<<40 - 1
	// MaxTo is the longest To address, in bytes.
	MaxTo = 256
	// MaxWire is the largest signed wire form of an event. Decode refuses
	// anything longer before decoding it.
	MaxWire = 80 << 10
)

// ID names an event: the SHA-256 of its signed wire bytes.
type ID [32]byte

// idEnc is lower-case base32 (RFC 4648 alphabet) without padding.
var idEnc = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// idLen is the length of an ID's string form.
var idLen = idEnc.EncodedLen(len(ID{}))

// String returns the ID as 52 characters of lower-case base32 without padding.
func (id ID) String() string { return idEnc.EncodeToString(id[:]) }

// MarshalText implements encoding.TextMarshaler with the String form.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseID.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// ParseID parses the String form of an ID. Only the canonical form is
// accepted: lower case, no padding, unused trailing bits zero.
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != idLen {
		return id, fmt.Errorf("%w: event id %.60q: want %d characters", ErrMalformed, s, idLen)
	}
	n, err := idEnc.Decode(id[:], []byte(s))
	if err != nil || n != len(id) || idEnc.EncodeToString(id[:]) != s {
		return ID{}, fmt.Errorf("%w: event id %q: not lower-case base32", ErrMalformed, s)
	}
	return id, nil
}

// Compare orders IDs by their bytes; it returns -1, 0 or +1.
func (id ID) Compare(other ID) int { return bytes.Compare(id[:], other[:]) }

// SortIDs sorts ids and removes duplicates in place, giving the order that
// Event.Parents must have. It returns the shortened slice.
func SortIDs(ids []ID) []ID {
	slices.SortFunc(ids, ID.Compare)
	return slices.Compact(ids)
}

// Kind says what an event does.
type Kind string

// The kinds of version 1. Any other kind is refused with ErrBadKind.
const (
	// KindCreate is the first event of a room, by its creator's node.
	KindCreate Kind = "create"
	// KindInvite admits a node to the room; the body is the invited peer ID.
	KindInvite Kind = "invite"
	// KindJoin says that an agent of a member node joins the room.
	KindJoin Kind = "join"
	// KindLeave says that an agent leaves the room.
	KindLeave Kind = "leave"
	// KindMessage is something an agent says; the body is UTF-8 text.
	KindMessage Kind = "message"
	// KindAsk is a question an agent asks; the body is UTF-8 text. With To
	// it is owed by that agent, without To by every member agent but the
	// asker, until a message or ask replies to it.
	KindAsk Kind = "ask"
	// KindClaim puts paths on a board room: the body is the claim as
	// package rooms/board encodes it (rooms stores it as it is).
	KindClaim Kind = "claim"
	// KindRelease takes an agent's claims off a board room; the body is
	// encoded by package rooms/board.
	KindRelease Kind = "release"
)

func (k Kind) known() bool {
	switch k {
	case KindCreate, KindInvite, KindJoin, KindLeave, KindMessage, KindAsk, KindClaim, KindRelease:
		return true
	}
	return false
}

// Event is one entry of a room's causal DAG, as its author's node signed it.
// See the package documentation for the rules each field obeys.
type Event struct {
	V       int                // format version: Version
	Room    identity.RoomID    // the room this event belongs to
	Author  peer.ID            // the signing node (Ed25519 peer ID)
	Agent   identity.AgentName // the agent of Author's node that speaks
	Seq     uint64             // per (room, author node): 1, 2, 3, … without gaps
	Parents []ID               // the author's heads: ≤ MaxParents, sorted, unique
	Depth   uint64             // max parent depth + 1; 1 for create
	Time    int64              // author's clock, unix milliseconds, ≥ 0
	Kind    Kind               // what the event does
	Body    []byte             // ≤ MaxBody; see Kind
	ReplyTo *ID                // optional: the event this one answers
	To      string             // optional: agent address NAME or NAME@PEER
}

// InviteTarget returns the peer invited by an invite event.
func (e *Event) InviteTarget() (peer.ID, error) {
	if e.Kind != KindInvite {
		return "", fmt.Errorf("%w: kind %q", ErrNotInvite, e.Kind)
	}
	p, err := peer.IDFromBytes(e.Body)
	if err != nil {
		return "", fmt.Errorf("%w: invite target: %v", ErrMalformed, err)
	}
	return p, nil
}

// CheckDepth checks that e.Depth is the maximum of parentDepths plus one, so
// that an author cannot lie about its place in the display order.
// parentDepths must hold the stored depth of each of e.Parents.
func (e *Event) CheckDepth(parentDepths []uint64) error {
	if len(parentDepths) != len(e.Parents) {
		return fmt.Errorf("%w: %d parent depths for %d parents", ErrBadDepth, len(parentDepths), len(e.Parents))
	}
	var top uint64
	for _, d := range parentDepths {
		top = max(top, d)
	}
	if top >= MaxDepth || e.Depth != top+1 {
		return fmt.Errorf("%w: lying depth %d, parents' maximum is %d", ErrBadDepth, e.Depth, top)
	}
	return nil
}

// eventPayload is the signed CBOR form of an Event. Its keys are small
// integers; zero values are left out, so each Event has one encoding.
type eventPayload struct {
	V       uint64   `cbor:"1,keyasint,omitempty"`
	Room    string   `cbor:"2,keyasint,omitempty"`
	Author  []byte   `cbor:"3,keyasint,omitempty"`
	Agent   string   `cbor:"4,keyasint,omitempty"`
	Seq     uint64   `cbor:"5,keyasint,omitempty"`
	Parents [][]byte `cbor:"6,keyasint,omitempty"`
	Depth   uint64   `cbor:"7,keyasint,omitempty"`
	Time    int64    `cbor:"8,keyasint,omitempty"`
	Kind    string   `cbor:"9,keyasint,omitempty"`
	Body    []byte   `cbor:"10,keyasint,omitempty"`
	ReplyTo []byte   `cbor:"11,keyasint,omitempty"`
	To      string   `cbor:"12,keyasint,omitempty"`
}

// signedEvent is the wire form of an event: the payload bytes and the
// author's signature over them (domain identity.DomainRoomEvent).
type signedEvent struct {
	Payload []byte `cbor:"1,keyasint"`
	Sig     []byte `cbor:"2,keyasint"`
}

var (
	// encMode is CBOR core deterministic encoding (RFC 8949 §4.2.1).
	encMode = canon.Enc
	// eventDec refuses everything an event never contains.
	eventDec = canon.StrictDec(64)
)

// Seal signs e with priv and returns its wire bytes and ID. e.Author must be
// priv's peer ID and e.Parents sorted and unique (see SortIDs); e.V may be
// left zero and is then set to Version. Seal refuses any event that Decode
// would refuse.
func Seal(priv crypto.PrivKey, e *Event) (wire []byte, id ID, err error) {
	wire, id, err = seal(priv, e)
	if err != nil {
		return nil, ID{}, fmt.Errorf("rooms: seal event: %w", err)
	}
	return wire, id, nil
}

func seal(priv crypto.PrivKey, e *Event) ([]byte, ID, error) {
	if priv == nil || e == nil {
		return nil, ID{}, fmt.Errorf("%w: nil key or event", ErrMalformed)
	}
	if e.V == 0 {
		e.V = Version
	}
	self, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		return nil, ID{}, fmt.Errorf("%w: %v", ErrBadAuthor, err)
	}
	if self != e.Author {
		return nil, ID{}, fmt.Errorf("%w: author %s is not the signing key %s", ErrBadAuthor, e.Author, self)
	}
	if err := e.validate(); err != nil {
		return nil, ID{}, err
	}
	payload, err := encMode.Marshal(e.payload())
	if err != nil {
		return nil, ID{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	sig, err := identity.Sign(priv, identity.DomainRoomEvent, payload)
	if err != nil {
		return nil, ID{}, err
	}
	wire, err := encMode.Marshal(signedEvent{Payload: payload, Sig: sig})
	if err != nil {
		return nil, ID{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if len(wire) > MaxWire {
		return nil, ID{}, fmt.Errorf("%w: event is %d bytes, limit %d", ErrTooLarge, len(wire), MaxWire)
	}
	return wire, sha256.Sum256(wire), nil
}

// Decode checks and decodes an event's wire bytes and returns it with its
// ID. It refuses input over MaxWire bytes before decoding, any encoding but
// the canonical one, unknown versions and kinds, broken limits, and a
// signature that is not the author's. It does not check what needs the room's
// history: that parents are stored, CheckDepth, seq contiguity, membership.
// The returned event shares no memory with wire; an empty Body or Parents
// decodes as nil.
func Decode(wire []byte) (*Event, ID, error) {
	e, err := decode(wire)
	if err != nil {
		return nil, ID{}, fmt.Errorf("rooms: decode event: %w", err)
	}
	return e, sha256.Sum256(wire), nil
}

// decodeStored decodes an event this node stored itself after Decode had
// checked it: it skips the canonical-form and signature checks, which cost
// most of Decode's time, for reads of the room log.
func decodeStored(wire []byte) (*Event, error) {
	if payload, _, ok := parseSigned(wire); ok {
		if p, ok := parsePayload(payload); ok {
			return p.event()
		}
	}
	var s signedEvent
	if err := eventDec.Unmarshal(wire, &s); err != nil {
		return nil, fmt.Errorf("rooms: stored event: %w", cborErr(err))
	}
	var p eventPayload
	if err := eventDec.Unmarshal(s.Payload, &p); err != nil {
		return nil, fmt.Errorf("rooms: stored event: %w", cborErr(err))
	}
	return p.event()
}

func decode(wire []byte) (*Event, error) {
	if len(wire) > MaxWire {
		return nil, fmt.Errorf("%w: event is %d bytes, limit %d", ErrTooLarge, len(wire), MaxWire)
	}
	// The canonical bytes every honest node sends take the fast path
	// (eventwire.go); the general one decodes anything else, or says why not.
	payload, sig, ok := parseSigned(wire)
	var p eventPayload
	if ok {
		p, ok = parsePayload(payload)
	}
	if !ok {
		var err error
		if payload, sig, p, err = decodeGeneral(wire); err != nil {
			return nil, err
		}
	}
	e, err := p.event()
	if err != nil {
		return nil, err
	}
	if err := e.validate(); err != nil {
		return nil, err
	}
	pub, err := authorKey(e.Author) // validate checked it
	if err != nil {
		return nil, err
	}
	if err := identity.VerifyKey(pub, identity.DomainRoomEvent, payload, sig); err != nil {
		return nil, fmt.Errorf("%w: not signed by %s", ErrBadSignature, e.Author)
	}
	return e, nil
}

// decodeGeneral decodes an event's wire bytes with the CBOR library and
// checks that they are the canonical encoding of what it decoded.
func decodeGeneral(wire []byte) (payload, sig []byte, p eventPayload, err error) {
	var s signedEvent
	if err := eventDec.Unmarshal(wire, &s); err != nil {
		return nil, nil, p, fmt.Errorf("wire: %w", cborErr(err))
	}
	if err := canonical(wire, s); err != nil {
		return nil, nil, p, fmt.Errorf("wire: %w", err)
	}
	if err := eventDec.Unmarshal(s.Payload, &p); err != nil {
		return nil, nil, p, fmt.Errorf("payload: %w", cborErr(err))
	}
	if err := canonical(s.Payload, p); err != nil {
		return nil, nil, p, fmt.Errorf("payload: %w", err)
	}
	return s.Payload, s.Sig, p, nil
}

// canonical checks that b is exactly the deterministic encoding of v.
func canonical(b []byte, v any) error {
	again, err := encMode.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if !bytes.Equal(again, b) {
		return ErrNonCanonical
	}
	return nil
}

func (e *Event) payload() eventPayload {
	p := eventPayload{
		V:      uint64(e.V),
		Room:   string(e.Room),
		Author: []byte(e.Author),
		Agent:  string(e.Agent),
		Seq:    e.Seq,
		Depth:  e.Depth,
		Time:   e.Time,
		Kind:   string(e.Kind),
		Body:   e.Body,
		To:     e.To,
	}
	if len(e.Parents) > 0 {
		p.Parents = make([][]byte, len(e.Parents))
		for i := range e.Parents {
			p.Parents[i] = e.Parents[i][:]
		}
	}
	if e.ReplyTo != nil {
		p.ReplyTo = e.ReplyTo[:]
	}
	return p
}

// event converts the decoded payload, checking field lengths; validate
// checks the rest.
func (p *eventPayload) event() (*Event, error) {
	if p.V != Version {
		return nil, fmt.Errorf("%w: %d", ErrBadVersion, p.V)
	}
	author, err := peer.IDFromBytes(p.Author)
	if err != nil {
		return nil, fmt.Errorf("%w: author: %v", ErrBadAuthor, err)
	}
	e := &Event{
		V:      int(p.V),
		Room:   identity.RoomID(p.Room),
		Author: author,
		Agent:  identity.AgentName(p.Agent),
		Seq:    p.Seq,
		Depth:  p.Depth,
		Time:   p.Time,
		Kind:   Kind(p.Kind),
		Body:   p.Body,
		To:     p.To,
	}
	if len(p.Parents) > MaxParents {
		return nil, fmt.Errorf("%w: %d, limit %d", ErrTooManyParents, len(p.Parents), MaxParents)
	}
	if len(p.Parents) > 0 {
		e.Parents = make([]ID, len(p.Parents))
		for i, b := range p.Parents {
			if len(b) != len(ID{}) {
				return nil, fmt.Errorf("%w: parent %d is %d bytes", ErrMalformed, i, len(b))
			}
			e.Parents[i] = ID(b)
		}
	}
	if p.ReplyTo != nil {
		if len(p.ReplyTo) != len(ID{}) {
			return nil, fmt.Errorf("%w: reply_to is %d bytes", ErrMalformed, len(p.ReplyTo))
		}
		r := ID(p.ReplyTo)
		e.ReplyTo = &r
	}
	return e, nil
}

// validate checks every rule that needs nothing but the event itself.
func (e *Event) validate() error {
	if e.V != Version {
		return fmt.Errorf("%w: %d", ErrBadVersion, e.V)
	}
	if _, err := identity.ParseRoomID(string(e.Room)); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if _, err := authorKey(e.Author); err != nil {
		return err
	}
	if _, err := identity.ParseAgentName(string(e.Agent)); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if e.Seq == 0 {
		return fmt.Errorf("%w: 0", ErrBadSeq)
	}
	if !e.Kind.known() {
		return fmt.Errorf("%w: %.40q", ErrBadKind, e.Kind)
	}
	if e.Time < 0 {
		return fmt.Errorf("%w: negative time %d", ErrMalformed, e.Time)
	}
	if err := e.validateDAG(); err != nil {
		return err
	}
	if len(e.Body) > MaxBody {
		return fmt.Errorf("%w: body is %d bytes, limit %d", ErrTooLarge, len(e.Body), MaxBody)
	}
	switch e.Kind {
	case KindMessage, KindAsk:
		if !utf8.Valid(e.Body) {
			return fmt.Errorf("%w: %s body is not UTF-8", ErrMalformed, e.Kind)
		}
	case KindInvite:
		if _, err := e.InviteTarget(); err != nil {
			return err
		}
	case KindLeave:
		if _, _, err := e.LeaveTarget(); err != nil {
			return err
		}
	}
	if e.To != "" {
		if len(e.To) > MaxTo {
			return fmt.Errorf("%w: to is %d bytes, limit %d", ErrTooLarge, len(e.To), MaxTo)
		}
		a, err := identity.ParseAgentAddr(e.To)
		if err != nil {
			return fmt.Errorf("%w: to: %w", ErrMalformed, err)
		}
		if a.String() != e.To {
			return fmt.Errorf("%w: to %q is not canonical (want %q)", ErrMalformed, e.To, a.String())
		}
	}
	return nil
}

// validateDAG checks seq, parents and depth against the kind.
func (e *Event) validateDAG() error {
	if len(e.Parents) > MaxParents {
		return fmt.Errorf("%w: %d, limit %d", ErrTooManyParents, len(e.Parents), MaxParents)
	}
	for i := 1; i < len(e.Parents); i++ {
		if e.Parents[i-1].Compare(e.Parents[i]) >= 0 {
			return fmt.Errorf("%w: not sorted and unique at %d", ErrBadParents, i)
		}
	}
	if e.Depth == 0 || e.Depth > MaxDepth {
		return fmt.Errorf("%w: %d not in [1, %d]", ErrBadDepth, e.Depth, uint64(MaxDepth))
	}
	if e.Kind == KindCreate {
		if len(e.Parents) != 0 {
			return fmt.Errorf("%w: create has %d parents", ErrBadParents, len(e.Parents))
		}
		if e.Depth != 1 {
			return fmt.Errorf("%w: create has depth %d", ErrBadDepth, e.Depth)
		}
		if e.Seq != 1 {
			return fmt.Errorf("%w: create has seq %d", ErrBadSeq, e.Seq)
		}
		return nil
	}
	if len(e.Parents) == 0 {
		return fmt.Errorf("%w: %s has no parents", ErrBadParents, e.Kind)
	}
	if e.Depth < 2 {
		return fmt.Errorf("%w: %s has depth %d", ErrBadDepth, e.Kind, e.Depth)
	}
	return nil
}
