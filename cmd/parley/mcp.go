package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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

If no node runs for the home, one is started in the background (its log goes to
HOME/node.log). The session key comes from --session, else CLAUDE_CODE_SESSION_ID,
else CODEX_THREAD_ID; the same key is the same agent, with its cursors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := g.resolveHome()
			if err != nil {
				return err
			}
			c := localapi.NewClient(node.SocketPath(home))
			defer c.Close()
			if err := ensureNode(cmd.Context(), c, home, !noStart); err != nil {
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
			srv := mcp.New(mcp.Config{Client: c, Session: session, ClientName: client, Project: project, Logger: log})
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

func detectSession() string {
	for _, k := range []string{"CLAUDE_CODE_SESSION_ID", "CODEX_THREAD_ID", "PARLEY_SESSION"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "mcp-" + rand.Text()
}

// ensureNode checks that a node answers for home, starting one in the
// background (log in HOME/node.log) if allowed.
func ensureNode(ctx context.Context, c *localapi.Client, home string, start bool) error {
	if _, err := c.ID(ctx); err == nil {
		return nil
	} else if !errors.Is(err, localapi.ErrNoNode) {
		return err
	}
	if !start {
		return fmt.Errorf("no node is running for home %s (start one with `parley --home %s up`)", home, home)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	logPath := filepath.Join(home, node.LogFileName)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("cannot open node log %s: %v", logPath, err)
	}
	defer logf.Close()
	cmd := exec.Command(exe, "--home", home, "up")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives this MCP session
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start a node: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := c.ID(ctx); err == nil {
			return nil
		}
		select {
		case err := <-exited:
			tail, _ := os.ReadFile(logPath)
			lines := strings.Split(strings.TrimSpace(string(tail)), "\n")
			return fmt.Errorf("the node started for %s exited (%v): %s", home, err, lines[len(lines)-1])
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fmt.Errorf("the node started for %s did not answer within 20 s; see %s", home, logPath)
}
