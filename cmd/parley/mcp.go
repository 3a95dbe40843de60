package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/mcp"
	"github.com/parley-mesh/parley/node"
)

func mcpCmd(g *globals) *cobra.Command {
	var session, client, project string
	var noStart bool
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve Parley's tools to an agent over MCP (stdio); starts the node if needed",
		Long: `Serve Parley's MCP tools on stdin/stdout for one agent session.

Register it with your agent's client, for example:
  claude mcp add parley -- parley mcp
  codex mcp add parley -- parley mcp
  gemini mcp add parley parley mcp

If no node runs for the home, one is started in the background, reachable from
this machine only (127.0.0.1, no mDNS; its log goes to HOME/node.log), and one
line on stderr says so and how to stop it. Run ` + "`parley up -d`" + ` first for a node
other machines can reach. The session key comes from --session, else PARLEY_SESSION (set
by parley run, so a parley mcp inside a run is the run's agent), else CLAUDE_CODE_SESSION_ID,
else CODEX_THREAD_ID; the same key is the same agent, with its cursors. A new key
takes the default name (client and folder, e.g. claude-code-repo) when no live session
holds it, and so is that agent again: its rooms, the asks it owes and its unread
messages belong to the name (its role, capabilities and work start empty).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := g.resolveHome()
			if err != nil {
				return err
			}
			c := localapi.NewClient(node.SocketPath(home))
			defer c.Close()
			if err := ensureNode(cmd.Context(), c, cmd.ErrOrStderr(), home, !noStart); err != nil {
				return err
			}
			if project == "" {
				wd, err := os.Getwd()
				if err != nil {
					return fmt.Errorf("cannot tell the project folder (%v); pass --project", err)
				}
				project = wd
			}
			if client == "" {
				client = detectClient()
			}
			if session == "" {
				session = detectSession()
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			srv := mcp.New(mcp.Config{Client: c, Session: session, ClientName: client, Project: project, Logger: log,
				Channel: client == "claude-code", ClientPID: clientPID(), Home: home,
				UpCommand: func() string { return node.UpCommand(home, true) }})
			err = srv.Run(cmd.Context(), &mcp.LineTransport{In: cmd.InOrStdin(), Out: cmd.OutOrStdout(), Logger: log})
			if err != nil && !errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "EOF") {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "session key (default: from the client's environment, else new)")
	cmd.Flags().StringVar(&client, "client", "", "client name for the default agent name (default: detected)")
	cmd.Flags().StringVar(&project, "project", "", "project folder for the default agent name (default: the working folder)")
	cmd.Flags().BoolVar(&noStart, "no-start", false, "fail instead of starting a node when none runs")
	return cmd
}

func detectClient() string {
	switch {
	case os.Getenv("CLAUDECODE") != "" || os.Getenv("CLAUDE_CODE_SESSION_ID") != "":
		return "claude-code"
	case os.Getenv("CODEX_THREAD_ID") != "" || os.Getenv("CODEX_HOME") != "":
		return "codex"
	case os.Getenv("GEMINI_CLI") != "":
		return "gemini-cli"
	case os.Getenv("OPENCODE") != "":
		return "opencode"
	}
	return "mcp"
}

// clientPID is the process that started this MCP server: the agent's
// client program, which also runs the agent's shell commands (0 when this
// process was left to init).
func clientPID() int {
	if p := os.Getppid(); p > 1 {
		return p
	}
	return 0
}

// detectSession is the session key of a parley mcp started without
// --session: the run's (PARLEY_SESSION, which `parley run` gives its
// program) first, so that an MCP server a client starts inside a run is the
// run's agent, the one whose pane the node pastes into, and not another
// agent bound to the client's own key; else the client's; else a new one.
func detectSession() string {
	for _, k := range []string{runSessionEnv, "CLAUDE_CODE_SESSION_ID", "CODEX_THREAD_ID"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "mcp-" + rand.Text()
}

// ensureNode checks that a node answers for home. If none does and start is
// set, it starts one in the background that only this machine can reach
// (loopback addresses, no mDNS; log in HOME/node.log) and says so on w in
// one line. When another process holds the home (several sessions starting
// a node at once), it waits for that node to answer; when that process
// exits without a node answering, it starts one again, once.
func ensureNode(ctx context.Context, c *localapi.Client, w io.Writer, home string, start bool) error {
	if err := pingNode(ctx, c); err == nil {
		return nil
	} else if !errors.Is(err, localapi.ErrNoNode) {
		return err
	}
	if !start {
		return noNode{home}
	}
	for tries := 1; ; tries++ {
		ready, _, err := startBackground(ctx, home, "--loopback")
		if err == nil {
			addrs := "?"
			if m := readyAddrs.FindStringSubmatch(ready); m != nil {
				addrs = m[1]
			}
			fmt.Fprintf(w, "parley: started a node for %s, reachable from this machine only (%s; no mDNS; log %s); stop it with `parley --home %s down`\n",
				home, addrs, filepath.Join(home, node.LogFileName), home)
			return nil
		}
		if errors.Is(err, errNoReadyLine) || ctx.Err() != nil {
			return err // it waited its time already
		}
		if !strings.Contains(err.Error(), homeInUse) {
			return err // our node failed by itself (a damaged key, a bad config): no other to wait for
		}
		werr := waitOtherNode(ctx, c, home)
		switch {
		case werr == nil:
			return nil // another process started one first
		case errors.Is(werr, errHolderExited) && tries < 2:
			continue // the home is free now
		}
		return fmt.Errorf("%v; %v", err, werr)
	}
}

// homeInUse is what a start refused because another process holds the
// home says (node.ErrHomeLocked, as the child logs it).
var homeInUse = strings.TrimPrefix(node.ErrHomeLocked.Error(), "node: ")

// deadHolderGrace is how long the pid in the home's lock must look dead
// before waiting stops: a node writes its pid only after it took the lock,
// so a start in progress shows the pid of an earlier, gone holder a moment.
const deadHolderGrace = 2 * time.Second

// statusTimeout bounds one status call to the node: a socket that takes
// the connection and never answers (a stopped node) is no node.
const statusTimeout = 5 * time.Second

// pingNode asks the node for its ID, within statusTimeout.
func pingNode(ctx context.Context, c *localapi.Client) error {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	_, err := c.ID(ctx)
	if err != nil && ctx.Err() != nil && !errors.Is(err, localapi.ErrNoNode) {
		return fmt.Errorf("the node's socket took the call but nothing answered within %s: %w", statusTimeout, err)
	}
	return err
}

var (
	// errHolderExited: the process that held the home exited, and no node
	// answers.
	errHolderExited = errors.New("the process that held the home exited without a node answering")
	// errHolderDead: the home's lock names a process that does not run
	// (another process holds the lock).
	errHolderDead = errors.New("the home's lock is held, but the process it names does not run")
)

// waitOtherNode waits, up to readyTimeout, for a node that another process
// started for home to answer. It returns nil once one answers;
// errHolderExited when the home's lock is let go with no node answering;
// errHolderDead when the lock names a process that does not run (no node
// will answer); else why it stopped waiting.
func waitOtherNode(ctx context.Context, c *localapi.Client, home string) error {
	deadline := time.NewTimer(readyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	var deadPid int // the lock's pid that looked dead, since deadSince
	var deadSince time.Time
	for {
		if pingNode(ctx, c) == nil {
			return nil
		}
		held, pid, err := node.HomeLockHolder(home)
		if err != nil {
			return err
		}
		if !held {
			if pingNode(ctx, c) == nil { // it may have opened its socket meanwhile
				return nil
			}
			return errHolderExited
		}
		switch {
		case pid <= 0 || node.ProcessRuns(pid):
			deadPid, deadSince = 0, time.Time{}
		case pid != deadPid:
			deadPid, deadSince = pid, time.Now()
		case time.Since(deadSince) > deadHolderGrace:
			return fmt.Errorf("%w (pid %d in %s)", errHolderDead, pid, filepath.Join(home, node.LockFileName))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("no node answered for %s within %s", home, readyTimeout)
		case <-tick.C:
		}
	}
}
