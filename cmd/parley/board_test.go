package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// gitIn runs git in dir with a fixed identity and no user config.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// runIn runs one CLI command in dir and returns stdout, stderr and the
// exit code.
func runIn(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(parleyBin, args...)
	cmd.Dir = dir
	return runPrepared(t, cmd)
}

func runInJSON(t *testing.T, dir string, v any, args ...string) {
	t.Helper()
	out, errs, code := runIn(t, dir, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("parley %v: exit %d: %s", args, code, errs)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("parley %v: bad JSON %q: %v", args, out, err)
	}
}

// twoClones makes a repository with one commit and two clones of it.
func twoClones(t *testing.T) (string, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base := t.TempDir()
	origin := filepath.Join(base, "origin")
	if err := os.MkdirAll(filepath.Join(origin, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, origin, "init", "-q", "-b", "main")
	for _, f := range []string{"src/a.go", "src/b.go", "README.md"} {
		if err := os.WriteFile(filepath.Join(origin, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, origin, "add", ".")
	gitIn(t, origin, "commit", "-q", "-m", "first")
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	gitIn(t, base, "clone", "-q", origin, a)
	gitIn(t, base, "clone", "-q", origin, b)
	return a, b
}

// boardPair starts two nodes that are contacts, each with a clone of one
// repository: repoA is A's (home homeA), repoB is B's.
func boardPair(t *testing.T) (repoA, repoB, homeA, homeB string) {
	t.Helper()
	repoA, repoB = twoClones(t)
	base := t.TempDir()
	homeA, homeB = filepath.Join(base, "a"), filepath.Join(base, "b")
	a := up(t, homeA, "--listen", loopback)
	up(t, homeB, "--listen", loopback, "--bootstrap", a.addr())
	befriend(t, homeA, homeB, peerID(t, homeB))
	return repoA, repoB, homeA, homeB
}

// TestCLIBoard: two nodes on clones of one repository share its board. A
// claim on A is seen on B; B's conflicting claim fails naming A's note;
// after A's release B's claim succeeds; the history shows both.
func TestCLIBoard(t *testing.T) {
	t.Parallel()
	repoA, repoB, homeA, homeB := boardPair(t)

	// Bad input first: it is refused and changes nothing.
	for _, args := range [][]string{
		{"claim", "src/a.go"},                     // no note
		{"claim", "../outside.go", "--note", "x"}, // outside the repository
		{"claim", "src/a.go", "--note", "x", "--ttl", "9h"},
		{"release", "src/a.go"}, // not held
	} {
		if _, errs, code := runIn(t, repoA, append([]string{"--home", homeA}, args...)...); code == 0 || errs == "" {
			t.Errorf("parley %v: exit %d, stderr %q", args, code, errs)
		}
	}

	if _, errs, code := runIn(t, filepath.Join(repoA, "src"), "--home", homeA, "claim", "a.go", "--note", "splitting the parser", "--ttl", "20m"); code != 0 {
		t.Fatalf("claim on A: %s", errs)
	}
	var bv localapi.BoardView
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		runInJSON(t, repoB, &bv, "--home", homeB, "board")
		return len(bv.Claims) == 1 && bv.Claims[0].Path == "src/a.go" && bv.Claims[0].Note == "splitting the parser"
	}, "B's board to show A's claim")
	// B's person reads a claim of A's that B's git guard enforces on their
	// commits: two parties, no note. A's person, alone with their own
	// claim, is told claims are optional overhead.
	if len(bv.Alive) != 0 || bv.Note != "" {
		t.Fatalf("no agent session is registered and A holds a claim, yet B's board says %v / %q", bv.Alive, bv.Note)
	}
	runInJSON(t, repoA, &bv, "--home", homeA, "board")
	if len(bv.Alive) != 0 || !strings.Contains(bv.Note, "no agent session is alive") {
		t.Fatalf("no agent session is registered, yet A's board says %v / %q", bv.Alive, bv.Note)
	}
	// People read the holder as agent@handle, not the 52 characters of a
	// peer ID.
	if out, errs, _ := runIn(t, repoB, "--home", homeB, "board"); strings.Contains(out, peerID(t, homeA)) || !strings.Contains(out, "@") {
		t.Fatalf("B's board shows the holder by its peer ID:\n%s%s", out, errs)
	}

	if _, errs, code := runIn(t, repoB, "--home", homeB, "claim", "src/*.go", "--note", "formatting"); code == 0 || !strings.Contains(errs, "splitting the parser") {
		t.Fatalf("B's conflicting claim: exit %d, %q", code, errs)
	}
	if _, errs, code := runIn(t, repoB, "--home", homeB, "claim", "src/*.go", "--note", "formatting", "--wait", "1s"); code == 0 ||
		!strings.Contains(errs, "splitting the parser") || !strings.Contains(errs, "after waiting 1s") {
		t.Fatalf("B's conflicting claim, waited for: exit %d, %q", code, errs)
	}
	if _, errs, code := runIn(t, repoA, "--home", homeA, "release", "src/a.go"); code != 0 {
		t.Fatalf("release on A: %s", errs)
	}
	// B waits for A's release to reach it.
	var cr localapi.ClaimResult
	runInJSON(t, repoB, &cr, "--home", homeB, "claim", "src/*.go", "--note", "formatting", "--wait", "30s")
	if len(cr.Held) != 1 || cr.Held[0].Path != "src/*.go" {
		t.Fatalf("B's claim: %+v", cr)
	}
	var hist localapi.BoardHistory
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		runInJSON(t, repoA, &hist, "--home", homeA, "board", "history", "src/a.go")
		return len(hist.Events) == 3
	}, "A's history to hold the claim, the release and B's claim")
	if hist.Events[0].Note != "splitting the parser" || hist.Events[1].Kind != "release" || hist.Events[2].Note != "formatting" {
		t.Fatalf("history: %+v", hist.Events)
	}
	out, _, _ := runIn(t, repoB, "--home", homeB, "board", "history")
	if !strings.Contains(out, "splitting the parser") || !strings.Contains(out, "formatting") {
		t.Fatalf("history as text: %s", out)
	}
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		runInJSON(t, repoA, &bv, "--home", homeA, "board")
		return len(bv.Claims) == 1 && bv.Claims[0].Note == "formatting"
	}, "A's board to show B's claim")
	gitGuardCheck(t, repoA, homeA)

	// A worktree of its own for an agent, on the board; removing it frees it.
	registerAgents(t, homeA, "alice")
	if _, errs, code := runIn(t, repoA, "--home", homeA, "worktree", "add", "feature", "--as", "alice"); code != 0 {
		t.Fatalf("worktree add: %s", errs)
	}
	if _, err := os.Stat(filepath.Join(repoA, ".worktrees", "feature", "src", "a.go")); err != nil {
		t.Fatalf("no worktree: %v", err)
	}
	if st := gitIn(t, repoA, "status", "--porcelain"); strings.Contains(st, ".worktrees") {
		t.Fatalf("the worktree shows in git status: %s", st)
	}
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		runInJSON(t, repoB, &bv, "--home", homeB, "board")
		for _, c := range bv.Claims {
			if c.Path == ".worktrees/feature/**" && strings.HasPrefix(c.Holder, "alice@") {
				return true
			}
		}
		return false
	}, "B's board to show alice's worktree")
	// Without --as: the agent that holds the worktree's claim releases it.
	if out, errs, code := runIn(t, repoA, "--home", homeA, "worktree", "remove", "feature"); code != 0 || !strings.Contains(out, "and released its claim") {
		t.Fatalf("worktree remove: %d %q %s", code, out, errs)
	}
	runInJSON(t, repoA, &bv, "--home", homeA, "board")
	for _, c := range bv.Claims {
		if strings.HasPrefix(c.Path, ".worktrees/") {
			t.Fatalf("the worktree's claim stayed: %+v", c)
		}
	}
}

// gitGuardCheck: with the guard installed in A's clone, a commit touching a
// file B claimed is refused naming B's note, and goes through with the
// override; uninstall takes the hook out.
func gitGuardCheck(t *testing.T, repoA, homeA string) {
	t.Helper()
	if _, errs, code := runIn(t, repoA, "--home", homeA, "install", "git-guard"); code != 0 {
		t.Fatalf("install git-guard: %s", errs)
	}
	hook := filepath.Join(repoA, ".git", "hooks", "pre-commit")
	if _, err := os.Stat(hook); err != nil {
		t.Fatalf("no hook: %v", err)
	}
	if err := os.WriteFile(filepath.Join(repoA, "src", "b.go"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repoA, "add", "src/b.go")
	commit := exec.Command("git", "-C", repoA, "commit", "-q", "-m", "touch b")
	commit.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := commit.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "formatting") {
		t.Fatalf("the guarded commit: %v\n%s", err, out)
	}
	commit = exec.Command("git", "-C", repoA, "commit", "-q", "-m", "touch b")
	commit.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org", "GIT_CONFIG_GLOBAL=/dev/null", "PARLEY_GUARD=off")
	if out, err := commit.CombinedOutput(); err != nil {
		t.Fatalf("the commit with PARLEY_GUARD=off: %v\n%s", err, out)
	}
	if _, errs, code := runIn(t, repoA, "--home", homeA, "uninstall", "git-guard"); code != 0 {
		t.Fatalf("uninstall git-guard: %s", errs)
	}
	if _, err := os.Stat(hook); !os.IsNotExist(err) {
		t.Fatalf("the hook Parley created is still there: %v", err)
	}
}

// A person reading the board is a party: while another node's agent holds
// a claim (which this node's git guard enforces on the person's commits),
// the board does not call claims optional overhead (it did: the reader was
// not counted, and the holder was the one live session).
func TestCLIBoardNoteCountsTheReader(t *testing.T) {
	t.Parallel()
	repoA, repoB, homeA, homeB := boardPair(t)
	if _, errs, code := run(t, "--home", homeB, "agent", "register", "coder", "--ttl", "1h"); code != 0 {
		t.Fatalf("agent register: %s", errs)
	}
	if _, errs, code := runIn(t, repoB, "--home", homeB, "claim", "src/a.go", "--note", "rewriting a", "--as", "coder"); code != 0 {
		t.Fatalf("claim on B: %s", errs)
	}
	var bv localapi.BoardView
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		runInJSON(t, repoA, &bv, "--home", homeA, "board")
		return len(bv.Claims) == 1 && bv.Claims[0].Note == "rewriting a" && len(bv.Alive) == 1
	}, "A's board to show B's claim and B's live agent")
	if bv.Note != "" {
		t.Fatalf("A's board, with coder@B's claim on it, says %q", bv.Note)
	}
	// The holder itself, the one live session, reads the note.
	runInJSON(t, repoB, &bv, "--home", homeB, "board", "--as", "coder")
	if !strings.Contains(bv.Note, "only one agent session is alive") {
		t.Fatalf("coder's own board: note %q", bv.Note)
	}
}

// A claim refused for another agent's says what was done (nothing: none of
// its paths is held) and the next step: claim again with a --wait that
// outlasts the claim in the way (before, always --wait 30m, which a claim
// of 45 minutes outlasts), or ask the holder to release it.
func TestCLIClaimRefusedSaysNothingClaimedAndWhatToDo(t *testing.T) {
	t.Parallel()
	repo, _ := twoClones(t)
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback)
	if _, errs, code := runIn(t, repo, "--home", home, "claim", "src/a.go", "--note", "splitting the parser", "--ttl", "45m"); code != 0 {
		t.Fatalf("claim: %s", errs)
	}
	if _, errs, code := runIn(t, repo, "--home", home, "agent", "register", "other"); code != 0 {
		t.Fatalf("agent register: %s", errs)
	}
	_, errs, code := runIn(t, repo, "--home", home, "claim", "src/b.go", "src/a.go", "--note", "formatting", "--as", "other")
	if code != 1 || !strings.Contains(errs, "splitting the parser") || !strings.Contains(errs, "nothing was claimed") ||
		!strings.Contains(errs, "claim again with --wait 45m to") || !strings.Contains(errs, "ask its holder to release it") {
		t.Fatalf("a refused claim: exit %d, %q: want the holder's note, that nothing was claimed, and --wait or the holder as next step", code, errs)
	}
	var bv localapi.BoardView
	runInJSON(t, repo, &bv, "--home", home, "board")
	if len(bv.Claims) != 1 || bv.Claims[0].Path != "src/a.go" {
		t.Fatalf("after the refused claim, the board holds %+v: want src/a.go alone", bv.Claims)
	}
	// With --wait, the wait is told as it starts, with what it waits for
	// (it was silent for as long as it waited), and the refusal says how
	// long it waited, not to wait.
	if _, errs, code := runIn(t, repo, "--home", home, "claim", "src/a.go", "--note", "formatting", "--as", "other", "--wait", "1s"); code != 1 ||
		!strings.Contains(errs, `src/a.go is claimed by human@`) || !strings.Contains(errs, "waiting up to 1s for it\n") ||
		!strings.Contains(errs, "after waiting 1s") || strings.Contains(errs, "claim again with --wait") {
		t.Fatalf("a refused claim after --wait 1s: exit %d, %q", code, errs)
	}
	// A claim free at once waits for nothing and says nothing of a wait.
	if _, errs, code := runIn(t, repo, "--home", home, "claim", "src/b.go", "--note", "formatting", "--as", "other", "--wait", "5s"); code != 0 || errs != "" {
		t.Fatalf("a free claim with --wait: exit %d, %q", code, errs)
	}
}

// Unregistering an agent leaves its claims on the board until they expire
// (`agent kill` is what releases them): unregister says so, naming them
// and how to take them off; --json gives them.
func TestCLIAgentUnregisterNamesTheClaimsItLeaves(t *testing.T) {
	t.Parallel()
	repo, _ := twoClones(t)
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback)
	for _, args := range [][]string{{"agent", "register", "tmp"}, {"claim", "src/a.go", "--note", "t", "--as", "tmp"}, {"agent", "register", "idle"}} {
		if _, errs, code := runIn(t, repo, append([]string{"--home", home}, args...)...); code != 0 {
			t.Fatalf("parley %v: %s", args, errs)
		}
	}
	out, errs, code := runIn(t, repo, "--home", home, "agent", "unregister", "tmp")
	if code != 0 || !strings.Contains(out, "its claims stay on the board until they expire: src/a.go until") ||
		!strings.Contains(out, "`parley release --all --as tmp`") {
		t.Fatalf("unregister of an agent that holds a claim: exit %d, %q %q", code, out, errs)
	}
	if _, errs, code := runIn(t, repo, "--home", home, "release", "--all", "--as", "tmp"); code != 0 {
		t.Fatalf("release --all as the unregistered holder: %s", errs)
	}
	var v struct {
		Name   string
		Claims []localapi.Claim
	}
	runInJSON(t, repo, &v, "--home", home, "agent", "unregister", "idle")
	if v.Name != "idle" || v.Claims == nil || len(v.Claims) != 0 {
		t.Fatalf("unregister --json of an agent that holds nothing: %+v", v)
	}
}

// `agent kill` releases the agent's board claims, and says so (it said
// only that its posts are refused and its session ended).
func TestCLIAgentKillSaysItsClaimsAreReleased(t *testing.T) {
	t.Parallel()
	repo, _ := twoClones(t)
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback)
	for _, args := range [][]string{{"agent", "register", "tmp"}, {"claim", "src/a.go", "--note", "t", "--as", "tmp"}} {
		if _, errs, code := runIn(t, repo, append([]string{"--home", home}, args...)...); code != 0 {
			t.Fatalf("parley %v: %s", args, errs)
		}
	}
	if out, errs, code := runIn(t, repo, "--home", home, "agent", "kill", "tmp"); code != 0 || !strings.Contains(out, "its board claims released") {
		t.Fatalf("agent kill: exit %d, %q %q", code, out, errs)
	}
	var bv localapi.BoardView
	nodetest.WaitFor(t, 10*time.Second, func() bool {
		runInJSON(t, repo, &bv, "--home", home, "board")
		return len(bv.Claims) == 0
	}, "the killed agent's claim to leave the board")
}

// Releasing a path another agent holds is refused saying whose it is and
// that only its holder releases it (it said only that the one releasing
// holds nothing).
func TestCLIReleaseOfAnotherAgentsClaimSaysWhoseItIs(t *testing.T) {
	t.Parallel()
	repo, _ := twoClones(t)
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback)
	for _, args := range [][]string{{"agent", "register", "other"}, {"claim", "src/a.go", "--note", "mine", "--as", "other"}} {
		if _, errs, code := runIn(t, repo, append([]string{"--home", home}, args...)...); code != 0 {
			t.Fatalf("parley %v: %s", args, errs)
		}
	}
	_, errs, code := runIn(t, repo, "--home", home, "release", "src/a.go")
	if code != 1 || !strings.Contains(errs, "src/a.go is other@") || !strings.Contains(errs, "only its holder releases it") {
		t.Fatalf("release of other's claim: exit %d, %q", code, errs)
	}
	var bv localapi.BoardView
	runInJSON(t, repo, &bv, "--home", home, "board")
	if len(bv.Claims) != 1 {
		t.Fatalf("the refused release changed the board: %+v", bv.Claims)
	}
}

// A folder claimed before it is made is held as FOLDER; once made, the
// same `release FOLDER` reads it as FOLDER/**, and releases the claim as
// it was made (it was refused: "does not hold FOLDER/** (it holds
// FOLDER)"). The other way round too: a folder claimed while it exists
// is released by name once it is gone.
func TestCLIReleaseOfAFolderMadeOrRemovedSinceItsClaim(t *testing.T) {
	t.Parallel()
	repo, home := newdirClaimedThenMade(t)
	if out, errs, code := runIn(t, repo, "--home", home, "release", "newdir"); code != 0 || !strings.Contains(out, "released newdir\n") {
		t.Fatalf("release of the folder made since its claim: exit %d, %q %q", code, out, errs)
	}
	if _, errs, code := runIn(t, repo, "--home", home, "claim", "newdir", "--note", "while it exists"); code != 0 {
		t.Fatalf("claim of a folder: %s", errs)
	}
	if err := os.Remove(filepath.Join(repo, "newdir")); err != nil {
		t.Fatal(err)
	}
	if out, errs, code := runIn(t, repo, "--home", home, "release", "newdir"); code != 0 || !strings.Contains(out, "released newdir/**\n") {
		t.Fatalf("release of the folder removed since its claim: exit %d, %q %q", code, out, errs)
	}
	var bv localapi.BoardView
	runInJSON(t, repo, &bv, "--home", home, "board")
	if len(bv.Claims) != 0 {
		t.Fatalf("after both releases the board holds %+v", bv.Claims)
	}
}

// Claiming a folder again renews the claim on it, also when it was made
// (or removed) since the first claim: before, the second claim was read
// as FOLDER/** and stood beside the first one (FOLDER), which ended at its
// own expiry, so the board showed the folder twice.
func TestCLIClaimAgainOfAFolderMadeSinceRenewsIt(t *testing.T) {
	t.Parallel()
	repo, home := newdirClaimedThenMade(t, "--ttl", "10m")
	if _, errs, code := runIn(t, repo, "--home", home, "claim", "newdir", "--note", "renewed", "--ttl", "20m"); code != 0 {
		t.Fatalf("claim again: %s", errs)
	}
	var bv localapi.BoardView
	runInJSON(t, repo, &bv, "--home", home, "board")
	if len(bv.Claims) != 1 || bv.Claims[0].Note != "renewed" {
		t.Fatalf("after the claim again, the board holds %+v: want one claim, renewed", bv.Claims)
	}
}

// newdirClaimedThenMade runs a node and claims the folder newdir of a
// repository (with args) before the folder is made, then makes it: the
// repository and the node's home.
func newdirClaimedThenMade(t *testing.T, args ...string) (string, string) {
	t.Helper()
	repo, _ := twoClones(t)
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback)
	claim := append([]string{"--home", home, "claim", "newdir", "--note", "before it is made"}, args...)
	if _, errs, code := runIn(t, repo, claim...); code != 0 {
		t.Fatalf("claim of a folder not made yet: %s", errs)
	}
	if err := os.Mkdir(filepath.Join(repo, "newdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	return repo, home
}
