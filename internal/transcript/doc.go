// Package transcript reads what an agent client spent (tokens, and cost
// where the client wrote it) from the session transcript its hooks name
// (`transcript_path` in Claude Code's and Codex's hook inputs), a little at a
// time: a cursor file remembers how far each transcript was read, so every
// record is counted once however often the hooks run.
//
// Claude Code writes one JSON line per record; an assistant record carries
// `message.id`, `message.model` and `message.usage` {input_tokens,
// output_tokens, cache_creation_input_tokens, cache_read_input_tokens}, and
// older versions a `costUSD`. One response may be written several times
// (one line per content block, and snapshots while it streams), so usage is
// kept per message ID and only what grew is counted. Input tokens are
// input_tokens + cache_creation_input_tokens + cache_read_input_tokens; the
// cache figures are also given on their own.
//
// Codex writes a rollout file whose `event_msg` lines of payload type
// `token_count` carry `info.total_token_usage` {input_tokens,
// cached_input_tokens, output_tokens, reasoning_output_tokens}: running
// totals for the session, so what grew since the last count is counted.
// Codex's input_tokens include the cached ones, and its output_tokens the
// reasoning ones. Codex writes no cost.
//
// A transcript that is missing, not a regular file, cut short or replaced, a
// line that is not JSON or is over MaxLine, are skipped with a note; nothing
// here fails a hook. A line not yet ended by a newline is left for the next
// read.
package transcript
