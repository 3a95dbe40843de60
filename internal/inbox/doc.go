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
//     unread. (A two-step hand-out not confirmed shows it again; below.)
//     Read of all its rooms gives only the messages and asks of a board
//     room ("board:" and a project key): its joins, claims and releases
//     are read past unshown, as the board's (parley_board; the board's
//     notices tell an agent what concerns it); a read of that room alone
//     gives them all.
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
// (JSON), h/<token> its open two-step hand-outs (JSON: until when, and the
// items given, by event ID, or whole when they are no event's). The counts
// of unread messages live in memory and are counted again after a restart.
//
// # Two-step hand-outs
//
// A call made with localapi.TwoStep (the MCP server's, the hooks') marks
// what it hands out as any call does, and records it (h/<token>, saved with
// the marks) under a token its answer gives (Pending.Hand). The caller
// confirms the token (Ack) once what it was handed reached the agent; a
// record not confirmed within Config.HandWait is offered again at the
// agent's next call (take, peek, read, a waiting take when it passes): an
// ask it still owes is shown in full again, anything else comes back as a
// notice to show once (n/<event>, made again from the event). Open records
// survive a restart (offered again once their wait passed); at most
// MaxHands (and 256 KiB of records) per agent past their caller's grace (a
// quarter of the hand wait), MaxFreshHands within it: past them the oldest
// is offered again at once. Shown twice, never lost.
package inbox
