package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/manual"
	"github.com/parley-mesh/parley/internal/mcp"
	"github.com/parley-mesh/parley/internal/wake/appserver"
)

func codexCmd(g *globals) *cobra.Command {
	var name, thread string
	cmd := &cobra.Command{
		Use:   "codex [--name AGENT] [--thread ID] [-- APP-SERVER COMMAND...]",
		Short: "Run a Codex thread through codex app-server, woken by the node when something is asked of it",
		Long: `Start codex app-server (or the command given after --), start a thread (or take up
--thread), and bind it to an agent of this node. When an ask or an invitation comes for
the agent, the node hands it here: a new turn when the thread is idle (turn/start), or
the running turn when it is busy (turn/steer). Runs until the app-server exits or it is
interrupted. The thread's parley mcp (CODEX_THREAD_ID) is the same agent.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			home, err := g.resolveHome()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			c := localapi.NewClient(nodeSocket(home))
			defer c.Close()
			sctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if err := ensureNode(sctx, c, cmd.ErrOrStderr(), home, true); err != nil {
				return err
			}
			if len(args) == 0 {
				args = []string{"codex", "app-server"}
			}
			wd, err := os.Getwd()
			if err != nil {
				return err
			}
			srv := exec.CommandContext(ctx, args[0], args[1:]...)
			srv.Env = append(os.Environ(), "PARLEY_HOME="+home)
			srv.Stderr = cmd.ErrOrStderr()
			in, err := srv.StdinPipe()
			if err != nil {
				return err
			}
			out, err := srv.StdoutPipe()
			if err != nil {
				return err
			}
			if err := srv.Start(); err != nil {
				return fmt.Errorf("cannot start %s: %v", strings.Join(args, " "), err)
			}
			defer func() {
				in.Close()
				srv.Wait() //nolint:errcheck // it is stopping
			}()
			as := appserver.New(out, in)
			if err := as.Initialize(sctx, "parley", "1"); err != nil {
				return err
			}
			if thread == "" {
				if thread, err = as.StartThread(sctx, wd); err != nil {
					return err
				}
			} else if err := as.ResumeThread(sctx, thread); err != nil {
				return err
			}
			// The app-server is the agent's client program: the commands
			// its thread runs are the agent's (parley guard, room log).
			info, err := c.Session(sctx, localapi.SessionRequest{Session: thread, Name: name,
				Fallback: mcp.DefaultAgentName("codex", wd), Client: "codex", ClientPID: srv.Process.Pid})
			if err != nil {
				return g.apiErr(err)
			}
			cancel()
			fmt.Fprintf(cmd.OutOrStdout(), "agent %s (%s) is Codex thread %s; the node wakes it there\n", info.Name, info.Address, thread)
			return serveAppServer(ctx, c, as, info, thread, srv.Process.Pid, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the agent's name (default: codex and the folder, e.g. codex-api)")
	cmd.Flags().StringVar(&thread, "thread", "", "take up this thread instead of starting one")
	return cmd
}

// serveAppServer is the app-server route: it waits on the node for owed
// items and hands each batch to the thread, keeping the agent registered.
// A newer waiter of the thread (another parley codex) ends it, also when
// it comes between two of its waits (while it hands a batch, say): each
// wait after the first names the previous answer's Seq (After), and the
// node ends the route at once if one came since. Each wait gives the
// route's key (Waiter): a wait of its own that failed on its side is no
// newer waiter to the node, so the next wait, with the same After, goes
// on (before, it ended the route: "another parley codex took over").
func serveAppServer(ctx context.Context, c *localapi.Client, as *appserver.Client, info localapi.AgentInfo, thread string, clientPID int, logw io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-as.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	go func() {
		t := time.NewTicker(20 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := c.Heartbeat(ctx, info.Name, localapi.HeartbeatRequest{}); localapi.IsCode(err, localapi.CodeUnknownAgent) {
					c.Session(ctx, localapi.SessionRequest{Session: thread, Client: "codex", ClientPID: clientPID}) //nolint:errcheck // tried again at the next tick
				}
			}
		}
	}()
	var after uint64 // the Seq of the last answer (0: none yet)
	waiter := rand.Text()
	for ctx.Err() == nil {
		w, err := c.WakeWait(ctx, info.Name, localapi.WakeWaitRequest{Kind: localapi.WakeAppServer, Session: thread, Seconds: localapi.MaxWait.Seconds(), After: after, Waiter: waiter})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if errors.Is(err, localapi.ErrNoNode) {
				return err
			}
			fmt.Fprintf(logw, "parley codex: %v\n", err)
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
			continue
		}
		if w.Superseded {
			return errors.New("another parley codex took over this thread")
		}
		after = w.Seq // also when it is handed nothing, or the thread is not handed the items
		if len(w.Items) == 0 {
			continue
		}
		// The items are taken in two steps, as a hook takes what it
		// shows: the thread has them once a turn starts with them (or
		// the running one is steered with them), and only then are they
		// confirmed read. Before, the route handed the thread a wake
		// text and confirmed nothing: the node took the asks for unread,
		// told the human the agent was not reached once the limit
		// passed, and every later tool result carried them again.
		tctx, tcancel := context.WithTimeout(ctx, 8*time.Second)
		p, err := c.Take(localapi.WithTwoStep(tctx), info.Name)
		tcancel()
		if err != nil {
			fmt.Fprintf(logw, "parley codex: could not take %d items for the thread: %v\n", len(w.Items), err)
			continue
		}
		text, shown := manual.NoticeShown(p, info.Address, manual.Shell{}, maxContext)
		if text = named(ctx, c, text); text == "" {
			continue // read meanwhile
		}
		steered, err := as.Deliver(ctx, thread, text)
		if err != nil {
			// Not confirmed: the node offers the items again after its
			// hand wait.
			fmt.Fprintf(logw, "parley codex: could not hand %d items to the thread: %v\n", len(p.Items), err)
			continue
		}
		if p.Hand != "" {
			if showsAll(p, shown) {
				shown = nil
			}
			actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), 8*time.Second)
			if _, err := c.AckShown(actx, info.Name, p.Hand, shown); err != nil {
				fmt.Fprintf(logw, "parley codex: the node was not told the items were handed to the thread; it offers them again: %v\n", err)
			}
			acancel()
		}
		how := "started a turn"
		if steered {
			how = "steered the running turn"
		}
		fmt.Fprintf(logw, "parley codex: %d items for %s: %s\n", len(p.Items), info.Name, how)
	}
	return nil // interrupted, or the app-server exited
}
