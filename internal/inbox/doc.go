// Package inbox is the node's agent edge: what local agents do through
// their node (open rooms, invite, say, ask, reply, read, leave) and what
// each one has yet to see. It implements the local API's Edge and Rooms
// (internal/localapi) over the rooms service, and speaks the API's
// vocabulary.
//
// # What an agent has yet to see
//
// Each agent's pending items are, in order: the asks it owes, invitations
// into rooms, replies to its own asks, and unread messages of the rooms it
// is in (rooms.Manager.Agents: created, invited by name, joined, spoke; not
// left).
//
//   - An ask (rooms.KindAsk) with To naming the agent, or without To in a
//     room it is in (every member agent but the asker owes it), is owed
//     until a message or ask replies to it (the first reply, from anyone but
//     the asker), it expires (Config.AskTTL after it was asked), or the agent
//     dismisses it. It is shown in full once, then as a reminder on every
//     later take.
//   - An invitation is an invite event naming the agent; a reply is the
//     first reply to an ask of the agent's. Each is shown once; an
//     invitation not shown yet is dropped once the agent is out of the room
//     (removed, left, or its node left), and a removal by the room's
//     creator is shown once instead (kind "removed": the room, and who).
//   - A message is shown once: by a take (at most 10 a take, oldest first;
//     the rest are counted) or by Read. The agent's own events are never
//     unread.
//
// The inbox follows each room's local arrival log (rooms.Manager.Since),
// which only grows, so an event that arrives late through catch-up is not
// missed. A take reads only the rooms that changed since the agent's last
// one (rooms.Manager.ChangedSince), and those with unread messages left, so
// its cost does not grow with the number of rooms.
//
// # Store
//
// Under s/a/<agent>/ (internal/store/schema): d/<room> how far the agent's
// items are scanned, r/<room> how far its messages were shown (both
// arrival numbers, 8 bytes big-endian), o/<ask> the asks it owes, q/<ask>
// its own asks until answered or expired, n/<event> notices to show once
// (JSON). The counts of unread messages live in memory and are counted
// again after a restart.
package inbox
