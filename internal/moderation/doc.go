// Package moderation holds a user's say over agents: which of the node's
// own agents may post (mute for a while, kill until revived), how fast
// each may post (a per-agent limit), and which agents of other nodes are
// hidden from this node's agents (mute of a contact's agent).
//
// It decides; others enforce. The agent edge (internal/inbox) asks
// CheckPost before it posts an agent's message or ask, the node's board
// before it puts an agent's claim on a board, and Hidden before it shows
// or hands an event to an agent; a hidden agent's events are still
// stored (the room stays one log). The node ends a killed agent's
// registration and session binding.
//
// Every decision a person makes (mute, unmute, kill, revive) passes through
// one hook, Config.Audit, which the node points at its audit log.
//
// # Store
//
// One JSON record per agent address (NAME@PEER_ID) under
// schema.Moderation: {"muted_until"?, "muted", "killed", "by", "at"}. A
// record is dropped once nothing holds (unmuted and not killed).
package moderation
