package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// doctorIn runs `parley --home HOME doctor` with a HOME of its own, so no
// client config of the machine is read.
func doctorIn(t *testing.T, home string) (string, int) {
	t.Helper()
	cmd := exec.Command(parleyBin, "--home", home, "doctor")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "CODEX_HOME=", "XDG_CONFIG_HOME=")
	out, errs, code := runPrepared(t, cmd)
	return out + errs, code
}

// `parley doctor` on a node whose store refuses writes (the disk below the
// floor) said "ok node: running" and exited 0, while every post failed:
// it now says the node refuses writes, why and what to do, and exits 1.
func TestCLIDoctorSaysNodeRefusesWrites(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	d := up(t, home, "--listen", loopback)
	stop(t, home, d)
	// A floor no disk clears: the node starts, serves reads, refuses writes.
	d = up(t, home, "--listen", loopback, "--min-free-disk", "1PiB")
	out, code := doctorIn(t, home)
	if code != 1 || !strings.Contains(out, "refuses writes") || !strings.Contains(out, "free some space") {
		t.Fatalf("doctor on a node refusing writes: exit %d\n%s", code, out)
	}
	stop(t, home, d)
}

// A restore said only "restored; start it with parley up": not when the
// copy was made, nor that the node started from it has forgotten what
// happened since (until its peers tell it back), nor that the node it was
// copied from must not run beside it. A backup file that does not exist
// was called "not a whole Parley backup".
func TestCLIRestoreSaysWhatItMayHaveForgotten(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	home := filepath.Join(base, "a")
	d := up(t, home, "--listen", loopback)
	file := filepath.Join(base, "a.zip")
	if _, errs, code := run(t, "--home", home, "backup", file); code != 0 {
		t.Fatalf("backup: %s", errs)
	}
	stop(t, home, d)

	out, errs, code := run(t, "--home", filepath.Join(base, "r"), "restore", file)
	if code != 0 {
		t.Fatalf("restore: exit %d %s", code, errs)
	}
	today := time.Now().UTC().Format("2006-01-02")
	for _, want := range []string{today, "older copy", "since", "parley --home " + home + " down"} {
		if !strings.Contains(out, want) {
			t.Errorf("restore's output lacks %q:\n%s", want, out)
		}
	}
	var r struct {
		Made string `json:"made"`
	}
	out, errs, code = run(t, "--home", filepath.Join(base, "r2"), "restore", file, "--json")
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || !strings.HasPrefix(r.Made, today) {
		t.Errorf("restore --json: exit %d, made %q (%v) %s", code, r.Made, err, errs)
	}

	_, errs, code = run(t, "--home", filepath.Join(base, "r3"), "restore", filepath.Join(base, "nosuch.zip"))
	if code == 0 || strings.Contains(errs, "not a whole") || !strings.Contains(errs, "no such file") {
		t.Errorf("restore of a file that does not exist: exit %d %q", code, errs)
	}
}

// An invite of a contact whose node is down was made (its event is in the
// room, and the node is told when the two connect), yet `room invite`
// exited 1 with the dial's list of failures over three lines, so a script
// took it for a failure and a user invited again. It now exits 0 with one
// note saying the node is told when it connects; and it is.
func TestCLIInviteOfAContactThatIsDown(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeB := filepath.Join(base, "a"), filepath.Join(base, "b")
	a := up(t, homeA, "--listen", loopback, "--handle", "alice")
	b := up(t, homeB, "--listen", loopback, "--bootstrap", a.addr(), "--handle", "bob")
	idB := peerID(t, homeB)
	befriend(t, homeA, homeB, idB)
	stop(t, homeB, b)

	var room struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &room, "--home", homeA, "room", "create", "later")
	out, errs, code := run(t, "--home", homeA, "room", "invite", room.RoomID, idB)
	if code != 0 || !strings.Contains(out, "invited") || !strings.Contains(errs, "told of it when the two nodes connect") ||
		strings.Contains(errs, "dials failed") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("invite of a contact that is down: exit %d\nstdout %q\nstderr %q", code, out, errs)
	}
	_, errs, code = run(t, "--home", homeA, "room", "create", "later2", "--member", "human@"+idB)
	if code != 0 || !strings.Contains(errs, "told of it when the two nodes connect") {
		t.Fatalf("room create --member of a contact that is down: exit %d %q", code, errs)
	}

	up(t, homeB, "--listen", loopback, "--bootstrap", a.addr())
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		o, _, _ := run(t, "--home", homeB, "room", "list")
		return strings.Contains(o, room.RoomID) && strings.Contains(o, "later2")
	}, "B, started again, to hold the rooms it was invited to while down")
}

// `parley connect` to the address of a node that is down said only the
// dial's failures ("all dials failed: … connection refused"), with no word
// of what to do; it now says the node may be down or the address old, and
// where a fresh one comes from.
func TestCLIConnectToANodeThatIsDown(t *testing.T) {
	t.Parallel()
	homeA, addr := aNodeAndTheAddressOfOneDown(t)
	_, errs, code := run(t, "--home", homeA, "connect", addr)
	if code == 0 || !strings.Contains(errs, "may be down") || !strings.Contains(errs, "parley id") ||
		strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("connect to a node that is down: exit %d %q", code, errs)
	}
}

// `parley --home TYPO status` said "no node is running for home TYPO
// (start one with `parley --home TYPO up`)": a user who mistyped the home
// followed it and got a new node, with a new identity, beside their own.
// For a home that does not exist it now says none ever ran there, that a
// start there makes a new identity, and asks whether the home is mistyped.
func TestCLINoNodeAtAHomeThatDoesNotExist(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "typo")
	_, errs, code := run(t, "--home", home, "status")
	if code != 1 || !strings.Contains(errs, "no node is running for home") || !strings.Contains(errs, "mistyped") ||
		!strings.Contains(errs, "new identity") {
		t.Fatalf("status for a home that does not exist: exit %d %q", code, errs)
	}
	if _, err := os.Stat(home); err == nil {
		t.Fatal("status made the home")
	}
}

// `parley worktree remove NAME` of a worktree that is not there printed
// git's "fatal: '…' is not a working tree"; and of one deleted by hand
// (rm -rf .worktrees/NAME) it failed the same way and kept its claim on the
// board for hours. Now the first says there is none and where to look, and
// the second lets git forget it and releases the claim.
func TestCLIWorktreeRemoveOfOneNotThere(t *testing.T) {
	t.Parallel()
	repo, _ := twoClones(t)
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback)

	_, errs, code := runIn(t, repo, "--home", home, "worktree", "remove", "nosuch")
	if code == 0 || strings.Contains(errs, "fatal:") || !strings.Contains(errs, "git worktree list") {
		t.Fatalf("worktree remove of none: exit %d %q", code, errs)
	}

	if _, errs, code := runIn(t, repo, "--home", home, "worktree", "add", "gone"); code != 0 {
		t.Fatalf("worktree add: %s", errs)
	}
	if err := os.RemoveAll(filepath.Join(repo, ".worktrees", "gone")); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runIn(t, repo, "--home", home, "worktree", "remove", "gone")
	if code != 0 {
		t.Fatalf("worktree remove of one deleted by hand: exit %d %q %q", code, out, errs)
	}
	if b, _, _ := runIn(t, repo, "--home", home, "board"); strings.Contains(b, "gone") {
		t.Fatalf("the claim of the worktree deleted by hand stays:\n%s", b)
	}
	if wl := gitIn(t, repo, "worktree", "list"); strings.Contains(wl, "gone") {
		t.Fatalf("git still lists the worktree deleted by hand:\n%s", wl)
	}
}

// `parley ask` (or say, approve, tail) said only "unknown command": the
// command is one of a group's (`parley room ask`), which the user on their
// third day has not learnt by heart. It now names it.
func TestCLIUnknownCommandNamesTheGroupsCommand(t *testing.T) {
	t.Parallel()
	for word, want := range map[string]string{
		"ask":     "`parley room ask`",
		"say":     "`parley room say`",
		"approve": "`parley contact approve`",
		"tail":    "`parley room tail`",
	} {
		_, errs, code := run(t, word, "x")
		if code == 0 || !strings.Contains(errs, "did you mean "+want) {
			t.Errorf("parley %s: exit %d %q; want it to name %s", word, code, errs, want)
		}
	}
}

// `parley contact request ADDRESS` of a node that is down printed libp2p's
// dump: "failed to dial: failed to dial PEER: all dials failed", then each
// address tried on a line of its own, then the DHT's failure on another.
// It is now one line, ending in what to check.
func TestCLIContactRequestToANodeThatIsDown(t *testing.T) {
	t.Parallel()
	homeA, addr := aNodeAndTheAddressOfOneDown(t)
	_, errs, code := run(t, "--home", homeA, "contact", "request", addr)
	if code == 0 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || strings.Contains(errs, "failed to dial") ||
		!strings.Contains(errs, "connection refused") || !strings.Contains(errs, "is its node running") {
		t.Fatalf("contact request to a node that is down: exit %d %q", code, errs)
	}
}

// aNodeAndTheAddressOfOneDown starts a node on loopback, and another that
// it stops again: the home of the first, the address the second had.
func aNodeAndTheAddressOfOneDown(t *testing.T) (string, string) {
	t.Helper()
	base := t.TempDir()
	homeA, homeB := filepath.Join(base, "a"), filepath.Join(base, "b")
	up(t, homeA, "--listen", loopback)
	b := up(t, homeB, "--listen", loopback)
	addr := b.addr()
	stop(t, homeB, b)
	return homeA, addr
}
