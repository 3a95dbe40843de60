package agents

import (
	"errors"
	"fmt"
)

// The sentinels that the service's operations wrap ("agents: register:
// ...") carry no "agents: " of their own, so that an error says its
// context once.
var (
	// ErrBadInput is returned when a registration, heartbeat or query has a
	// field the service cannot use (a bad name, role, capability, TTL...).
	ErrBadInput = errors.New("bad input")
	// ErrReservedName is returned when an agent would take the name of the
	// node's own user, identity.HumanAgent ("human"): that name is the
	// user's everywhere (their posts, what is owed to them, the rules
	// moderation will not put on them), so no agent may hold it. It is an
	// ErrBadInput.
	ErrReservedName = fmt.Errorf("%w: reserved name", ErrBadInput)
	// ErrNameTaken is returned when a name is held by another live session.
	ErrNameTaken = errors.New("name held by another session")
	// ErrUnknownAgent is returned when no live local agent has the name
	// (it was never registered, was unregistered, or was swept).
	ErrUnknownAgent = errors.New("no such agent")
	// ErrTooManyAgents is returned when a node already holds
	// discovery.MaxAgents agents.
	ErrTooManyAgents = errors.New("too many agents on this node")
	// ErrClosed is returned when the service has stopped.
	ErrClosed = errors.New("agents: closed")
	// ErrBadConfig is returned when the Config cannot be used.
	ErrBadConfig = errors.New("agents: bad config")
)
