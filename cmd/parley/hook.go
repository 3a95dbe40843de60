package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/install"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/manual"
	"github.com/parley-mesh/parley/internal/mcp"
	"github.com/parley-mesh/parley/internal/termtext"
	"github.com/parley-mesh/parley/internal/transcript"
)

func init() {
	hookCommands[install.Claude] = []string{"SessionStart", "PostToolUse", "Stop"}
	hookCommands[install.Codex] = []string{"SessionStart", "PostToolUse", "Stop", "notify"}
	hookCommands[install.Gemini] = []string{"AfterTool"}
}

// hookInput is the part of a client's hook input Parley reads (Claude Code,
// Codex and Gemini CLI share these names).
type hookInput struct {
	SessionID      string `json:"session_id"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	ToolName       string `json:"tool_name"`
	StopHookActive bool   `json:"stop_hook_active"`
	Source         string `json:"source"`
	// TranscriptPath is the session's transcript (Claude Code) or rollout
	// file (Codex): where the client writes what the session spent.
	TranscriptPath string `json:"transcript_path"`
}

// maxHookInput is the most bytes of hook input read (a PostToolUse input
// carries the tool's whole output).
const maxHookInput = 16 << 20

// parseHookInput reads a client's hook input for event.
func parseHookInput(raw []byte, client install.Client, event string) (hookInput, error) {
	var in hookInput
	if len(raw) > maxHookInput {
		return in, fmt.Errorf("the hook input is over %d MiB", maxHookInput>>20)
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return in, fmt.Errorf("the hook input is not %s's JSON for %s: %v", client, event, err)
	}
	if in.SessionID == "" || len(in.SessionID) > 256 {
		return in, fmt.Errorf("the hook input has no session_id of 1 to 256 bytes (is this %s's %s hook?)", client, event)
	}
	if in.HookEventName != "" && !strings.EqualFold(in.HookEventName, event) {
		return in, fmt.Errorf("the hook input is for %s, not %s", in.HookEventName, event)
	}
	return in.inRun(), nil
}

// inRun is in with the run's session key in place of the client's when the
// client runs inside `parley run` (PARLEY_SESSION): the hook binds, wakes
// and waits for the run's agent, as the client's parley mcp does, not for
// another agent bound to the client's key.
func (in hookInput) inRun() hookInput {
	if s := os.Getenv(runSessionEnv); s != "" && len(s) <= 256 {
		in.SessionID = s
	}
	return in
}

// codexNotify is the JSON Codex's notify program gets as its last
// argument after a turn:
//
//	{"type":"agent-turn-complete","thread-id":…,"turn-id":…,"cwd":…,
//	 "client":…,"input-messages":[…],"last-assistant-message":…}
type codexNotify struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread-id"`
	TurnID   string `json:"turn-id"`
	Cwd      string `json:"cwd"`
}

// turnComplete is the notification that says a Codex thread is idle.
const turnComplete = "agent-turn-complete"

// parseCodexNotify reads Codex's notify argument. Another type of
// notification is no error: ok is false and nothing is to be done.
func parseCodexNotify(arg string) (in hookInput, ok bool, err error) {
	if len(arg) > maxHookInput {
		return in, false, fmt.Errorf("the notify argument is over %d MiB", maxHookInput>>20)
	}
	var n codexNotify
	if err := json.Unmarshal([]byte(arg), &n); err != nil {
		return in, false, fmt.Errorf("the notify argument is not Codex's notification JSON: %v", err)
	}
	if n.Type == "" {
		return in, false, fmt.Errorf("the notify argument has no type (is this Codex's notify?)")
	}
	if n.Type != turnComplete {
		return in, false, nil
	}
	if n.ThreadID == "" || len(n.ThreadID) > 256 {
		return in, false, fmt.Errorf("the notify argument has no thread-id of 1 to 256 bytes")
	}
	return hookInput{SessionID: n.ThreadID, Cwd: n.Cwd, HookEventName: "notify"}.inRun(), true, nil
}

// hookOutput is the documented JSON a hook prints to add context.
type hookOutput struct {
	HookSpecificOutput *hookSpecific `json:"hookSpecificOutput,omitempty"`
	Decision           string        `json:"decision,omitempty"`
	Reason             string        `json:"reason,omitempty"`
}

type hookSpecific struct {
	HookEventName     string `json:"hookEventName"`
	AdditionalContext string `json:"additionalContext"`
}

// maxContext is the most characters of additionalContext (Claude Code
// keeps 10,000).
const maxContext = 10000

// clientNames are the clients' program names, as parley mcp --client has them.
var clientNames = map[install.Client]string{install.Claude: "claude-code", install.Codex: "codex", install.Gemini: "gemini-cli"}

func hookCmd(g *globals) *cobra.Command {
	var waitFor time.Duration
	cmd := &cobra.Command{
		Use:   "hook CLIENT EVENT [NOTIFICATION]",
		Short: "Run as an agent client's hook (parley install writes these)",
		Long: `Run as a hook of an agent client: read the client's hook input (JSON) on stdin
and answer as the client's documentation says. parley install registers them.

  claude SessionStart  bind the session to its agent; what it has pending, as context
  claude PostToolUse   what the agent has pending, as context on every tool result
  claude Stop          (asyncRewake) wait while the session is idle; when an ask or
                       invitation comes for it, print it on stderr and exit 2, which
                       wakes the session; a newer Stop supersedes the waiter
  codex SessionStart, PostToolUse  as Claude Code's
  codex Stop           when the agent owes something unread, continue the turn with it
  codex notify JSON    (Codex's notify program; the JSON is its last argument, stdin is
                       not read) the thread is idle: what the agent owes and nothing can
                       bring it now is told to you (parley who, parley status) at once
  gemini AfterTool     what the agent has pending, as context on every tool result

Claude Code's and Codex's hooks also read the session's transcript (transcript_path)
from where the last hook stopped and report the tokens it records as the agent's
(parley usage); each record counts once, SessionStart only marks where the session
starts, and a transcript that cannot be read is a note on stderr, never a failure.

Malformed input is an error (exit 1) and changes nothing: what the agent owes stays
owed. With no node running a hook does nothing.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			client, err := install.ParseClient(args[0])
			if err != nil {
				return err
			}
			event := args[1]
			known := false
			for _, e := range hookCommands[client] {
				if strings.EqualFold(e, event) {
					event, known = e, true
				}
			}
			if !known {
				return fmt.Errorf("no hook %q for %s (there are: %s)", args[1], client, strings.Join(hookCommands[client], ", "))
			}
			var in hookInput
			if event == "notify" {
				// Codex runs its notify program with the notification as
				// the last argument; stdin is Codex's own terminal.
				if len(args) != 3 {
					return fmt.Errorf("codex notify takes Codex's notification JSON as its one argument")
				}
				var ok bool
				if in, ok, err = parseCodexNotify(args[2]); err != nil || !ok {
					return err
				}
			} else {
				if len(args) != 2 {
					return fmt.Errorf("the %s %s hook reads its input on stdin and takes no argument", client, event)
				}
				raw, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxHookInput+1))
				if err != nil {
					return fmt.Errorf("read the hook input: %v", err)
				}
				if in, err = parseHookInput(raw, client, event); err != nil {
					return err
				}
			}
			home, err := g.resolveHome()
			if err != nil {
				return err
			}
			c := localapi.NewClient(nodeSocket(home))
			defer c.Close()
			h := &hook{g: g, home: home, c: c, client: client, event: event, in: in, out: cmd.OutOrStdout(), errw: cmd.ErrOrStderr(), waitFor: waitFor}
			err = h.run(cmd.Context())
			if errors.Is(err, localapi.ErrNoNode) {
				return nil // no node: nothing is owed that a hook could show
			}
			return err
		},
	}
	// A minute under the timeout install gives the hook, so the waiter
	// ends by itself before Claude Code ends it.
	durationFlag(cmd.Flags(), &waitFor, "wait-for", install.ClaudeStopTimeout*time.Second-time.Minute, "claude Stop: how long the waiter waits at most")
	return cmd
}

// hook is one run of a hook command.
type hook struct {
	g       *globals
	home    string
	c       *localapi.Client
	client  install.Client
	event   string
	in      hookInput
	out     io.Writer
	errw    io.Writer
	waitFor time.Duration
	agent   localapi.AgentInfo
}

func (h *hook) run(ctx context.Context) error {
	bctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	if err := h.bind(bctx); err != nil {
		return err
	}
	h.spent(bctx)
	switch {
	case h.event == "Stop" && h.client == install.Claude:
		cancel()
		return h.stopWaiter(ctx)
	case h.event == "Stop":
		return h.stopContinue(bctx)
	case h.event == "notify":
		return h.c.WakeIdle(bctx, h.agent.Name, h.in.SessionID)
	case h.event == "PostToolUse" || h.event == "AfterTool":
		if h.client == install.Claude || h.client == install.Codex {
			if err := h.c.WakeBusy(bctx, h.agent.Name, h.in.SessionID); err != nil {
				return err
			}
		}
		if strings.HasPrefix(h.in.ToolName, "mcp__parley__") || strings.HasPrefix(h.in.ToolName, "parley_") {
			return nil // Parley's own tools carry the items already
		}
	}
	p, err := h.c.Take(localapi.WithTwoStep(bctx), h.agent.Name)
	if err != nil {
		return err
	}
	text, shown := manual.NoticeShown(p, h.agent.Address, manual.Shell{}, maxContext)
	text = named(bctx, h.c, text)
	if text == "" {
		return nil
	}
	if err := json.NewEncoder(h.out).Encode(hookOutput{HookSpecificOutput: &hookSpecific{HookEventName: h.event, AdditionalContext: text}}); err != nil {
		return err // not confirmed: the node offers the items again
	}
	h.ack(bctx, p, shown)
	return nil
}

// ack confirms the two-step hand-out of the items the hook printed (the
// node offers unconfirmed ones again after its hand wait): called only
// once they were written whole. It names the items the text showed
// (manual.NoticeShown): those the text left out, to keep within what the
// client takes, the node offers again at once, and they come with the
// agent's next tool result, as the text says.
func (h *hook) ack(ctx context.Context, p localapi.Pending, shown []string) {
	if p.Hand == "" {
		return
	}
	if showsAll(p, shown) {
		shown = nil // the whole hand-out, as a node from before shown lists takes it
	}
	if _, err := h.c.AckShown(ctx, h.agent.Name, p.Hand, shown); err != nil && h.event != "Stop" {
		fmt.Fprintln(h.errw, "parley: the node was not told the items were shown; it shows them again:", termtext.Line(err.Error()))
	}
}

// showsAll reports whether shown holds every item of p.
func showsAll(p localapi.Pending, shown []string) bool {
	for _, it := range p.Items {
		if !slices.Contains(shown, it.ID) {
			return false
		}
	}
	return true
}

// transcriptFormats are the clients whose hook inputs name a transcript
// that records usage.
var transcriptFormats = map[install.Client]transcript.Format{install.Claude: transcript.Claude, install.Codex: transcript.Codex}

// spent reads what the session spent since the last hook from its
// transcript and reports it to the node as the agent's. SessionStart only
// marks where the session starts (what a resumed session spent before is
// not counted). Nothing here fails the hook: problems are notes on stderr
// (none from Claude Code's Stop waiter, whose stderr wakes the session).
func (h *hook) spent(ctx context.Context) {
	f, ok := transcriptFormats[h.client]
	if !ok || h.in.TranscriptPath == "" {
		return
	}
	var notes []string
	defer func() {
		if h.event == "Stop" && h.client == install.Claude {
			return
		}
		for _, n := range notes {
			fmt.Fprintln(h.errw, "parley: usage:", termtext.Line(n))
		}
	}()
	cur := &transcript.Cursors{Path: filepath.Join(h.home, "hooks", "transcripts.json")}
	read := cur.Collect
	if h.event == "SessionStart" {
		read = cur.Skip
	}
	r, err := read(f, h.in.TranscriptPath)
	if err != nil {
		notes = append(notes, err.Error())
		return
	}
	defer r.Release()
	notes = append(notes, r.Notes...)
	if !r.Spent.Zero() {
		sp := r.Spent
		in, out, cr, cw := sp.In, sp.Out, sp.CacheRead, sp.CacheWrite
		rep := localapi.Spend{TokensIn: &in, TokensOut: &out, CacheReadTokens: &cr, CacheWriteTokens: &cw}
		if sp.HasCost {
			cost := sp.CostUSD
			rep.CostUSD = &cost
		}
		if err := h.c.Spent(ctx, h.agent.Name, rep); err != nil {
			notes = append(notes, fmt.Sprintf("the node did not take what the session spent (it is counted at the next hook): %v", err))
			return
		}
	}
	if err := r.Commit(); err != nil {
		notes = append(notes, err.Error())
	}
}

// bind finds the session's agent: the live agent bound to the session, else
// the client's live agent of the project's default name (a client whose MCP
// server does not know the session key), else it binds the session.
func (h *hook) bind(ctx context.Context) error {
	name := clientNames[h.client]
	fallback := mcp.DefaultAgentName(name, h.in.Cwd)
	as, err := h.c.Agents(ctx)
	if err != nil {
		return err
	}
	for _, a := range as {
		if a.Session == h.in.SessionID {
			h.agent = a
			return nil
		}
	}
	for _, a := range as {
		if a.Name == fallback && a.Client == name {
			h.agent = a
			return nil
		}
	}
	h.agent, err = h.c.Session(ctx, localapi.SessionRequest{Session: h.in.SessionID, Fallback: fallback, Client: name})
	return err
}

// stopWaiter is Claude Code's Stop hook (asyncRewake): it waits while the
// session is idle and, when the node hands it owed items, prints what the
// agent has pending on stderr and exits 2, which wakes the session. A newer
// waiter of the session (or the session working again) ends it quietly,
// also when it comes between two of the waiter's waits: each wait after
// the first names the previous one's answer (After), and the node ends the
// waiter at once if one of those came since.
func (h *hook) stopWaiter(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, h.waitFor)
	defer cancel()
	var after uint64
	for ctx.Err() == nil {
		w, err := h.c.WakeWait(ctx, h.agent.Name, localapi.WakeWaitRequest{Kind: localapi.WakeStop, Session: h.in.SessionID, Seconds: localapi.MaxWait.Seconds(), After: after})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if w.Superseded {
			return nil
		}
		after = w.Seq
		if len(w.Items) == 0 {
			continue
		}
		tctx, tcancel := context.WithTimeout(ctx, 8*time.Second)
		p, err := h.c.Take(localapi.WithTwoStep(tctx), h.agent.Name)
		tcancel()
		if err != nil {
			return err
		}
		text, shown := manual.NoticeShown(p, h.agent.Address, manual.Shell{}, maxContext)
		text = named(ctx, h.c, text)
		if text == "" {
			continue // read meanwhile
		}
		if _, err := fmt.Fprintln(h.errw, text); err != nil {
			return err // not confirmed: the node offers the items again
		}
		actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), 8*time.Second)
		h.ack(actx, p, shown)
		acancel()
		return exitError{2}
	}
	return nil
}

// stopContinue is Codex's Stop hook: when the agent owes something it has
// not seen, the turn goes on with it ({"decision":"block"}); otherwise the
// agent stops. Items are handed out when shown, so a second Stop with
// nothing new lets the agent stop.
func (h *hook) stopContinue(ctx context.Context) error {
	p, err := h.c.Peek(ctx, h.agent.Name)
	if err != nil {
		return err
	}
	fresh := false
	for _, it := range p.Items {
		fresh = fresh || it.Kind == "ask" || it.Kind == "invitation"
	}
	if !fresh {
		return nil
	}
	if p, err = h.c.Take(localapi.WithTwoStep(ctx), h.agent.Name); err != nil {
		return err
	}
	text, shown := manual.NoticeShown(p, h.agent.Address, manual.Shell{}, maxContext)
	text = named(ctx, h.c, text)
	if text == "" {
		return nil
	}
	if err := json.NewEncoder(h.out).Encode(hookOutput{Decision: "block", Reason: text}); err != nil {
		return err // not confirmed: the node offers the items again
	}
	h.ack(ctx, p, shown)
	return nil
}

// named writes the agent addresses in text as NAME@handle where the node's
// name is known, as Parley's tools do; the agent edge takes both back.
func named(ctx context.Context, c *localapi.Client, text string) string {
	if text == "" || len(localapi.Peers(text)) == 0 {
		return text
	}
	return nameBook(ctx, c).Text(text)
}
