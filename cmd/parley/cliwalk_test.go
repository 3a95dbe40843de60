package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/localapi"
)

// What a user walking through the README meets on one node: each command
// says what it did, and what it takes, as the README and its sibling
// commands lead them to expect.
func TestCLIOneNodeSaysWhatItDid(t *testing.T) {
	t.Parallel()
	repo, _ := twoClones(t)
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback, "--handle", "alice")
	if _, errs, code := run(t, "--home", home, "room", "create", "r1"); code != 0 {
		t.Fatalf("room create: %s", errs)
	}
	if _, errs, code := run(t, "--home", home, "agent", "register", "one"); code != 0 {
		t.Fatalf("agent register: %s", errs)
	}

	// `room invite ROOM A B C`: A is invited, B refused. Before, the
	// command printed nothing of A, with --json neither, where the README
	// says stdout holds JSON for what a failed command did before it
	// failed; nor that C was not tried.
	t.Run("InvitePrintsWhatItDidBeforeItFailed", func(t *testing.T) {
		bad := "12D3KooWnotapeer"
		out, errs, code := run(t, "--home", home, "--json", "room", "invite", "r1", "one", bad, "two")
		if code == 0 {
			t.Fatalf("invite of %s: exit 0", bad)
		}
		var got []localapi.Posted
		if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 || got[0].ID == "" {
			t.Errorf("stdout after a partial invite = %q (stderr %q), want the JSON of the invite of one", out, errs)
		}
		if !strings.Contains(errs, bad) || !strings.Contains(errs, "not tried: two") {
			t.Errorf("stderr %q: want why %s was refused, and that two was not tried", errs, bad)
		}
		var log []localapi.Event
		runJSON(t, &log, "--home", home, "room", "log", "r1")
		invited := false
		for _, e := range log {
			invited = invited || e.Kind == "invite" && strings.HasPrefix(e.To, "one@")
		}
		if !invited {
			t.Fatalf("one was not invited after all: %+v", log)
		}
		// Without --json: the line of the invite that was made.
		if _, errs, code := run(t, "--home", home, "agent", "register", "three"); code != 0 {
			t.Fatalf("agent register: %s", errs)
		}
		out, errs, code = run(t, "--home", home, "room", "invite", "r1", "three", bad)
		if code == 0 || !strings.HasPrefix(out, "invited three into ") || !strings.Contains(errs, bad) {
			t.Errorf("room invite r1 three %s: exit %d, stdout %q, stderr %q: want three's invite on stdout, the refusal on stderr", bad, code, out, errs)
		}
	})

	// `room log --before` took only a whole event ID, where `room log`
	// shows 8 characters and `room say --reply-to` takes those.
	t.Run("LogBeforeShortID", func(t *testing.T) {
		for _, text := range []string{"first", "second"} {
			if _, errs, code := run(t, "--home", home, "room", "say", "r1", text); code != 0 {
				t.Fatalf("room say: %s", errs)
			}
		}
		var log []localapi.Event
		runJSON(t, &log, "--home", home, "room", "log", "r1")
		last := log[len(log)-1].ID
		var before []localapi.Event
		runJSON(t, &before, "--home", home, "room", "log", "r1", "--before", last[:8])
		if len(before) != len(log)-1 || before[len(before)-1].Text != "first" {
			t.Errorf("room log --before %s (the short ID room log shows): %+v", last[:8], before)
		}
		if _, errs, code := run(t, "--home", home, "room", "log", "r1", "--before", "nope"); code == 0 || !strings.Contains(errs, "--before") {
			t.Errorf("room log --before nope: exit %d, %q: want a refusal naming --before", code, errs)
		}
	})

	// A typo of a subcommand under a command that also runs by itself
	// (board, audit, invites) got no suggestion, only that command's
	// usage without its subcommands.
	t.Run("TypoUnderARunnableGroup", func(t *testing.T) {
		for _, tc := range []struct{ args, want []string }{
			{[]string{"board", "histroy"}, []string{`unknown command "histroy" for "parley board"`, "did you mean history?"}},
			{[]string{"audit", "verfy"}, []string{`unknown command "verfy" for "parley audit"`, "did you mean verify?", "export"}},
			{[]string{"invites", "acept", "x"}, []string{"did you mean accept?", "decline"}},
			{[]string{"invites", "zzzzzz"}, []string{`unknown command "zzzzzz" for "parley invites"`, "its commands: accept, decline"}},
		} {
			_, errs, code := runIn(t, repo, append([]string{"--home", home}, tc.args...)...)
			for _, w := range tc.want {
				if code == 0 || !strings.Contains(errs, w) {
					t.Errorf("parley %s: exit %d, %q: want %q", strings.Join(tc.args, " "), code, errs, w)
				}
			}
			if strings.Contains(errs, "usage:") {
				t.Errorf("parley %s: %q: the usage line of the command it ran is beside the point", strings.Join(tc.args, " "), errs)
			}
		}
		// What they take still runs: board with its flags, board
		// history with a path.
		if _, errs, code := runIn(t, repo, "--home", home, "board", "history", "src"); code != 0 {
			t.Errorf("board history src: %s", errs)
		}
	})

	// `board history PATH` with no history printed nothing at all, where
	// `board` says the board is empty.
	t.Run("BoardHistoryEmptySaysSo", func(t *testing.T) {
		out, errs, code := runIn(t, repo, "--home", home, "board", "history", "src/nothing.go")
		if code != 0 || !strings.Contains(out, "no claim or release") || !strings.Contains(out, "src/nothing.go") {
			t.Errorf("board history of a path with nothing: exit %d, stdout %q, stderr %q: want a line saying there is no history", code, out, errs)
		}
		out, errs, code = runIn(t, repo, "--home", home, "board", "history")
		if code != 0 || !strings.Contains(out, "has no history yet") {
			t.Errorf("board history of an empty board: exit %d, stdout %q, stderr %q", code, out, errs)
		}
		if out, _, _ := runIn(t, repo, "--home", home, "--json", "board", "history"); !strings.Contains(out, `"events"`) {
			t.Errorf("board history --json: %q", out)
		}
	})
}

// A glob in a command's example is quoted, as README quotes it: pasted
// unquoted, the shell expands it before parley sees it (`claim --help`
// showed rooms/*_test.go bare).
func TestExamplesQuoteTheirGlobs(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		for l := range strings.Lines(c.Example) {
			var quote rune
			for _, r := range l {
				switch {
				case quote != 0 && r == quote:
					quote = 0
				case quote == 0 && (r == '\'' || r == '"'):
					quote = r
				case quote == 0 && (r == '*' || r == '?' || r == '['):
					t.Errorf("`%s --help`: the example %q has a glob the shell expands: quote it", c.CommandPath(), strings.TrimSpace(l))
				}
			}
		}
	}
	root := newRoot()
	walk(root)
	claim, _, err := root.Find([]string{"claim"})
	if err != nil || !strings.Contains(claim.Example, "'rooms/*_test.go'") {
		t.Fatalf("claim's example: %q, %v", claim.Example, err)
	}
}
