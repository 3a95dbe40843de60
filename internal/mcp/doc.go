// Package mcp is Parley's MCP server: the tools an agent session uses to
// talk through its user's node (parley_register, parley_who, parley_find,
// parley_room_open, parley_invite, parley_say, parley_read, parley_ask,
// parley_wait, parley_reply, parley_dismiss, parley_leave), served by
// `parley mcp` with the MCP Go SDK and backed by the node's local API
// (internal/localapi's typed client: the package imports no domain package).
//
// Every tool has one shape (addTool): the wrapper finds the calling agent,
// runs the handler, and adds the error, if any, and the agent's pending
// items to the result. A handler asks the node for the pending items in its
// own call (Take), so a tool call is one round trip to the node; the
// wrapper takes them in a call of its own only when the handler did not.
//
// Every result, errors included, carries the pending items
// (structuredContent.pending, more_unread and owed_left_out, and in the
// text): asks the agent owes first, under a line saying someone is blocked
// on it (in full once, then one reminder line on every later result until
// answered, expired or dismissed; within the take's budget and at most
// inbox.MaxReminders reminders, taken in turns by asking node, the rest
// counted in owed_left_out), then invitations (with the room's manual,
// from internal/manual), replies to its own asks, and unread messages (ten
// at most; the rest counted). Each item carries the call that answers it;
// this wording lives here, not in the node.
//
// Items are handed out in two steps (localapi.WithTwoStep): the node keeps
// a record of what a result hands out, whose token the result carries in
// its _meta (HandMeta), and the connection confirms it once the result was
// written whole (ackConn) and the client did not cancel the call within
// CancelGrace; a cancelled call's hand-out is given back, and the node
// offers its items again at once. A result never written (the process
// killed, the client's pipe broken) is never confirmed, and the node
// offers its items to the agent again after its hand wait.
//
// Tool schemas are portable: every "type" is one type name (Go's ["null",
// X] for slices and pointers is rewritten to X, and no output holds null).
//
// LineTransport serves the stdio framing and checks each line before the
// SDK sees it: a malformed, deeply nested or over-size line gets a JSON-RPC
// error and the session goes on. At the end of its input it answers the
// requests already read before it ends (waiting at most DefaultEndGrace
// for each next answer, so a parley_wait whose caller has gone is cut).
//
// One MCP session is one agent of the node. Its session key comes from the
// client (--session, PARLEY_SESSION of `parley run`, CLAUDE_CODE_SESSION_ID,
// CODEX_THREAD_ID) or, for LangGraph-style programs that serve many
// threads, from a thread_id argument on each call, scoped to the MCP
// session (MaxThreads at once; one idle for Config.ThreadIdle is let go
// and bound again by its next call); the node keeps each key's agent name and card
// (role, capabilities, what it works on), so a session that reconnects is
// the same agent with the same card and cursors. A new key takes the
// default name (DefaultAgentName: client and project folder) when no live
// session holds it, and so is that agent again: rooms, owed asks and
// cursors belong to the name, so a new conversation in the same folder
// carries on from the last one; its card starts empty.
package mcp
