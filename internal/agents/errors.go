package agents

import "errors"

var (
	// ErrBadInput is returned when a registration, heartbeat or query has a
	// field the service cannot use (a bad name, role, capability, TTL...).
	ErrBadInput = errors.New("bad input")
	// ErrNameTaken is returned when a name is held by another live session.
	ErrNameTaken = errors.New("agents: name held by another session")
	// ErrUnknownAgent is returned when no live local agent has the name
	// (it was never registered, was unregistered, or was swept).
	ErrUnknownAgent = errors.New("agents: no such agent")
	// ErrTooManyAgents is returned when a node already holds
	// discovery.MaxAgents agents.
	ErrTooManyAgents = errors.New("agents: too many agents on this node")
	// ErrClosed is returned when the service has stopped.
	ErrClosed = errors.New("agents: closed")
	// ErrBadConfig is returned when the Config cannot be used.
	ErrBadConfig = errors.New("agents: bad config")
)
