package localapi

import (
	"slices"
	"strings"
)

// internalContexts are the names of Parley's own packages that open the
// text of their errors ("identity: invalid name", "agents: register: …"):
// they help a log, not a person at the CLI or an agent reading a tool's
// error.
var internalContexts = []string{"agents", "board", "discovery", "gitrepo", "identity", "localapi", "node"}

// agentsOps are the operations the agent service names after its prefix
// ("agents: register: …", "agents: heartbeat NAME: …"): the person ran
// that command, and the rest of the text names the agent.
var agentsOps = []string{"register", "heartbeat", "unregister"}

// UserText is an error's text as a person reads it: the contexts that name
// an internal package are dropped, with the operation the agent service
// names after its own ("agents: register: bad input: identity: invalid
// name: agent name …" reads "bad input: agent name …"). Only the text
// changes: the error itself, which code tests with errors.Is, is kept
// whole by whoever calls this.
func UserText(msg string) string {
	segs := strings.Split(msg, ": ")
	out := make([]string, 0, len(segs))
	for i := 0; i < len(segs); i++ {
		s := segs[i]
		if i == len(segs)-1 || !slices.Contains(internalContexts, s) {
			out = append(out, s)
			continue
		}
		// The segment after a package's name that only says what kind
		// of error follows: the rest says it in full.
		next := segs[i+1]
		switch {
		case s == "agents" && i+2 < len(segs) && slices.Contains(agentsOps, firstWord(next)):
			i++
		case s == "identity" && next == "invalid name" && i+2 < len(segs):
			i++
		}
	}
	return strings.Join(out, ": ")
}

func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return w
}
