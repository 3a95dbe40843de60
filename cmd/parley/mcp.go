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
other machines can reach. The session key comes from --session, else CLAUDE_CODE_SESSION_ID,
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
				Channel: client == "claude-code", ClientPID: clientPID(), Home: home})
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

func detectSession() string {
	for _, k := range []string{"CLAUDE_CODE_SESSION_ID", "CODEX_THREAD_ID", "PARLEY_SESSION"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "mcp-" + rand.Text()
}

// ensureNode checks that a node answers for home. If none does and start is
// set, it starts one in the background that only this machine can reach
// (loopback addresses, no mDNS; log in HOME/node.log) and says so on w in
// one line.
func ensureNode(ctx context.Context, c *localapi.Client, w io.Writer, home string, start bool) error {
	if _, err := c.ID(ctx); err == nil {
		return nil
	} else if !errors.Is(err, localapi.ErrNoNode) {
		return err
	}
	if !start {
		return fmt.Errorf("no node is running for home %s (start one with `parley --home %s up`)", home, home)
	}
	ready, err := startBackground(ctx, home, "--loopback")
	if err != nil {
		if waitOtherNode(ctx, c, home) {
			return nil // another process started one first
		}
		return err
	}
	addrs := "?"
	if m := readyAddrs.FindStringSubmatch(ready); m != nil {
		addrs = m[1]
	}
	fmt.Fprintf(w, "parley: started a node for %s, reachable from this machine only (%s; no mDNS; log %s); stop it with `parley --home %s down`\n",
		home, addrs, filepath.Join(home, node.LogFileName), home)
	return nil
}

// waitOtherNode waits, up to readyTimeout, for a node that another process
// started for home to answer (several sessions starting at once: one node
// takes the home's lock and opens its socket a moment later, and the others'
// starts are refused). It reports whether one answers; it gives up at once
// when no node holds the home's lock.
func waitOtherNode(ctx context.Context, c *localapi.Client, home string) bool {
	deadline := time.NewTimer(readyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := c.ID(ctx); err == nil {
			return true
		}
		if held, _, err := node.HomeLockHolder(home); err != nil || !held {
			_, err := c.ID(ctx) // it may have opened its socket meanwhile
			return err == nil
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
}
