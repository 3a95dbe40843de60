// Package appserver drives a Codex session through `codex app-server`: a
// JSON-RPC 2.0 server on stdio, one message per line (Codex leaves out the
// "jsonrpc" member; this client accepts it either way and writes it).
//
// # The calls Parley makes
//
//   - initialize {clientInfo: {name, title, version}}, then the
//     notification initialized.
//   - thread/start {cwd} → {thread: {id}}, or thread/resume {threadId}.
//   - turn/start {threadId, input: [{type: "text", text}]} → {turn: {id}}
//     when the thread is idle: the text starts a turn.
//   - turn/steer {threadId, expectedTurnId, input} when a turn runs: the
//     text joins it.
//
// The notifications turn/started {threadId, turn: {id}} and turn/completed
// {threadId, turn: {id, status}} tell the client whether the thread is
// busy. Requests from the server (approvals and the like) are answered with
// an error: Parley approves nothing on a person's behalf.
package appserver
