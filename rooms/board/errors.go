package board

import (
	"errors"
	"fmt"

	"github.com/parley-mesh/parley/rooms"
)

var (
	// ErrBadInput is returned when a path, note, TTL or project key is not
	// acceptable.
	ErrBadInput = errors.New("board: bad input")
	// ErrMalformed is returned when a claim or release body cannot be decoded.
	ErrMalformed = errors.New("board: malformed body")
	// ErrConflict is returned when a claim overlaps another agent's live claim.
	ErrConflict = errors.New("board: claimed by another agent")
	// ErrNotHeld is returned when an agent releases a path it does not hold.
	ErrNotHeld = errors.New("board: not held")
	// ErrNodeWeight is returned (with ErrBadInput) for a claim that would
	// take this node's claims past MaxNodeWeight, or a release its
	// releases past MaxNodeReleaseWeight: every node would ignore it.
	ErrNodeWeight = errors.New("board: this node's claims weigh too much")
	// ErrClosed is returned after the service stopped.
	ErrClosed = errors.New("board: closed")

	// errNotInYet: the node's only board rooms of a project are rooms it
	// opened on an invite whose event it has not stored yet.
	errNotInYet = fmt.Errorf("board: %w", rooms.ErrNotMember)
)
