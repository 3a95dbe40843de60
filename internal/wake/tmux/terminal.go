package tmux

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Options tune how a Terminal tells the agent is idle.
type Options struct {
	// Quiet is how long the screen must stay unchanged for the agent to
	// count as idle. Zero means 1.5 s.
	Quiet time.Duration
	// Poll is how often the screen is read while waiting. Zero means 100 ms.
	Poll time.Duration
	// Prompt matches the cursor line when the agent waits at an empty
	// prompt (for example `^> ?$`; tmux trims trailing blanks). A match of
	// a line that is not blank, on a screen that did not change between
	// two looks, counts as idle at once (a blank line counts after Quiet); a quiet screen whose cursor line does not match holds a
	// person's draft. Without it, LearnPrompt records the empty prompt.
	Prompt *regexp.Regexp
	// Relearn says Prompt only matches a line learned from one screen (a
	// LearnPrompt of another Terminal, quoted), which may have been a
	// question the program asked before its prompt: it is learned again
	// as a prompt LearnPrompt recorded is (see Terminal). A pattern a
	// person gave is never learned again.
	Relearn bool
	// EnterDelay is the pause between the paste and the Enter key, so the
	// program has taken the paste before Enter arrives. Zero means 80 ms.
	EnterDelay time.Duration
	// EnterLimit is how long the Enter after a paste gets. It is sent
	// whatever becomes of Deliver's ctx (a paste is not left at the prompt
	// without its Enter), but a tmux that hangs there must not hold Deliver
	// for good: its tmux call is killed when this runs out. Zero means 10 s.
	EnterLimit time.Duration
	// PID, when set, is the pane's first process the Terminal is for: a
	// look that finds another one (the pane was respawned with a new
	// program) is ErrPaneReplaced, and nothing is pasted.
	PID int
	// Flatten turns newlines into spaces, for programs that do not take
	// bracketed paste (where a newline would send half the text).
	Flatten bool
}

func (o Options) withDefaults() Options {
	if o.Quiet <= 0 {
		o.Quiet = 1500 * time.Millisecond
	}
	if o.Poll <= 0 {
		o.Poll = 100 * time.Millisecond
	}
	if o.EnterDelay <= 0 {
		o.EnterDelay = 80 * time.Millisecond
	}
	if o.EnterLimit <= 0 {
		o.EnterLimit = 10 * time.Second
	}
	return o
}

// Activity is what the program in a pane is doing, as its screen shows.
type Activity int

// What a Terminal can see.
const (
	// Busy: the screen is still changing.
	Busy Activity = iota
	// Idle: the screen is quiet and the prompt is empty (or, before the
	// prompt is known, just quiet).
	Idle
	// Draft: the screen is quiet, but someone's unsent input is at the prompt.
	Draft
	// Scrolling: the pane is in copy or view mode.
	Scrolling
	// Dead: the program has exited (the pane was kept).
	Dead
)

func (a Activity) String() string {
	switch a {
	case Idle:
		return "idle"
	case Draft:
		return "draft"
	case Scrolling:
		return "scrolling"
	case Dead:
		return "dead"
	}
	return "busy"
}

// Terminal is a pane bound to a terminal agent. It reads the screen to
// tell when the agent is idle, knows what its empty prompt looks like, and
// delivers text only then: pasted as one paste, then Enter as a key of its
// own, never over a person's half-typed input. Its methods may be called
// from several goroutines.
type Terminal struct {
	server Server
	pane   string
	opts   Options

	// mu guards the screen history and the learned prompt below (small
	// leaf state; no tmux call is made while it is held).
	mu      sync.Mutex
	last    string    // the last screen seen, with the cursor
	changed time.Time // when the screen last changed
	looks   int       // looks since it last changed
	prompt  string    // the cursor line at the empty prompt, once learned
	promptX int
	learned bool
	// pattern is the empty prompt's pattern: Options.Prompt, or the line
	// learned again in its place (with Options.Relearn).
	pattern *regexp.Regexp
	// What learning the prompt again goes by (relearn): whether a look was
	// made before, the cursor row at the last look, the cursor line when
	// the cursor came to its row (arrived, when arrivedOK), the screen
	// when the prompt was learned (base, once based), and whether the
	// program came back to that prompt since (confirmed).
	seen      bool
	row       int
	arrived   string
	arrivedOK bool
	base      string
	based     bool
	confirmed bool
	again     string // the prompt line last learned again, "" before
}

// MaxRelearned is the longest line, in columns, a prompt is learned again
// at: prompts are short ("> ", "❯ ", "codex> ", "user@host:~$ "), and a
// longer line is rather a draft typed at the real prompt.
const MaxRelearned = 24

// RelearnQuiet is how long, at least, the screen stays the same at a new
// cursor line before that line is learned again for the prompt; it is
// twice Options.Quiet when that is longer.
const RelearnQuiet = 3 * time.Second

// Bind binds a pane (by ID, or any tmux target) of a server.
func Bind(s Server, pane string, o Options) *Terminal {
	return &Terminal{server: s, pane: pane, opts: o.withDefaults(), pattern: o.Prompt}
}

// Prompt returns the empty prompt line learned last (by LearnPrompt, or
// learned again), or "" when the prompt is a pattern that was not learned
// again.
func (t *Terminal) Prompt() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.again != "":
		return t.again
	case t.learned:
		return t.prompt
	}
	return ""
}

// Pane returns the bound pane's target.
func (t *Terminal) Pane() string { return t.pane }

// Look reads the screen once and says what the agent is doing. Idleness
// needs history: an agent counts as idle only once its screen has stayed
// the same for Options.Quiet across looks.
func (t *Terminal) Look(ctx context.Context) (Activity, Screen, error) {
	sc, err := t.server.Capture(ctx, t.pane)
	if err != nil {
		return Busy, sc, err
	}
	if err := t.samePID(sc); err != nil {
		return Busy, sc, err
	}
	if sc.Dead {
		return Dead, sc, nil
	}
	key := strconv.Itoa(sc.CursorX) + "," + strconv.Itoa(sc.CursorY) + "\n" + sc.Text()
	now := time.Now()
	t.mu.Lock()
	if key != t.last {
		t.last, t.changed, t.looks = key, now, 0
	} else {
		t.looks++
	}
	quietFor, looks := now.Sub(t.changed), t.looks
	line := strings.TrimRight(sc.CursorLine(), " ")
	t.relearn(sc, key, line, quietFor, looks)
	learned, prompt, promptX, pattern := t.learned, t.prompt, t.promptX, t.pattern
	t.mu.Unlock()

	if sc.InMode {
		return Scrolling, sc, nil
	}
	matches := pattern != nil && pattern.MatchString(line)
	// A prompt on the cursor line makes a stable screen idle at once; a
	// blank cursor line does not, even when the pattern takes it: a program
	// that printed a line and works on without output shows one too. It
	// counts only after Quiet.
	if quietFor < t.opts.Quiet && !(matches && line != "" && looks >= 1) {
		return Busy, sc, nil
	}
	// Quiet, but not at the empty prompt: a draft when the cursor line is
	// the prompt with more after it (or, with a pattern, holds anything);
	// else the program works without output, away from its prompt.
	switch {
	case pattern != nil && !matches:
		if line == "" {
			return Busy, sc, nil
		}
		return Draft, sc, nil
	case pattern == nil && learned && (line != prompt || sc.CursorX != promptX):
		if !strings.HasPrefix(line, prompt) {
			return Busy, sc, nil
		}
		return Draft, sc, nil
	}
	return Idle, sc, nil
}

// relearn learns the prompt again (t.mu held) when it was learned from
// one screen (LearnPrompt, or Options.Relearn) and that screen was not
// the program's prompt but something it asked first (a [y/N] question, a
// folder-trust dialog), so that its real empty prompt, once the person has
// answered, is not taken for a draft for good. Nothing on one screen tells
// an empty prompt from a draft, so a cursor line is learned again only
// when all of these hold:
//
//   - the program has not come back to the prompt learned since it was
//     learned (a look saw it at the cursor on a screen that had changed):
//     that one is its prompt, and stays so;
//   - no line on the screen is the prompt learned before (the question
//     went);
//   - the line is not blank, is at most MaxRelearned columns (a prompt
//     is short; a draft is often longer), and does not start with the
//     prompt learned before (a draft there, or an answer typed after the
//     question);
//   - the cursor was seen to come to its row between two looks (a program
//     draws its prompt on a row the cursor comes to; a person's typing
//     moves along a row), and the line has not changed since;
//   - the line above it does not reach the pane's right edge, so that it
//     is not the rest of a line wrapped there (a long draft; this also
//     leaves out programs that draw their prompt in a box, which need a
//     pattern);
//   - the nearest line above it that starts with the prompt learned before
//     is none, or is the line just above with at most a short answer after
//     the prompt (a draft of several lines starts there with more);
//   - the screen has stayed the same for RelearnQuiet (or twice Quiet)
//     across three looks.
//
// A draft typed at the real prompt between two looks (before any look
// saw it empty) and left quiet is learned all the same, as is one of
// several lines whose first line is short: the cases a pattern
// (Options.Prompt) is needed for.
func (t *Terminal) relearn(sc Screen, key, line string, quietFor time.Duration, looks int) {
	isPrompt := func(l string) bool {
		if t.pattern != nil {
			return t.pattern.MatchString(l)
		}
		return t.learned && l == t.prompt
	}
	// after returns what follows the prompt learned at the start of l.
	after := func(l string) (string, bool) {
		rest, ok := "", false
		for i := range l {
			if isPrompt(strings.TrimRight(l[:i], " ")) {
				rest, ok = l[i:], true
			}
		}
		if isPrompt(l) {
			return "", true
		}
		return strings.TrimSpace(rest), ok
	}
	if sc.InMode {
		// Copy mode shows another view: the next look is no arrival.
		t.seen = false
		return
	}
	may := t.learned || (t.opts.Relearn && t.pattern != nil)
	if may && !t.based {
		t.base, t.based = key, true
	}
	if may && key != t.base && isPrompt(line) {
		t.confirmed = true
	}
	switch {
	case !t.seen:
		t.arrivedOK = false
	case sc.CursorY != t.row:
		t.arrived, t.arrivedOK = line, true
	}
	t.seen, t.row = true, sc.CursorY
	if !may || t.confirmed || !t.arrivedOK || line != t.arrived || strings.TrimSpace(line) == "" ||
		cells(strings.TrimSpace(line)) > MaxRelearned || quietFor < max(RelearnQuiet, 2*t.opts.Quiet) || looks < 2 {
		return
	}
	for _, l := range sc.Lines {
		if isPrompt(strings.TrimRight(l, " ")) {
			return
		}
	}
	if _, ok := after(line); ok {
		return
	}
	if y := sc.CursorY - 1; y >= 0 && y < len(sc.Lines) && sc.Width > 0 && cells(strings.TrimRight(sc.Lines[y], " ")) >= sc.Width-1 {
		return
	}
	for y := sc.CursorY - 1; y >= 0 && y < len(sc.Lines); y-- {
		if rest, ok := after(strings.TrimRight(sc.Lines[y], " ")); ok {
			if y != sc.CursorY-1 || utf8.RuneCountInString(rest) > 3 {
				return
			}
			break
		}
	}
	if t.pattern != nil {
		t.pattern = regexp.MustCompile("^" + regexp.QuoteMeta(line) + "$")
	} else {
		t.prompt, t.promptX = line, sc.CursorX
	}
	t.again, t.base = line, key
}

// cells is about how many columns s takes: a character outside ASCII
// counts as two (some do), so that a line is rather taken for one that
// reaches the right edge than not.
func cells(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x80 {
			n++
		}
	}
	return n
}

// WaitIdle waits until the agent is idle at an empty prompt. When ctx ends
// first, the error says what it was doing (ErrBusy, ErrDraft, ErrInMode)
// and wraps ctx's error; a dead pane is ErrPaneDead at once.
func (t *Terminal) WaitIdle(ctx context.Context) (Screen, error) {
	last := Busy
	for {
		a, sc, err := t.Look(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return sc, t.gaveUp(last, ctx)
			}
			return sc, err
		}
		switch a {
		case Idle:
			return sc, nil
		case Dead:
			if !sc.StatusKnown {
				return sc, fmt.Errorf("%w (pane %s)", ErrPaneDead, t.pane)
			}
			return sc, fmt.Errorf("%w (pane %s, exit status %d)", ErrPaneDead, t.pane, sc.ExitStatus)
		}
		last = a
		select {
		case <-ctx.Done():
			return sc, t.gaveUp(last, ctx)
		case <-time.After(t.opts.Poll):
		}
	}
}

// samePID is ErrPaneReplaced when the pane's first process is not
// Options.PID (when set).
func (t *Terminal) samePID(sc Screen) error {
	if t.opts.PID > 0 && sc.PID > 0 && sc.PID != t.opts.PID {
		return fmt.Errorf("%w (pane %s, pid %d, was %d)", ErrPaneReplaced, t.pane, sc.PID, t.opts.PID)
	}
	return nil
}

// gaveUp is WaitIdle's error when ctx ends while the agent is not idle.
func (t *Terminal) gaveUp(a Activity, ctx context.Context) error {
	why := ErrBusy
	switch a {
	case Draft:
		why = ErrDraft
	case Scrolling:
		why = ErrInMode
	}
	return fmt.Errorf("%w (pane %s): %w", why, t.pane, ctx.Err())
}

// BlankPromptQuiet is how long LearnPrompt watches a quiet screen whose
// cursor line is blank before it takes the blank line for the prompt: a
// program that is still starting (loading, with its cursor under what it
// printed) shows one too, and draws its prompt later.
const BlankPromptQuiet = 10 * time.Second

// LearnPrompt waits until the screen is quiet and records the cursor line
// as the agent's empty prompt. Call it when nobody has typed, typically
// right after starting the agent; with Options.Prompt set it is not needed.
// A blank cursor line is taken only once the screen has stayed the same
// for BlankPromptQuiet (or Quiet, if longer).
func (t *Terminal) LearnPrompt(ctx context.Context) (string, error) {
	t.mu.Lock()
	t.learned = false
	t.mu.Unlock()
	var sc Screen
	for {
		var err error
		sc, err = t.WaitIdle(ctx)
		if err != nil {
			return "", err
		}
		t.mu.Lock()
		quietFor := time.Since(t.changed)
		t.mu.Unlock()
		if strings.TrimSpace(sc.CursorLine()) != "" || quietFor >= max(BlankPromptQuiet, t.opts.Quiet) {
			break
		}
		select {
		case <-ctx.Done():
			return "", t.gaveUp(Busy, ctx)
		case <-time.After(t.opts.Poll):
		}
	}
	line := strings.TrimRight(sc.CursorLine(), " ")
	t.mu.Lock()
	t.prompt, t.promptX, t.learned = line, sc.CursorX, true
	t.again, t.base, t.based, t.confirmed = "", t.last, true, false
	t.mu.Unlock()
	return line, nil
}

// Deliver waits (within ctx) until the agent is idle at an empty prompt,
// then pastes text as one paste and presses Enter. It never pastes over a
// person's draft or into a scrolling pane: when ctx ends first it returns
// ErrDraft, ErrInMode or ErrBusy, having sent nothing. When, after the
// paste, the pane is in copy mode (a person scrolled up meanwhile), it
// returns ErrNotSent without the Enter: the line is the person's then. Control characters
// in text (escape sequences among them) are dropped, so a text cannot end
// the paste early or press keys.
func (t *Terminal) Deliver(ctx context.Context, text string) error {
	return t.DeliverThen(ctx, text, nil)
}

// DeliverThen is Deliver; beforeEnter, when not nil, is called once the
// text is pasted and about to be sent (just before the Enter): what the
// caller keeps of it is kept before the program can act on it.
func (t *Terminal) DeliverThen(ctx context.Context, text string, beforeEnter func()) error {
	t.mu.Lock()
	known := t.learned || t.pattern != nil
	t.mu.Unlock()
	if !known {
		return ErrNoPrompt
	}
	text = Clean(text, t.opts.Flatten)
	if text == "" {
		return errors.New("tmux: nothing to deliver")
	}
	// Idle, and still the same screen a poll later: keys a person has
	// just pressed have been echoed by then.
	for {
		sc, err := t.WaitIdle(ctx)
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return t.gaveUp(Busy, ctx)
		case <-time.After(t.opts.Poll):
		}
		a, again, err := t.Look(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return t.gaveUp(a, ctx)
			}
			return err
		}
		if a == Idle && again.Text() == sc.Text() && again.CursorX == sc.CursorX && again.CursorY == sc.CursorY {
			break
		}
	}
	if err := t.server.Paste(ctx, t.pane, text); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		// The text is at the prompt without its Enter; finish the delivery
		// rather than leave it there as if someone had typed it.
	case <-time.After(t.opts.EnterDelay):
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.opts.EnterLimit)
	defer cancel()
	// A person may have scrolled the pane up since the last look: in
	// copy mode the Enter would end the mode and leave the text unsent.
	err := t.pasteShown(ectx)
	t.mu.Lock()
	t.last, t.changed, t.looks = "", time.Now(), 0
	t.mu.Unlock()
	if err != nil {
		return err
	}
	if beforeEnter != nil {
		beforeEnter()
	}
	return t.server.Enter(ectx, t.pane)
}

// pasteShown looks at the pane once after the paste: in copy mode (a
// person scrolled up since the last look) the Enter would end the mode and
// leave the text unsent, so it returns ErrNotSent; a program that exited
// is ErrPaneDead. What the prompt shows is not compared with the text:
// clients draw a paste their own way (Claude Code shows a long one as
// "[Pasted text #1 +N lines]", in a box), so no comparison holds for all
// of them. Keys a person types in the moment between Deliver's last look
// and its paste are sent with the text (a known gap). A look that fails
// (tmux slow to answer) lets the Enter go: the text is at the prompt, and
// left there it would read as a person's draft.
func (t *Terminal) pasteShown(ctx context.Context) error {
	sc, err := t.server.Capture(ctx, t.pane)
	switch {
	case err != nil:
		return nil
	case t.samePID(sc) != nil:
		return t.samePID(sc)
	case sc.Dead:
		return fmt.Errorf("%w (pane %s)", ErrPaneDead, t.pane)
	case sc.InMode:
		return fmt.Errorf("%w (pane %s): it went into copy mode", ErrNotSent, t.pane)
	}
	return nil
}

// Clean drops control characters (C0 but newline and tab, DEL, C1),
// turns tabs into spaces, CR and CRLF into newlines, trims newlines at the
// ends, and with flatten turns the newlines left into spaces.
//
// Tabs go always, not only when flattening: in a program that does not
// take bracketed paste a pasted tab is a Tab key press (readline completes
// file names into the line), so that a peer's text would reach the agent
// changed by keys it pressed; and whether the program takes bracketed
// paste is not known for sure even without Flatten.
//
// An @ that starts a word (after the start, a space, punctuation or a
// backslash: anything but an ASCII letter, digit or one of "._%+-" of an
// address such as NAME@PEER_ID) goes with a backslash before it. The
// agents' clients read a pasted line as a prompt the person typed, and
// Gemini CLI attaches the file "@path" names wherever it stands (Claude
// Code attaches an @-mentioned file too): a peer's "compare with @.env"
// would put the project's secrets before the model. Both take "\@" as
// the character.
func Clean(text string, flatten bool) string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	var b strings.Builder
	prev := ' '
	for _, r := range text {
		switch {
		case r == '\n':
			if flatten {
				r = ' '
			}
		case r == '\t':
			r = ' '
		case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
			continue
		case r == '@' && !addressRune(prev):
			b.WriteByte('\\')
		}
		b.WriteRune(r)
		prev = r
	}
	return strings.Trim(b.String(), "\n ")
}

// addressRune reports whether r, before an @, makes it part of an
// address (NAME@PEER_ID, user@example.com) rather than the start of a
// word.
// Only ASCII ones: Gemini CLI reads an @ after any other as a command.
func addressRune(r rune) bool {
	return r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._%+-", r))
}

// Launch starts an agent (Server.Start) and binds its pane; unless
// o.Prompt is set it waits (within ctx) for the agent's first quiet screen
// and learns its empty prompt there, before anyone has typed.
func Launch(ctx context.Context, s Server, so StartOptions, o Options) (Pane, *Terminal, error) {
	p, err := s.Start(ctx, so)
	if err != nil {
		return Pane{}, nil, err
	}
	t := Bind(Server{Socket: p.Socket, Bin: s.Bin}, p.ID, o)
	if o.Prompt == nil {
		if _, err := t.LearnPrompt(ctx); err != nil {
			return p, t, fmt.Errorf("tmux: learn the prompt of %s: %w", p.ID, err)
		}
	}
	return p, t, nil
}
