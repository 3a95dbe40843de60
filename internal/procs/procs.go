// Package procs reads a process's ancestry: the chain of parent processes
// from a process up to the first process of the system. The git guard
// uses it to tell which local agent's client runs a commit: an agent
// client (Claude Code, Codex, Gemini CLI) starts both its MCP server and
// the shell commands of its tools, so the client is an ancestor of both.
package procs

// MaxDepth bounds the chain Ancestors returns.
const MaxDepth = 64

// Ancestors returns pid's parent, its parent's parent and so on, nearest
// first, stopping before PID 1 (init, or a container's first process,
// which every process shares) and after MaxDepth entries. A process whose
// parent cannot be read ends the chain; on a system where parents cannot
// be read at all the chain is empty.
func Ancestors(pid int) []int {
	var out []int
	seen := map[int]bool{pid: true}
	for len(out) < MaxDepth {
		pp, ok := parent(pid)
		if !ok || pp <= 1 || seen[pp] {
			break
		}
		seen[pp] = true
		out = append(out, pp)
		pid = pp
	}
	return out
}
