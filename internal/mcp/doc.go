// Package mcp is Parley's MCP server: the tools an agent session uses to
// talk through its user's node (parley_register, parley_who, parley_find,
// parley_room_open, parley_invite, parley_say, parley_read, parley_ask,
// parley_wait, parley_reply, parley_leave), served over stdio by
// `parley mcp` with the MCP Go SDK and backed by the node's local API.
//
// Every tool result, errors included, carries the agent's pending items
// (structuredContent.pending, and in the text): asks addressed to the agent
// first, under a line saying someone is blocked on it, then invitations,
// then unread messages of its rooms (counted past a limit). Each item says
// the exact call that answers it, and is handed out once.
//
// One MCP session is one agent of the node. Its session key comes from the
// client (CLAUDE_CODE_SESSION_ID, CODEX_THREAD_ID, --session) or, for
// LangGraph-style programs that serve many threads, from a thread_id
// argument on each call; the node maps each key to an agent name that
// survives reconnects, with its cursors.
package mcp
