package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/mcp"
	"github.com/parley-mesh/parley/internal/termtext"
	"github.com/parley-mesh/parley/internal/wake/tmux"
)

// runSessionEnv is the variable by which `parley run` gives its program the
// run's session key: a parley mcp or a client hook inside the run binds it
// instead of the client's own key, so they are the run's agent.
const runSessionEnv = "PARLEY_SESSION"

// defaultAs is the agent the CLI speaks as: the one `parley run` started
// this program as ($PARLEY_AGENT), else the human.
func defaultAs() string {
	if a := os.Getenv("PARLEY_AGENT"); a != "" {
		return a
	}
	return human
}

// givenAgent is an agent name a person gives (--as, $PARLEY_AGENT) as the
// node reads it (trimmed, capitals A to Z taken as small letters, as the
// node's identity.ParseGivenAgentName folds them; only those: a character
// that merely looks like a letter stays, and the node refuses it), for the
// CLI's own comparisons: `--as HUMAN` is human, as the node takes it.
func givenAgent(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, strings.TrimSpace(s))
}

func runCmd(g *globals) *cobra.Command {
	var name, socket, prompt string
	var detach bool
	cmd := &cobra.Command{
		Use:   "run [--name AGENT] [--prompt REGEXP] -- COMMAND [ARG...]",
		Short: "Run a terminal agent in tmux, so that the node can wake it when something is asked of it",
		Long: `Start a terminal agent (any program that reads a prompt) in tmux as an agent of
this node. If no node runs for the home, one is started in the background first, as
` + "`parley mcp`" + ` does: reachable from this machine only (127.0.0.1, no mDNS; its log goes to
HOME/node.log), and one line on stderr says so and how to stop it. When an ask or an invitation comes for it while it waits at an empty
prompt, the node pastes the text into its pane and presses Enter; it never pastes
over something a person has started typing.

Its empty prompt is learned from its first quiet screen. A program that first asks
something (a [y/N] question, a folder-trust dialog) has that question learned; once
you have answered it, and the question has gone from the screen while the program
waits, still, at a line its cursor came to, that line is learned instead (never a
line that starts with the question, nor one the cursor moved along as someone
typed, nor the rest of a line wrapped at the edge, so not a prompt in a box; and
not once the program has come back to its prompt). Some drafts left right after
the answer pass for the prompt all the same (one typed before the node looked, or
of several lines); --prompt avoids that. It gives the empty prompt as a regular
expression (Go syntax) of the cursor line, trailing blanks trimmed, e.g. '^> ?$':
then nothing is learned, first or again, and a line it does not match is a
person's draft.

The program gets PARLEY_HOME, PARLEY_AGENT and PARLEY_SESSION in its environment:
parley commands it runs speak as the agent (parley room say ROOM TEXT --reply-to ID),
and a parley mcp it starts is the same agent. Inside tmux the agent gets a new window
of the current session; otherwise a new session, attached when stdin and stdout
are a terminal (unless --detach), else left detached, saying so (a script's or
cron's run). The node keeps the agent registered while its pane lives, also
across a restart of the node; when the program exits, the agent goes. When the
program cannot be started, or exits before it waits at a prompt, or the node
cannot make its pane the agent's wake-up route (its pane is closed then), the
agent is unregistered and run exits 1 saying why.`,
		Example: `  parley run --name reviewer -- claude
  parley run -- codex
  parley run --prompt '^> ?$' -- ./my-agent.sh
  parley run --detach --name bot -- ./my-agent.sh`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if prompt != "" {
				if _, err := regexp.Compile(prompt); err != nil {
					return fmt.Errorf("--prompt: %v", err)
				}
			}
			home, err := g.resolveHome()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
			defer cancel()
			c := localapi.NewClient(nodeSocket(home))
			defer c.Close()
			if err := ensureNode(ctx, c, cmd.ErrOrStderr(), home, true); err != nil {
				return err
			}
			wd, err := os.Getwd()
			if err != nil {
				return err
			}
			if _, err := exec.LookPath(args[0]); err != nil {
				return fmt.Errorf("cannot run %q: %v", args[0], err)
			}
			session := "run-" + rand.Text()
			info, err := c.Session(ctx, localapi.SessionRequest{Session: session, Name: name,
				Fallback: mcp.DefaultAgentName(filepath.Base(args[0]), wd), Client: "terminal", TTLSeconds: 60})
			if err != nil {
				return g.apiErr(err)
			}
			// Until the pane is the agent's wake route, a failure must not
			// leave the agent registered with nothing behind it.
			bound := false
			defer func() {
				if bound {
					return
				}
				uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				if err := c.UnregisterAgent(uctx, info.Name); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "parley: could not unregister agent %s: %v\n", info.Name, err)
				}
			}()
			failed := func(format string, a ...any) error {
				return fmt.Errorf(format+"; agent %s is unregistered", append(a, info.Name)...)
			}
			srv, inTmux := tmux.Server{Socket: socket}, false
			if socket == "" {
				if cur, _, ok := tmux.Current(os.Getenv); ok {
					srv, inTmux = cur, true
				}
			}
			// KeepDead: a program that exits at once leaves its pane, so its
			// exit status and last lines can be told.
			so := tmux.StartOptions{Command: args, Dir: wd, Window: info.Name, KeepDead: true,
				Env: []string{"PARLEY_HOME=" + home, "PARLEY_AGENT=" + info.Name, runSessionEnv + "=" + session}}
			if inTmux {
				cur, err := currentSession(ctx)
				if err != nil {
					return failed("%v", err)
				}
				so.InSession = cur
			} else {
				so.Session = "parley-" + info.Name + "-" + rand.Text()[:4]
			}
			pane, err := srv.Start(ctx, so)
			if err != nil {
				return failed("cannot start %s in tmux: %v", args[0], err)
			}
			psrv := tmux.Server{Socket: pane.Socket}
			term := tmux.Bind(psrv, pane.ID, tmux.Options{})
			// With --prompt too: the program has started and waits (for
			// its prompt, or for an answer at a question it asks first).
			learned, err := term.LearnPrompt(ctx)
			if errors.Is(err, tmux.ErrPaneDead) {
				last := lastLines(ctx, psrv, pane.ID, 3)
				if kerr := psrv.KillPane(context.WithoutCancel(ctx), pane.ID); kerr != nil && !errors.Is(kerr, tmux.ErrNoPane) {
					fmt.Fprintf(cmd.ErrOrStderr(), "parley: could not close tmux pane %s: %v\n", pane.ID, kerr)
				}
				return failed("%s exited before it waited at a prompt (%v)%s", args[0], err, last)
			}
			if err != nil {
				return failed("%s started in tmux pane %s, but it never waited quietly at a prompt: %v", args[0], pane.ID, err)
			}
			if err := psrv.KeepDead(ctx, pane.ID, false); err != nil && !errors.Is(err, tmux.ErrNoPane) {
				return failed("%v", err)
			}
			if err := c.WakeTerminal(ctx, info.Name, localapi.TerminalRequest{Socket: pane.Socket, Pane: pane.ID, Prompt: learned, Pattern: prompt, Session: session}); err != nil {
				// The program runs for an agent about to be unregistered:
				// its pane goes too, so that running run again (as a 504
				// says to) does not leave two copies of it.
				kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				kerr := psrv.KillPane(kctx, pane.ID)
				kcancel()
				if kerr != nil && !errors.Is(kerr, tmux.ErrNoPane) && !errors.Is(kerr, tmux.ErrNoServer) {
					return failed("the node could not make tmux pane %s the agent's wake-up route: %v; the pane could not be closed (%v): %s runs on in it, for no agent, so close it before you run it again",
						pane.ID, g.apiErr(err), kerr, args[0])
				}
				return failed("the node could not make tmux pane %s the agent's wake-up route: %v; the pane is closed", pane.ID, g.apiErr(err))
			}
			bound = true
			attach := tmux.Server{Socket: pane.Socket}.AttachCommand(pane.Session)
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "agent %s (%s) runs in tmux pane %s; the node wakes it there\n", info.Name, info.Address, pane.ID)
			if prompt == "" && strings.TrimSpace(learned) == "" {
				fmt.Fprintf(out, "note: %s waits with its cursor on a blank line, so the node takes a blank line, still for 1.5 s, for its empty prompt; a program that prints a line and works on without output shows the same, and may be pasted into\n", args[0])
			}
			attached := isTerminal(os.Stdin) && isTerminal(os.Stdout)
			if inTmux || detach || !attached {
				if !inTmux {
					if !detach {
						fmt.Fprintln(out, "not attached (this is not a terminal): it runs detached")
					}
					fmt.Fprintf(out, "attach: %s\n", shellJoin(attach))
				}
				return nil
			}
			bin, err := exec.LookPath(attach[0])
			if err != nil {
				return err
			}
			return syscall.Exec(bin, attach, os.Environ())
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the agent's name (default: the program and the folder, e.g. claude-api)")
	cmd.Flags().StringVar(&socket, "tmux-socket", "", "the tmux server's socket path (default: the tmux this runs in, else your default server)")
	cmd.Flags().BoolVar(&detach, "detach", false, "do not attach to the new tmux session")
	cmd.Flags().StringVar(&prompt, "prompt", "", "a regular expression of the program's empty prompt line (trailing blanks trimmed), instead of learning it from its first quiet screen")
	return cmd
}

// lastLines returns the last n lines a pane shows, for an error, or "".
func lastLines(ctx context.Context, s tmux.Server, pane string, n int) string {
	sc, err := s.Capture(ctx, pane)
	if err != nil {
		return ""
	}
	var lines []string
	for _, l := range sc.Lines {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "Pane is dead") {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "; it printed nothing"
	}
	return "; its last lines: " + termtext.Line(strings.Join(lines[max(0, len(lines)-n):], " | "))
}

// currentSession is the tmux session this process runs in.
func currentSession(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "tmux", "display-message", "-p", "#{session_name}").Output()
	if err != nil {
		return "", fmt.Errorf("cannot tell which tmux session this is: %v", err)
	}
	s := strings.TrimRight(string(out), "\r\n")
	if s == "" {
		return "", errors.New("cannot tell which tmux session this is")
	}
	return s, nil
}

func shellJoin(args []string) string {
	s := ""
	for i, a := range args {
		if i > 0 {
			s += " "
		}
		s += "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return s
}
