package rooms

import (
	"errors"
	"fmt"

	"github.com/parley-mesh/parley/identity"
)

var (
	// ErrTooLarge is returned when an event, a body, an address or a sync
	// frame is larger than its limit.
	ErrTooLarge = errors.New("rooms: too large")
	// ErrMalformed is returned when bytes do not decode as the expected
	// structure, or a field has the wrong type, length or syntax.
	ErrMalformed = errors.New("rooms: malformed")
	// ErrNonCanonical is returned when an event or its wire form is valid CBOR
	// but not in the one canonical encoding (so it would have a second ID).
	ErrNonCanonical = errors.New("rooms: non-canonical encoding")
	// ErrBadVersion is returned when an event has a version this node does not know.
	ErrBadVersion = errors.New("rooms: unknown event version")
	// ErrBadKind is returned when an event has a kind this node does not know.
	ErrBadKind = errors.New("rooms: unknown event kind")
	// ErrBadSignature is returned when an event's signature does not verify
	// against its author. It wraps identity.ErrBadSignature.
	ErrBadSignature = fmt.Errorf("rooms: bad event signature: %w", identity.ErrBadSignature)
	// ErrBadAuthor is returned when an event's author is not an Ed25519 peer
	// ID, or (by Seal) when it does not match the signing key.
	ErrBadAuthor = errors.New("rooms: bad event author")
	// ErrBadSeq is returned when an event's sequence number is zero.
	ErrBadSeq = errors.New("rooms: bad event sequence number")
	// ErrTooManyParents is returned when an event has more than MaxParents parents.
	ErrTooManyParents = errors.New("rooms: too many parents")
	// ErrBadParents is returned when an event's parents are unsorted or
	// repeated, when a create event has parents, or another event has none.
	ErrBadParents = errors.New("rooms: bad parents")
	// ErrBadDepth is returned when an event's depth is out of range, does not
	// fit its kind, or is not its parents' maximum depth plus one.
	ErrBadDepth = errors.New("rooms: bad depth")
	// ErrNotInvite is returned when an invite target is asked of an event
	// that is not an invite.
	ErrNotInvite = errors.New("rooms: not an invite")
)

// Errors of rooms as a running service.
var (
	// ErrUnknownRoom is returned when a room is not one this node is in.
	ErrUnknownRoom = errors.New("rooms: unknown room")
	// ErrNotMember is returned when an event's author (or this node, when
	// it tries to speak) is not a member of the room in the event's causal past.
	ErrNotMember = errors.New("rooms: not a member")
	// ErrEquivocation is returned when an author reuses a seq for a
	// different event.
	ErrEquivocation = errors.New("rooms: seq reused by its author")
	// ErrSeqGap is returned when an author skips a seq.
	ErrSeqGap = errors.New("rooms: seq skipped by its author")
	// ErrBadCreate is returned when a create event does not found the room
	// whose ID it carries.
	ErrBadCreate = errors.New("rooms: bad create event")
	// ErrInviteRefused is returned when an invite may not be sent or is
	// refused by the invitee.
	ErrInviteRefused = errors.New("rooms: invite refused")
	// ErrNotToldYet is returned, with the invite's event, when the invite
	// is in the room but the invitee's node could not be reached to be
	// told of it: it is told when the two nodes connect.
	ErrNotToldYet = errors.New("rooms: the invited node could not be told yet")
	// ErrNoConsent is returned when the node's policy refuses an event's
	// author (a revoked or expired contact).
	ErrNoConsent = errors.New("rooms: author not allowed by this node")
	// ErrUnknownEvent is returned when an event is not stored on this node.
	ErrUnknownEvent = errors.New("rooms: unknown event")
	// errNotStored is an event a room's records name that its store does
	// not hold (ErrMalformed where it must be there).
	errNotStored = fmt.Errorf("%w", ErrMalformed)
	// ErrAmbiguousID is returned when a shortened event ID fits several
	// events.
	ErrAmbiguousID = errors.New("rooms: ambiguous event id")
	// ErrClosed is returned when the rooms service has stopped.
	ErrClosed = errors.New("rooms: closed")
	// ErrTextTooLong is returned when a message text is over MaxBody bytes.
	ErrTextTooLong = errors.New("rooms: text too long")
	// ErrAgentLeft is returned when an agent that left a room speaks in it.
	ErrAgentLeft = errors.New("rooms: agent left the room")
	// ErrNotCreator is returned when a node other than a room's creator
	// removes a member.
	ErrNotCreator = errors.New("rooms: only the room's creator may do that")
	// ErrRoomTooOld is returned for what a room created before its rule
	// began does not follow (AgentRemovalSince).
	ErrRoomTooOld = errors.New("rooms: the room is older than this rule")
	// ErrCorrupt is returned when a stored event cannot be read or does not
	// match its ID (the database is damaged). The room fetches it again
	// from its members.
	ErrCorrupt = errors.New("rooms: a stored event is damaged; fetching it again from the room's members")
	// ErrOwnEventsUnknown is returned when this node posts in a room, after
	// it started, before any member answered what it holds of this node's
	// own events (so its next seq is not known yet).
	ErrOwnEventsUnknown = errors.New("rooms: learning my own events from peers, retry in a moment")
	// ErrSentNotStored is returned by a post whose event is in the room
	// but whose write or fsync on this node failed: it went out to the
	// members before the write (or, written but not fsynced, it is shown
	// and goes out once a later fsync commits it), and the node stores it
	// with a later write (after a restart, it learns it back from a
	// member); until then the room refuses posts that would take its seq.
	// Posting it again would post it twice. The error names the event.
	ErrSentNotStored = errors.New("rooms: the post is in the room and goes to its members, but this node could not store it safely yet (it will with a later write); do not post it again")
	// ErrStranger is wrapped by a Policy's refusal when it refuses a peer
	// only because it does not know it (no contact, no shared room), not
	// because the user cut it off. A room still takes its founder's create
	// event from a stranger: the room's rules make the founder a member.
	ErrStranger = errors.New("rooms: peer unknown to this node")
	// ErrNoProgress is returned when a sync round brought events of which
	// none could be stored (all refused): the room backs off from that peer
	// instead of fetching the same events again.
	ErrNoProgress = errors.New("rooms: sync made no progress")
	// ErrProvisional is returned by a post in a room told back to this
	// node that no catch-up has yet shown this node in (retell.go).
	ErrProvisional = errors.New("rooms: room told back to this node, not confirmed by a member yet")
)
