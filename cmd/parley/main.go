// Command parley runs a Parley node and talks to it.
//
//	parley up                 run a node in the foreground
//	parley id | status | peers | connect ADDR | down
//
// Every command takes --home (default $PARLEY_HOME, else ~/.parley) and
// --json for machine-readable output.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/termtext"
)

func main() {
	root := newRoot()
	if err := root.Execute(); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		if asJSON, _ := root.PersistentFlags().GetBool("json"); asJSON || jsonAsked(os.Args[1:]) {
			// A script that asked for JSON gets its error as JSON too,
			// on stderr, with stdout left empty.
			b, _ := json.Marshal(struct {
				Error string `json:"error"`
			}{cliText(err.Error())})
			fmt.Fprintln(os.Stderr, string(b))
			os.Exit(1)
		}
		// An error may quote a peer's bytes (a refusal, the answer its
		// node gave a protocol negotiation): shown escaped, as every
		// other text from the network, with its lines indented under
		// the first, so it can neither drive the terminal nor pass for
		// a line of Parley's own.
		fmt.Fprintln(os.Stderr, "parley: "+termtext.Lines(cliText(err.Error())))
		os.Exit(1)
	}
}

// exitError ends the program with a code after its message was printed.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// mcpHint is a hint in the node's error texts that names an MCP tool
// beside the command doing the same ("parley_who, or `parley who`, lists
// …"): the node answers agents and the CLI alike.
var mcpHint = regexp.MustCompile("parley_[a-z_]+, or (`parley [^`]+`), ")

// mcpAside is a hint's part for agents alone, after the command that does
// the same: "`parley who`, or the parley_who tool", "--project KEY, or
// project in a tool call".
var mcpAside = regexp.MustCompile(`, or (the parley_[a-z_]+ tool|[a-z_]+ in a tool call)`)

// cliText is an error's text as a person at the CLI reads it: without
// internal packages' names (localapi.UserText), and pointing to commands,
// not to MCP tools.
func cliText(msg string) string {
	return mcpAside.ReplaceAllString(mcpHint.ReplaceAllString(localapi.UserText(msg), "$1 "), "")
}

// jsonAsked reports whether args ask for --json. An error found before the
// flags were parsed (an unknown command, a bad flag ahead of --json) leaves
// the flag unset, but a script that asked for JSON still gets its error as
// JSON.
func jsonAsked(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--json" {
			return true
		}
		if v, ok := strings.CutPrefix(a, "--json="); ok {
			b, err := strconv.ParseBool(v)
			return err == nil && b
		}
	}
	return false
}
