// Package manual writes the texts that tell an agent what Parley asks of
// it: the manual that comes with an invitation into a room, and the notice
// of an ask it owes. The MCP server puts them in tool results; the wake-up
// adapters use the same texts to wake an idle agent. They are plain
// statements (no orders), at most MaxLen characters, and name the exact
// calls that read, answer and leave, so an agent that has never heard of
// Parley knows what to do. A text from another node (a message, an ask,
// a reply) is shown indented under Parley's lines (Block), and a room's
// purpose on one line, so none can pass for Parley's own lines.
//
// It depends on nothing but the local API's types and termtext.
package manual
