// Package install writes Parley into agent clients' config files and takes
// it out again: the MCP server entry (`parley mcp`) and, where a client has
// them, the hook commands (`parley hook CLIENT EVENT`).
//
// # What goes where
//
//	client    scope    file                                     entries
//	claude    user     ~/.claude.json ($CLAUDE_CONFIG_DIR)      mcpServers.parley {type stdio, command, args}
//	                   ~/.claude/settings.json                  hooks.{SessionStart,PostToolUse,Stop}[]
//	claude    project  .mcp.json, .claude/settings.json         the same
//	codex     user     $CODEX_HOME/config.toml (~/.codex)       [mcp_servers.parley], notify = [...]
//	                   $CODEX_HOME/hooks.json                   hooks.{SessionStart,PostToolUse,Stop}[]
//	codex     project  .codex/config.toml, .codex/hooks.json    the same
//	gemini    user     ~/.gemini/settings.json                  mcpServers.parley, hooks.AfterTool[]
//	gemini    project  .gemini/settings.json                    the same
//	opencode  user     ~/.config/opencode/opencode.json[c]      mcp.parley {type local, command [...]}
//	opencode  project  opencode.json[c]                         the same
//
// A hook is one matcher group of its own holding one command hook whose
// command line is `PARLEY [--home DIR] hook CLIENT EVENT`; Parley's entries
// are recognised by that command (a program named parley, then `hook` and
// the client), and the MCP server by its name and a parley program whose
// arguments start with `mcp`. A server entry under Parley's name is
// Parley's own only when it says nothing else: the keys Parley writes
// (others at most empty), no comment; in TOML its sub-tables are part of
// it ([mcp_servers.parley.env] is its env). Install refuses any other one, with
// its line (ErrConflict), and uninstall leaves it.
//
// # Editing
//
// A user's config file is theirs. Files are edited as text: an edit
// splices in (or out) the bytes of Parley's entry, in the layout of its
// neighbours (indent, line endings, trailing commas), and leaves every
// other byte alone; JSON with comments keeps its comments. The file is
// checked before (an invalid one is refused with its line; nothing is
// written) and after every edit, and the decoded result must equal the
// original apart from Parley's entries. The dialect is the client's:
// plain JSON for Claude Code and Codex, JSON with comments for Gemini CLI,
// comments and trailing commas for opencode, TOML (checked with go-toml)
// for Codex's config.toml, whose notify key goes before the first table.
// A UTF-8 byte order mark at the start of a file (some Windows editors
// write one) is kept as it is, and the text after it edited.
//
// Install is idempotent: a second run with the same options changes
// nothing. Plan.Apply keeps a copy of each file before its first change
// (and before the latest) under PARLEYHOME/install/backup, replaces files
// in one rename, and writes a record (PARLEYHOME/install/CLIENT-SCOPE.json)
// of what it added and how to take it out. Uninstall puts a file back
// byte for byte when nothing else changed it since; otherwise it takes
// out only Parley's entries (and the containers it created, and puts back
// an entry it replaced), which, thanks to the record, also gives back the
// user's bytes around them. Without a record it still finds and removes
// Parley's entries by their commands, unless they name another Parley home
// that holds the record: then it refuses (ErrOtherHome), since the
// uninstall with that home puts the files back as they were. There an
// entry whose program is not named parley counts too when it is shaped as
// Parley's (`[--home H] mcp`, `hook …`) and H's record names its program.
package install
