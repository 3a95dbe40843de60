// Package tmux runs terminal agents in tmux panes and delivers text to
// them the way a careful person at the keyboard would: only when the agent
// is idle at an empty prompt, never over someone's half-typed input.
//
// # Mechanics
//
// Everything goes through the tmux program (a Server names one tmux
// server: the user's, or a private one by -L name or -S socket path).
//
//   - Start: new-session -d (or new-window -d) running the program
//     directly, printing the new pane (-P -F), with remain-on-exit set in
//     the same tmux command when asked (KeepDead), so a program that exits
//     at once is still seen as a dead pane.
//   - A pane is named by its ID (%N), which tmux never reuses while the
//     server lives; Pane.Socket (#{socket_path}) finds the server again
//     from another process.
//   - State and screen: list-panes -f (exactly that pane; it fails when the
//     pane is gone) and capture-pane -p in one tmux command, so the cursor
//     position and the screen match.
//   - Delivery: load-buffer -b NAME - (the text on stdin), paste-buffer -p
//     -r -d -b NAME -t PANE (bracketed when the program asked the terminal
//     for it; tmux adds the brackets), a pause (80 ms), a look at the
//     pane, then the Enter as a paste of its own: set-buffer of a carriage
//     return, paste-buffer -r -d without -p (send-keys would press it in
//     every pane of a window whose panes are synchronized, running what a
//     person half typed there). Parley never writes
//     bracketed-paste escapes itself, and strips control characters from
//     the text (tabs become spaces), so a message cannot end the paste
//     early or press keys.
//
// # Idle and drafts
//
// A Terminal watches the screen: the agent is busy while it changes, idle
// once it has stayed the same for Options.Quiet (or at once, on a stable
// screen, when Options.Prompt matches the cursor line). At idle the cursor
// line is compared with the empty prompt (Options.Prompt, or the line
// LearnPrompt recorded): anything else is a person's draft, and Deliver
// waits for it to go (sent or erased) and gives up with ErrDraft when its
// context ends, having pasted nothing. A prompt learned from one screen
// may have been a question the program asked first: it is learned again
// at a line the cursor comes to once the question has gone, under checks
// that keep a person's draft from being taken for the prompt (see
// Terminal.relearn); a pattern given in Options.Prompt never is. A pane in copy mode (someone
// scrolling) is waited out the same way (ErrInMode). A person may scroll
// the pane up between the paste and the Enter: the Enter is sent only when
// the pane is in no mode after the paste, else Deliver returns ErrNotSent
// and leaves the line to the person. What the prompt shows is not compared
// with the text (clients draw a paste their own way: Claude Code shows a
// long one as a "[Pasted text …]" line in a box), so keys typed in the
// moment between the last look and the paste go with the text. A pane whose program
// exited is ErrPaneDead, a closed one ErrNoPane, a server that is gone
// ErrNoServer.
package tmux
