package tmux

import "errors"

var (
	// ErrNoTmux is returned when the tmux program cannot be found.
	ErrNoTmux = errors.New("tmux: the tmux program is not installed")
	// ErrNoServer is returned when no tmux server runs on the socket (it
	// was never started, or every session on it ended).
	ErrNoServer = errors.New("tmux: no tmux server is running there")
	// ErrNoPane is returned when the pane, window or session is gone (its
	// program exited and the pane closed, or someone closed it).
	ErrNoPane = errors.New("tmux: the pane is gone")
	// ErrPaneDead is returned when the pane's program has exited (the pane
	// is kept, showing its last screen).
	ErrPaneDead = errors.New("tmux: the program in the pane has exited")
	// ErrPaneReplaced is returned when the pane runs another program than
	// the one a Terminal was bound to (Options.PID): it was respawned
	// (respawn-pane -k keeps the pane's ID).
	ErrPaneReplaced = errors.New("tmux: the pane runs another program now")
	// ErrSessionExists is returned by Start for a session name in use.
	ErrSessionExists = errors.New("tmux: a session of that name exists")
	// ErrDraft is returned when a person's unsent input sits at the prompt:
	// nothing was pasted over it.
	ErrDraft = errors.New("tmux: someone is typing at the prompt")
	// ErrInMode is returned when the pane is in copy or view mode (a person
	// is scrolling): nothing was pasted.
	ErrInMode = errors.New("tmux: the pane is in copy mode")
	// ErrNotSent is returned by Deliver when the text was pasted but its
	// Enter not sent: a person came to the pane meanwhile (it went into
	// copy mode, or keys were typed at the prompt with the text). The line
	// is left to them.
	ErrNotSent = errors.New("tmux: the text was pasted but not sent: a person is at the pane")
	// ErrBusy is returned when the program did not become idle in time.
	ErrBusy = errors.New("tmux: the program in the pane is busy")
	// ErrNoPrompt is returned by Deliver when the program's empty prompt is
	// not known, so a draft could not be told from it.
	ErrNoPrompt = errors.New("tmux: the empty prompt is not known (set Prompt, or call LearnPrompt while the program is idle and nobody has typed)")
)
