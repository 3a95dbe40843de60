package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
)

// globals are the flags every command shares.
type globals struct {
	home    string
	json    bool
	timeout time.Duration
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "parley",
		Short:         "Parley: a peer-to-peer mesh where agent sessions and their humans talk",
		SilenceUsage:  true,
		SilenceErrors: true,
		// A --timeout of 0 or below cannot be waited: it is refused
		// naming the flag, before anything is done, not read later as
		// a node that did not answer.
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if g.timeout <= 0 {
				return fmt.Errorf("--timeout %s: must be above 0 (how long to wait for the node; 30s when left out)", g.timeout)
			}
			return nil
		},
	}
	root.PersistentFlags().StringVar(&g.home, "home", "", "node home folder (default $PARLEY_HOME, else ~/.parley)")
	root.PersistentFlags().BoolVar(&g.json, "json", false, "print JSON")
	durationFlag(root.PersistentFlags(), &g.timeout, "timeout", 30*time.Second, "how long to wait for the node")
	root.AddCommand(
		upCmd(g),
		idCmd(g), statusCmd(g), peersCmd(g), connectCmd(g), downCmd(g),
		claimCmd(g), releaseCmd(g), boardCmd(g), guardCmd(g), worktreeCmd(g),
		roomCmd(g), invitesCmd(g), inboxCmd(g), mcpCmd(g), contactCmd(g), orgCmd(g), agentCmd(g), whoCmd(g), findCmd(g), auditCmd(g), uiCmd(g), usageCmd(g),
		backupCmd(g), restoreCmd(g),
	)
	root.AddCommand(installCmd(g), uninstallCmd(g), doctorCmd(g), hookCmd(g), runCmd(g), codexCmd(g))
	refuseUnknownSubcommands(root)
	usageOnBadArgs(root)
	suggestFlags(root)
	explainStops(root, g)
	return root
}

// explainStops makes every command that fails because the node stopped
// while a request to its local API was under way (it was stopped, or
// crashed) say so, and what to do, in place of the transport's error
// ("read unix …: connection reset by peer"): the one place for all of them.
func explainStops(c *cobra.Command, g *globals) {
	for _, sub := range c.Commands() {
		explainStops(sub, g)
	}
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			return g.stopped(run(cmd, args))
		}
	}
}

// stopped turns a request cut off by the node stopping into what a person
// reads: that the node stopped, that a change asked may or may not have
// been made, and how to look before doing it again.
func (g *globals) stopped(err error) error {
	var st *localapi.Stopped
	if !errors.As(err, &st) {
		return err
	}
	home, herr := g.homePath()
	if herr != nil {
		home = "HOME"
	}
	// The explanation takes the place of the cut-off request's text where
	// it is, so what the command said around it (an ask posted before
	// its wait) stays: in the Stopped itself, and in a wrapper's text,
	// which fmt.Errorf wrote when it wrapped it.
	orig := st.Error()
	switch {
	case st.Explain != "":
		// The command told it in its own words (room tail).
		return err
	case st.Stream:
		st.Explain = fmt.Sprintf("the node stopped, which ended %s %s; start it again with `%s`", st.Method, st.Path, node.UpCommand(home, false))
	case !st.Write():
		st.Explain = fmt.Sprintf("the node stopped before it answered (%s %s); start it again with `%s`", st.Method, st.Path, node.UpCommand(home, false))
	default:
		st.Explain = fmt.Sprintf("the node stopped while this command was under way (%s %s): it may or may not have been done (a post stored, an invite sent); "+
			"start the node again with `%s` and look before you repeat it (a post: `parley room log ROOM`)", st.Method, st.Path, node.UpCommand(home, false))
	}
	return explained{strings.Replace(err.Error(), orig, st.Explain, 1), err}
}

// explained is an error told in other words; it wraps the error.
type explained struct {
	msg string
	err error
}

func (e explained) Error() string { return e.msg }
func (e explained) Unwrap() error { return e.err }

// refuseUnknownSubcommands makes each command that only groups others
// (the root, room, contact, agent …) fail on a word it does not know,
// instead of printing its help and exiting 0: a script that typed `parley
// room read X` must see it failed. The error is one line, with the
// commands a typo was near (`room sya`: say). Alone, such a command prints
// its help.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !c.HasSubCommands() {
		return
	}
	c.SuggestionsMinimumDistance = 2
	if c.Run == nil && c.RunE == nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownSubcommand(cmd, args[0])
			}
			return nil
		}
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		return
	}
	// A command that runs by itself and has commands under it (board and
	// board history): a word it takes no argument for is a command it
	// does not know, told as above (`board histroy`: history).
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && check(cmd, nil) == nil && check(cmd, args[:1]) != nil {
				return unknownSubcommand(cmd, args[0])
			}
			return check(cmd, args)
		}
	}
}

// unknownSubcommand is the error for a word that names none of cmd's
// commands, with the commands it was near.
func unknownSubcommand(cmd *cobra.Command, word string) error {
	near := cmd.SuggestionsFor(word)
	if !cmd.HasParent() { // the root's commands are many: its help lists them
		if len(near) > 0 {
			return unknownCmd{fmt.Errorf("unknown command %q (did you mean %s? `parley --help` lists the commands)", word, strings.Join(near, " or "))}
		}
		// `parley ask`: a command of a group (room ask).
		var under []string
		for _, c := range cmd.Commands() {
			if !c.IsAvailableCommand() {
				continue
			}
			for _, sub := range c.Commands() {
				if sub.IsAvailableCommand() && (sub.Name() == word || slices.Contains(sub.Aliases, word)) {
					under = append(under, "`"+sub.CommandPath()+"`")
				}
			}
		}
		if len(under) > 0 {
			return unknownCmd{fmt.Errorf("unknown command %q (did you mean %s? `parley --help` lists the commands)", word, strings.Join(under, " or "))}
		}
		return unknownCmd{fmt.Errorf("unknown command %q (`parley --help` lists the commands)", word)}
	}
	if top, _, err := cmd.Root().Find([]string{word}); err == nil && top != cmd.Root() && top.IsAvailableCommand() {
		// `board claim`: claim is a command of the root's.
		return unknownCmd{fmt.Errorf("unknown command %q for %q (`%s` is a command of its own; %q's commands: %s)", word, cmd.CommandPath(), top.CommandPath(), cmd.CommandPath(), subcommandNames(cmd))}
	}
	if cmd.Name() == "room" && (word == "reply" || word == "answer") {
		return unknownCmd{fmt.Errorf("unknown command %q for %q (an answer is a message that names what it answers: `parley room say ROOM TEXT --reply-to ID`, ID as `parley inbox` or `parley room log ROOM` shows it; its commands: %s)", word, cmd.CommandPath(), subcommandNames(cmd))}
	}
	if len(near) > 0 {
		return unknownCmd{fmt.Errorf("unknown command %q for %q (did you mean %s? its commands: %s)", word, cmd.CommandPath(), strings.Join(near, " or "), subcommandNames(cmd))}
	}
	return unknownCmd{fmt.Errorf("unknown command %q for %q (its commands: %s)", word, cmd.CommandPath(), subcommandNames(cmd))}
}

// unknownCmd is unknownSubcommand's error: it says what to type, so
// usageOnBadArgs adds no usage line to it.
type unknownCmd struct{ error }

// usageOnBadArgs makes a command given too few or too many arguments
// say how it is used ("accepts 2 arg(s), received 0" alone does not).
func usageOnBadArgs(c *cobra.Command) {
	for _, sub := range c.Commands() {
		usageOnBadArgs(sub)
	}
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				if errors.As(err, new(unknownCmd)) {
					return err
				}
				return fmt.Errorf("%w (usage: %s)", err, strings.TrimSuffix(cmd.UseLine(), " [flags]"))
			}
			return nil
		}
	}
}

func subcommandNames(c *cobra.Command) string {
	var names []string
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, s.Name())
		}
	}
	return strings.Join(names, ", ")
}

// resolveHome applies --home, then PARLEY_HOME, then ~/.parley, and refuses
// a home that is not safe to use.
func (g *globals) resolveHome() (string, error) {
	h, err := g.homePath()
	if err != nil {
		return "", err
	}
	// A home another user owns or may write to is refused before anything
	// reads from it or connects to its socket.
	if err := node.CheckHome(h); err != nil {
		return "", err
	}
	return h, nil
}

// homePath is the home folder, unchecked (doctor reports on it instead).
func (g *globals) homePath() (string, error) {
	h := g.home
	if h == "" {
		h = os.Getenv("PARLEY_HOME")
	}
	if h == "" {
		u, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot find your home folder (%v); pass --home", err)
		}
		h = filepath.Join(u, ".parley")
	}
	// A shell expands ~ only at the start of a word: `--home=~/x` and
	// PARLEY_HOME=~/x in a file reach parley with the tilde as it is, and
	// mean the user's ~/x, not a folder named ~ in the working folder.
	if h == "~" || strings.HasPrefix(h, "~/") {
		u, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot find your home folder for %s (%v); give the home's whole path", h, err)
		}
		h = filepath.Join(u, h[1:])
	}
	return filepath.Abs(h)
}

// client returns a local API client for the home, and a context bounded by
// --timeout.
func (g *globals) client(cmd *cobra.Command) (*localapi.Client, context.Context, context.CancelFunc, error) {
	home, err := g.resolveHome()
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), g.timeout)
	return localapi.NewClient(nodeSocket(home)), ctx, cancel, nil
}

// apiErr turns a local API error into the one line a user reads.
func (g *globals) apiErr(err error) error {
	if errors.Is(err, localapi.ErrNoNode) {
		home, _ := g.resolveHome()
		return noNode{home}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return timedOut{g.timeout, err}
	}
	return err
}

// timedOut is apiErr's error when the node did not answer within
// --timeout (the request's context ended, not the node's own wait).
type timedOut struct {
	d   time.Duration
	err error
}

func (e timedOut) Error() string {
	what, after := "", " (a change asked may still be made: look before you repeat it)"
	if m := reqLine.FindString(e.err.Error()); m != "" {
		what = " (" + m + ")"
		if strings.HasPrefix(m, "GET ") {
			after = ""
		}
	}
	return fmt.Sprintf("the node did not answer within %s%s: give it longer with --timeout%s", e.d, what, after)
}

func (e timedOut) Unwrap() error { return e.err }

// reqLine finds the request in a local API client's error ("GET /v1/status").
var reqLine = regexp.MustCompile(`\b(GET|POST|PUT|DELETE|PATCH) /v1/[^ :]*`)

// noNode is apiErr's error when no node runs for the home (it is
// localapi.ErrNoNode, as a person reads it). Its hint starts the node as it
// last ran: with --loopback when it last ran so (node.UpCommand).
type noNode struct{ home string }

func (e noNode) Error() string {
	if _, err := os.Stat(e.home); errors.Is(err, fs.ErrNotExist) {
		// Starting a node there makes a new identity: a mistyped home
		// would pass for a node that lost everything.
		return fmt.Sprintf("no node is running for home %s, and none ever ran there (no such folder): a mistyped --home or PARLEY_HOME? (a new node, with a new identity, starts with `%s`)",
			e.home, node.UpCommand(e.home, false))
	}
	return fmt.Sprintf("no node is running for home %s (start one with `%s`)", e.home, node.UpCommand(e.home, false))
}

func (e noNode) Unwrap() error { return localapi.ErrNoNode }

// call runs one local API call and prints its result: JSON with --json, else
// through human.
func call[T any](g *globals, cmd *cobra.Command, f func(ctx context.Context, c *localapi.Client) (T, error), human func(w io.Writer, v T)) error {
	c, ctx, cancel, err := g.client(cmd)
	if err != nil {
		return err
	}
	defer cancel()
	defer c.Close()
	v, err := f(ctx, c)
	var part partial
	if errors.As(err, &part) {
		// What was done is printed, then the error: its own words, which
		// say what was done and what not, with agents as people read them.
		if perr := printOut(g, cmd.OutOrStdout(), v, human); perr != nil {
			return perr
		}
		if n, ok := namedText(g, ctx, c, part.error); ok {
			return errors.New(n)
		}
		return part.error
	}
	if err != nil {
		if n, ok := namedText(g, ctx, c, err); ok {
			return errors.New(n)
		}
		return g.apiErr(err)
	}
	return printOut(g, cmd.OutOrStdout(), v, human)
}

// namedText is err's text with the agents NAME@PEER_ID in it as people
// read them (NAME@handle), and true; false when it names none the node
// knows (or with --json, whose errors keep peer IDs).
func namedText(g *globals, ctx context.Context, c *localapi.Client, err error) (string, bool) {
	if msg := err.Error(); !g.json && len(localapi.Peers(msg)) > 0 && ctx.Err() == nil {
		if n := nameBook(ctx, c).Text(msg); n != msg {
			return n, true
		}
	}
	return "", false
}

// partial is the error of a call that did part of what was asked: call
// prints its result, then fails with the error.
type partial struct{ error }

// printOut prints v as JSON with --json, else through human.
func printOut[T any](g *globals, w io.Writer, v T, human func(io.Writer, T)) error {
	if g.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	human(w, v)
	return nil
}

func nodeSocket(home string) string { return node.SocketPath(home) }
