// Package wake gets an agent to read what it owes: the asks and
// invitations Parley holds for it (internal/inbox). It is the node's one
// wake-up path; the ways into a session are its routes.
//
// # Routes
//
// A route is registered by whatever can reach a session, and each kind is
// tried in this order:
//
//   - stop: a hook waiter of an idle session (Claude Code's Stop hook with
//     asyncRewake; `parley hook claude Stop`). It long-polls the node
//     (GET /v1/agents/{agent}/wake/wait?kind=stop) and is handed the items
//     once; it then wakes its session (text on stderr, exit 2). A newer
//     waiter of the same session supersedes the older, and a session that
//     works again (its PostToolUse hook says so: POST …/wake/busy) ends its
//     waiters. A waiter waits in a loop (its wait passes, or the items it
//     was handed were read meanwhile); each wait after its first names the
//     last answer's Seq (&after=), and one of these that came since ends
//     it at once: nothing that lands between two waits is lost. The node
//     keeps, per session, the Seq of the last one (agentState.ended).
//   - appserver: a Codex thread driven through `codex app-server`
//     (`parley codex`), long-polling the same way (its waits after the
//     first name the last answer's Seq too); the text starts a turn
//     when the thread is idle and steers the running turn when it is busy
//     (internal/wake/appserver).
//   - channel: an MCP server that can push into its session (Claude Code's
//     claude/channel notification), long-polling the same way (its first
//     wait under a new agent name names no Seq: ended is kept per agent).
//   - terminal: a tmux pane (`parley run`), which the node pastes into
//     itself when the agent is idle at an empty prompt, never over a
//     person's draft (internal/wake/tmux). The node keeps the agent
//     registered while the pane lives (binding its session again when the
//     registration went: Config.Rebind) and drops the route when it dies.
//
// A busy session is reached by its hooks and by the items every Parley
// tool result carries (piggy-back); those need no route here.
//
// # Read, or the next route, or the human
//
// An owed item is read once the agent's list of unread owed items
// (Unreader, bounded by count, MaxItems, not by text as a take's list is)
// no longer shows it: a take handed it out (a tool result, a hook), or it
// was answered, dismissed or expired. One missing while the list leaves
// items out may only have been crowded out, and keeps its state. An item handed to a route and
// not read within Config.Limit goes to the next kind of route; with none
// left (or none at all), once Limit has passed, the node tells the human:
// a log line, the agent marked in `parley who`, a count in `parley status`.
// A session that says it is idle (Codex's notify, WakeIdle) reads nothing
// by itself: an item no route of a kind it was not handed to can reach is
// told to the human at once. The mark ends when the agent reads an item or
// a session of it is busy again (WakeBusy).
// An agent its person muted or killed (Config.Quiet) is not woken.
// The same item is never handed twice to one kind of route, so a Stop hook
// is never woken again for an item it already woke its session for; but a
// terminal counts as tried for good only once it pasted the item: one that
// could not (the agent worked past Limit, a person scrolled or typed at its prompt) has
// it again whenever its pane shows the agent idle at an empty prompt (its
// human still told once, when the routes' turns ran out).
//
// # A wake budget per asking node
//
// Each handing of a batch with an asking node's items to a route is a
// wake-up of that node's; it stands while the agent still owes one of the
// items it handed (an ask not answered nor dismissed, read or not). Once
// Config.WakeBudget of them (3) stand within Config.WakeWindow (10 min),
// that node's items wake the agent no more, and its human is told of
// them; a wake-up gives its place back once the agent answers what it
// handed, or as it ages past the window. Another node's items wake the
// agent at once; the node's own agents have no budget.
//
// # Shape
//
// New starts nothing; Run owns the state (one goroutine) until ctx ends.
// Calls from the local API and the terminal routes' goroutines reach it as
// functions on a channel.
package wake
