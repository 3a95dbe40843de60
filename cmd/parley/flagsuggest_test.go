package main

import (
	"strings"
	"testing"
)

// A mistyped flag names the flags it was near and where the command's flags
// are listed; cobra alone said only "unknown flag: --lisen".
func TestCLIMistypedFlagSuggestsTheNearOnes(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, tc := range []struct {
		args []string
		want []string
		not  string
	}{
		{[]string{"up", "--lisen", "x"}, []string{"unknown flag: --lisen", "did you mean --listen?", "`parley up --help`"}, ""},
		{[]string{"--hme", "x", "status"}, []string{"did you mean --home?"}, ""},
		{[]string{"room", "ask", "r", "q", "--wiat"}, []string{"did you mean --wait?", "`parley room ask --help`"}, ""},
		{[]string{"status", "--zzzzzz"}, []string{"unknown flag: --zzzzzz", "`parley status --help` lists its flags"}, "did you mean"},
	} {
		_, errs, code := run(t, append([]string{"--home", home}, tc.args...)...)
		for _, w := range tc.want {
			if code == 0 || !strings.Contains(errs, w) {
				t.Errorf("parley %s: exit %d, %q: want %q", strings.Join(tc.args, " "), code, errs, w)
			}
		}
		if tc.not != "" && strings.Contains(errs, tc.not) {
			t.Errorf("parley %s: %q: says %q", strings.Join(tc.args, " "), errs, tc.not)
		}
	}
}

// A word that is no command of its group is the mistake told, also when a
// flag follows it (`board claim x.go --note …` said "unknown flag: --note,
// did you mean --home?"), and a word that is a command of the root's says
// so: `parley claim` is a command of its own.
func TestCLIUnknownCommandWordIsToldBeforeItsFlags(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"board", "claim", "x.go", "--note", "hi"}, []string{`unknown command "claim" for "parley board"`, "`parley claim` is a command of its own"}},
		{[]string{"board", "claim", "x.go"}, []string{"`parley claim` is a command of its own"}},
		{[]string{"room", "members", "dev", "--zz"}, []string{`unknown command "members" for "parley room"`, "its commands: ask"}},
		{[]string{"room", "sya", "r", "hi", "--as", "x"}, []string{"did you mean say?"}},
	} {
		_, errs, code := run(t, append([]string{"--home", home}, tc.args...)...)
		for _, w := range tc.want {
			if code == 0 || !strings.Contains(errs, w) {
				t.Errorf("parley %s: exit %d, %q: want %q", strings.Join(tc.args, " "), code, errs, w)
			}
		}
		if strings.Contains(errs, "unknown flag") {
			t.Errorf("parley %s: %q: tells the flag, not the command", strings.Join(tc.args, " "), errs)
		}
	}
	if out, errs, code := run(t, "--home", home, "room"); code != 0 || !strings.Contains(out, "Usage:") {
		t.Errorf("parley room alone: exit %d, %q %q: want its help", code, out, errs)
	}
}

// The words a user reaches for to answer an ask (`room reply`, `room
// answer`) lead to the command that answers: `room say … --reply-to ID`;
// `room post` and `room send` are offered say.
func TestCLIRoomReplyWordPointsToSayReplyTo(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"room", "reply", "design", "yes", "--reply-to", "abcdefgh"}, "`parley room say ROOM TEXT --reply-to ID`"},
		{[]string{"room", "answer", "design", "yes"}, "`parley room say ROOM TEXT --reply-to ID`"},
		{[]string{"room", "post", "design", "hi"}, "did you mean list or say?"},
		{[]string{"room", "send", "design", "hi"}, "say?"},
	} {
		_, errs, code := run(t, append([]string{"--home", home}, tc.args...)...)
		if code != 1 || !strings.Contains(errs, tc.want) || strings.Contains(errs, "unknown flag") {
			t.Errorf("parley %s: exit %d, %q: want %q", strings.Join(tc.args, " "), code, errs, tc.want)
		}
	}
}
