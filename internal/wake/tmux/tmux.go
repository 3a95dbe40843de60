package tmux

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Server is one tmux server: the user's own (the zero value), one named by
// a socket name (tmux -L) or one at a socket path (tmux -S).
type Server struct {
	// Socket is the server's socket path (tmux -S). It wins over Name.
	Socket string
	// Name is a socket name in tmux's socket folder (tmux -L).
	Name string
	// Config is the file a server that Start starts reads (tmux -f); empty
	// means tmux's default (~/.tmux.conf). Tests use /dev/null.
	Config string
	// Bin is the tmux program; empty means "tmux" on PATH.
	Bin string
}

// run runs one tmux command line (commands may be joined with ";") and
// returns its standard output.
func (s Server) run(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	out, _, err := s.runStderr(ctx, stdin, args...)
	return out, err
}

// runStderr is run that also returns what tmux wrote on stderr when it
// succeeded (a tmux that cannot create its server's socket says so there
// and exits 0).
func (s Server) runStderr(ctx context.Context, stdin io.Reader, args ...string) (string, string, error) {
	bin := s.Bin
	if bin == "" {
		bin = "tmux"
	}
	var pre []string
	switch {
	case s.Socket != "":
		pre = append(pre, "-S", s.Socket)
	case s.Name != "":
		pre = append(pre, "-L", s.Name)
	}
	if s.Config != "" {
		pre = append(pre, "-f", s.Config)
	}
	cmd := exec.CommandContext(ctx, bin, append(pre, args...)...)
	// When ctx ends, the tmux client and whatever it started (a wrapper
	// script's tmux, say) are killed together, and Run does not wait long
	// for a pipe something left behind still holds: a call that hangs runs
	// out when its ctx does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err == nil {
		return out.String(), strings.TrimSpace(errb.String()), nil
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		// Not on PATH, or Bin names no file.
		return "", "", fmt.Errorf("%w (%s)", ErrNoTmux, bin)
	}
	if ctx.Err() != nil {
		return "", "", fmt.Errorf("tmux %s: %w", args[0], ctx.Err())
	}
	msg := strings.TrimSpace(errb.String())
	switch {
	case strings.Contains(msg, "no server running"), strings.Contains(msg, "error connecting to"),
		strings.Contains(msg, "server exited"), strings.Contains(msg, "lost server"):
		return "", "", fmt.Errorf("%w (%s)", ErrNoServer, msg)
	case strings.Contains(msg, "can't find pane"), strings.Contains(msg, "can't find window"),
		strings.Contains(msg, "can't find session"), strings.Contains(msg, "no such"):
		return "", "", fmt.Errorf("%w (%s)", ErrNoPane, msg)
	case strings.Contains(msg, "no current target"):
		return "", "", s.noCurrentTarget(ctx, args, msg)
	case strings.Contains(msg, "duplicate session"):
		return "", "", fmt.Errorf("%w (%s)", ErrSessionExists, msg)
	}
	if msg == "" {
		msg = err.Error()
	}
	return "", "", fmt.Errorf("tmux %s: %s", args[0], msg)
}

// noCurrentTarget is the error of a command that tmux answered with "no
// current target": tmux says so, before it looks at the target, when it
// finds no session to start from. That is a server whose last session just
// ended (it has not exited yet), but also, in tmux 3.6b and later, a
// server whose sessions are all, for a moment, no use as a start (a session
// of a group being synchronised has no current window). So the pane the
// command named (-t %N) is gone (ErrNoPane) only when tmux, asked again
// (list-sessions, which takes no target), lists no session, or lists none
// of its panes; else the error is one of its own, which says nothing of
// the pane.
func (s Server) noCurrentTarget(ctx context.Context, args []string, msg string) error {
	pane := ""
	for i, a := range args[:len(args)-1] {
		if a == "-t" && strings.HasPrefix(args[i+1], "%") {
			pane = args[i+1]
		}
	}
	out, err := s.run(ctx, nil, "list-sessions", "-F", "#{W:#{P:#{pane_id} }}")
	switch {
	case errors.Is(err, ErrNoServer):
		return err
	case err == nil && pane != "" && !slices.Contains(strings.Fields(out), pane):
		return fmt.Errorf("%w (%s; tmux lists no such pane)", ErrNoPane, msg)
	case err == nil && pane == "" && strings.TrimSpace(out) == "":
		return fmt.Errorf("%w (%s; tmux lists no session)", ErrNoPane, msg)
	}
	return fmt.Errorf("tmux %s: %s", args[0], msg)
}

// Pane names one pane for good: its ID does not change while it lives, and
// Socket finds its server again from another process.
type Pane struct {
	ID      string `json:"id"`      // "%3"
	Session string `json:"session"` // the session's name
	Window  string `json:"window"`  // "@2"
	Socket  string `json:"socket"`  // the server's socket path
	PID     int    `json:"pid"`     // the pane's first process
}

// Server returns the server the pane lives on.
func (p Pane) Server() Server { return Server{Socket: p.Socket} }

// State is a pane's state at one moment.
type State struct {
	Pane
	Dead       bool // its program has exited (the pane is kept)
	ExitStatus int  // the program's exit status, when Dead and StatusKnown
	// StatusKnown: tmux has the exit status. A pane is dead once its
	// terminal closes, which may come a moment before tmux reaps the
	// program (or the program died of a signal).
	StatusKnown bool
	InMode      bool   // copy or view mode: a person is scrolling
	CursorX     int    // from 0
	CursorY     int    // from 0, the line of the visible screen
	Width       int    // columns
	Height      int    // lines
	Command     string // the program in the foreground
}

const stateFormat = "#{pane_id}\t#{session_name}\t#{window_id}\t#{socket_path}\t#{pane_pid}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_in_mode}\t#{cursor_x}\t#{cursor_y}\t#{pane_width}\t#{pane_height}\t#{pane_current_command}"

func parseState(line string) (State, error) {
	// The command is the last field and may hold tabs of its own.
	f := strings.SplitN(strings.TrimRight(line, "\r\n"), "\t", 13)
	if len(f) != 13 {
		return State{}, fmt.Errorf("tmux: unexpected pane description %q", line)
	}
	n := func(s string) int { v, _ := strconv.Atoi(s); return v }
	return State{
		Pane:        Pane{ID: f[0], Session: f[1], Window: f[2], Socket: f[3], PID: n(f[4])},
		Dead:        f[5] == "1",
		ExitStatus:  n(f[6]),
		StatusKnown: f[6] != "",
		InMode:      f[7] == "1",
		CursorX:     n(f[8]),
		CursorY:     n(f[9]),
		Width:       n(f[10]),
		Height:      n(f[11]),
		Command:     f[12],
	}, nil
}

// StartOptions says what Start runs and where.
type StartOptions struct {
	// Command is the program and its arguments (run directly, not through
	// a shell).
	Command []string
	// Session names a new session ("." and ":" become "_", as tmux has
	// them); empty means a name Parley makes up.
	Session string
	// InSession, when set, opens a new window in that existing session
	// instead of a new session.
	InSession string
	// Window names the window; empty lets tmux name it after the program.
	Window string
	// Dir is the working folder; empty means tmux's choice.
	Dir string
	// Env is extra KEY=VALUE environment for the program.
	Env []string
	// Width and Height size a new session (default 200 by 50).
	Width, Height int
	// KeepDead keeps the pane when its program exits (remain-on-exit), so
	// that its end is seen (ErrPaneDead) rather than the pane vanishing.
	KeepDead bool
}

// Start runs a program in a new detached session (or a new window of an
// existing one) and returns its pane.
func (s Server) Start(ctx context.Context, o StartOptions) (Pane, error) {
	if len(o.Command) == 0 {
		return Pane{}, errors.New("tmux: start: no command")
	}
	tmp := "parley-" + randomHex(6)
	// tmux turns "." and ":" in a session name into "_"; so does Start, so
	// that the name it targets is the one tmux made.
	session := strings.NewReplacer(".", "_", ":", "_").Replace(o.Session)
	var args []string
	if o.InSession != "" {
		session = o.InSession
		args = []string{"new-window", "-d", "-t", "=" + session + ":", "-n", tmp}
	} else {
		if session == "" {
			session = tmp
		}
		w, h := o.Width, o.Height
		if w <= 0 {
			w = 200
		}
		if h <= 0 {
			h = 50
		}
		args = []string{"new-session", "-d", "-s", session, "-n", tmp, "-x", strconv.Itoa(w), "-y", strconv.Itoa(h)}
	}
	args = append(args, "-P", "-F", stateFormat)
	if o.Dir != "" {
		args = append(args, "-c", o.Dir)
	}
	for _, e := range o.Env {
		args = append(args, "-e", e)
	}
	cmdArgs := o.Command
	if len(cmdArgs) == 1 {
		// One argument would go through sh -c; run it as a program.
		cmdArgs = []string{"exec " + shellQuote(cmdArgs[0])}
	}
	args = append(args, "--")
	for _, a := range cmdArgs {
		// tmux takes an argument that ends in ";" for the end of a tmux
		// command (and drops the ";"), but one that ends in "\;" for an
		// argument ending in ";".
		if strings.HasSuffix(a, ";") {
			a = a[:len(a)-1] + `\;`
		}
		args = append(args, a)
	}
	// The window has a unique name until these commands, which run before
	// tmux can see the program exit, have set it up.
	target := "=" + session + ":=" + tmp
	if o.KeepDead {
		args = append(args, ";", "set-option", "-w", "-t", target, "remain-on-exit", "on")
	}
	if o.Window != "" {
		args = append(args, ";", "rename-window", "-t", target, o.Window)
	} else {
		args = append(args, ";", "set-option", "-w", "-t", target, "automatic-rename", "on")
	}
	out, stderr, err := s.runStderr(ctx, nil, args...)
	if err != nil {
		return Pane{}, fmt.Errorf("tmux: start %q: %w", strings.Join(o.Command, " "), err)
	}
	if strings.TrimSpace(out) == "" {
		if stderr == "" {
			stderr = "it made no pane"
		}
		return Pane{}, fmt.Errorf("tmux: start %q: %s", strings.Join(o.Command, " "), stderr)
	}
	st, err := parseState(strings.SplitN(out, "\n", 2)[0])
	if err != nil {
		return Pane{}, err
	}
	return st.Pane, nil
}

// FindPane binds a pane by any tmux target: a pane ID ("%3"), a session
// name, or "session:window.pane".
func (s Server) FindPane(ctx context.Context, target string) (Pane, error) {
	st, err := s.Inspect(ctx, target)
	return st.Pane, err
}

// Inspect returns a pane's state.
func (s Server) Inspect(ctx context.Context, pane string) (State, error) {
	st, _, err := s.capture(ctx, pane, false)
	return st, err
}

// Screen is what a pane shows: its visible lines (trailing blanks
// trimmed) and where the cursor is.
type Screen struct {
	State
	Lines []string
}

// CursorLine returns the line the cursor is on.
func (sc Screen) CursorLine() string {
	if sc.CursorY >= 0 && sc.CursorY < len(sc.Lines) {
		return sc.Lines[sc.CursorY]
	}
	return ""
}

// Text returns the visible lines joined, without trailing empty lines.
func (sc Screen) Text() string {
	return strings.TrimRight(strings.Join(sc.Lines, "\n"), "\n")
}

// Capture returns what the pane shows now.
func (s Server) Capture(ctx context.Context, pane string) (Screen, error) {
	st, lines, err := s.capture(ctx, pane, true)
	return Screen{State: st, Lines: lines}, err
}

// capture reads a pane's state and, with screen, its visible lines, in one
// tmux command so that they match.
func (s Server) capture(ctx context.Context, pane string, screen bool) (State, []string, error) {
	id, err := s.resolve(ctx, pane)
	if err != nil {
		return State{}, nil, err
	}
	// list-panes fails for a pane that does not exist (display-message
	// would quietly describe another one); the filter keeps our pane only.
	args := []string{"list-panes", "-t", id, "-f", "#{==:#{pane_id}," + id + "}", "-F", stateFormat}
	if screen {
		args = append(args, ";", "capture-pane", "-p", "-t", id)
	}
	out, err := s.run(ctx, nil, args...)
	if err != nil {
		return State{}, nil, fmt.Errorf("tmux: pane %s: %w", pane, err)
	}
	first, rest, _ := strings.Cut(out, "\n")
	st, err := parseState(first)
	if err != nil {
		return State{}, nil, err
	}
	if st.ID != id {
		return State{}, nil, fmt.Errorf("tmux: pane %s: %w", pane, ErrNoPane)
	}
	if !screen {
		return st, nil, nil
	}
	lines := strings.Split(strings.TrimSuffix(rest, "\n"), "\n")
	if len(lines) > st.Height {
		lines = lines[:st.Height]
	}
	for len(lines) < st.Height {
		lines = append(lines, "")
	}
	return st, lines, nil
}

// resolve turns a target into a pane ID (the active pane of a session or
// window).
func (s Server) resolve(ctx context.Context, target string) (string, error) {
	if strings.HasPrefix(target, "%") {
		return target, nil
	}
	out, err := s.run(ctx, nil, "list-panes", "-t", target, "-F", "#{pane_active} #{pane_id}")
	if err != nil {
		return "", fmt.Errorf("tmux: pane %s: %w", target, err)
	}
	id := ""
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		active, pid, _ := strings.Cut(l, " ")
		if id == "" || active == "1" {
			id = pid
		}
	}
	if id == "" {
		return "", fmt.Errorf("tmux: pane %s: %w", target, ErrNoPane)
	}
	return id, nil
}

// Paste puts text into the pane as one paste: load-buffer from stdin, then
// paste-buffer -p (bracketed when the program asked the terminal for it;
// tmux adds the brackets) -r (newlines stay newlines) -d (the buffer goes
// afterwards). It sends no Enter and checks nothing; Terminal.Deliver is
// the careful way in.
func (s Server) Paste(ctx context.Context, pane, text string) error {
	buf := "parley-" + randomHex(8)
	if _, err := s.run(ctx, strings.NewReader(text), "load-buffer", "-b", buf, "-"); err != nil {
		return fmt.Errorf("tmux: paste into %s: %w", pane, err)
	}
	if _, err := s.run(ctx, nil, "paste-buffer", "-p", "-r", "-d", "-b", buf, "-t", pane); err != nil {
		// Best effort: the buffer would otherwise linger in tmux's list.
		_, _ = s.run(context.WithoutCancel(ctx), nil, "delete-buffer", "-b", buf)
		return fmt.Errorf("tmux: paste into %s: %w", pane, err)
	}
	return nil
}

// Enter presses Enter in the pane, and in that pane alone: a carriage
// return written to it as a paste (paste-buffer without -p, so not
// bracketed, and -r, so kept as it is), which is what tmux writes for the
// Enter key. send-keys is no way to do it: it presses a key as a person
// does, and tmux gives such a key to every pane of a window whose panes are
// synchronized (synchronize-panes), where an Enter would send whatever a
// person had half typed in another pane.
func (s Server) Enter(ctx context.Context, pane string) error {
	buf := "parley-" + randomHex(8)
	if _, err := s.run(ctx, nil, "set-buffer", "-b", buf, "\r", ";", "paste-buffer", "-r", "-d", "-b", buf, "-t", pane); err != nil {
		// Best effort: the buffer would otherwise linger in tmux's list.
		_, _ = s.run(context.WithoutCancel(ctx), nil, "delete-buffer", "-b", buf)
		return fmt.Errorf("tmux: Enter in %s: %w", pane, err)
	}
	return nil
}

// SendKeys sends keys by their tmux names ("Enter", "C-u"), each a key
// press of its own.
func (s Server) SendKeys(ctx context.Context, pane string, keys ...string) error {
	if _, err := s.run(ctx, nil, append([]string{"send-keys", "-t", pane}, keys...)...); err != nil {
		return fmt.Errorf("tmux: keys to %s: %w", pane, err)
	}
	return nil
}

// Type sends text as typed keys (send-keys -l), the way a person at the
// keyboard would; tests use it to stand in for one.
func (s Server) Type(ctx context.Context, pane, text string) error {
	if _, err := s.run(ctx, nil, "send-keys", "-t", pane, "-l", text); err != nil {
		return fmt.Errorf("tmux: type into %s: %w", pane, err)
	}
	return nil
}

// KillPane closes a pane (and ends its program).
func (s Server) KillPane(ctx context.Context, pane string) error {
	_, err := s.run(ctx, nil, "kill-pane", "-t", pane)
	return err
}

// KillServer ends the server and every session on it. Tests use it on
// their private servers.
func (s Server) KillServer(ctx context.Context) error {
	_, err := s.run(ctx, nil, "kill-server")
	if errors.Is(err, ErrNoServer) {
		return nil
	}
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	return hex.EncodeToString(b)
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Current returns the tmux server and pane this process runs in, from
// $TMUX ("socket,pid,session") and $TMUX_PANE, when it runs inside tmux.
func Current(getenv func(string) string) (Server, string, bool) {
	v := getenv("TMUX")
	if v == "" {
		return Server{}, "", false
	}
	sock, _, _ := strings.Cut(v, ",")
	if sock == "" {
		return Server{}, "", false
	}
	return Server{Socket: sock}, getenv("TMUX_PANE"), true
}

// AttachCommand returns the command line that shows a session in the
// terminal (tmux attach-session), for a person to run or a program to exec.
func (s Server) AttachCommand(session string) []string {
	bin := s.Bin
	if bin == "" {
		bin = "tmux"
	}
	cmd := []string{bin}
	switch {
	case s.Socket != "":
		cmd = append(cmd, "-S", s.Socket)
	case s.Name != "":
		cmd = append(cmd, "-L", s.Name)
	}
	return append(cmd, "attach-session", "-t", "="+session)
}

// KeepDead sets whether the pane's window stays when its program exits
// (remain-on-exit).
func (s Server) KeepDead(ctx context.Context, pane string, on bool) error {
	v := "off"
	if on {
		v = "on"
	}
	if _, err := s.run(ctx, nil, "set-option", "-w", "-t", pane, "remain-on-exit", v); err != nil {
		return fmt.Errorf("tmux: remain-on-exit of %s: %w", pane, err)
	}
	return nil
}
