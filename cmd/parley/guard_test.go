package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeClientEnv makes the test binary an agent's client program (see
// runFakeClient) instead of running the tests.
const fakeClientEnv = "PARLEY_TEST_FAKE_CLIENT"

// runFakeClient acts as an agent client such as Claude Code: it starts
// `parley mcp` as its child and connects to it over stdio, says "ready",
// then runs each command it reads on stdin (a JSON array, one a line) as
// its own child, as a client runs an agent's shell commands, and answers
// each with a JSON line {code, out}. It stops at the end of its input.
func runFakeClient() int {
	bin, home, session := os.Getenv("PARLEY_FC_BIN"), os.Getenv("PARLEY_FC_HOME"), os.Getenv("PARLEY_FC_SESSION")
	cmd := exec.Command(bin, "--home", home, "mcp", "--session", session, "--client", "test", "--project", "/src/"+session)
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "fake-client", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake client: connect:", err)
		return 1
	}
	defer cs.Close()
	fmt.Println("ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var argv []string
		if err := json.Unmarshal(sc.Bytes(), &argv); err != nil || len(argv) == 0 {
			fmt.Fprintln(os.Stderr, "fake client: bad command line:", sc.Text())
			return 1
		}
		c := exec.Command(argv[0], argv[1:]...)
		c.Dir = os.Getenv("PARLEY_FC_DIR")
		out, err := c.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			code, out = -1, []byte(err.Error())
		}
		b, _ := json.Marshal(map[string]any{"code": code, "out": string(out)})
		fmt.Println(string(b))
	}
	return 0
}

// fakeClient is a running runFakeClient process.
type fakeClient struct {
	in  io.WriteCloser
	out *bufio.Scanner
}

// startFakeClient starts an agent client whose `parley mcp` binds session
// (its agent is test-SESSION) and whose commands run in dir.
func startFakeClient(t *testing.T, home, session, dir string) *fakeClient {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fakeClientEnv+"=1", "PARLEY_FC_BIN="+parleyBin, "PARLEY_FC_HOME="+home,
		"PARLEY_FC_SESSION="+session, "PARLEY_FC_DIR="+dir,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org",
		"GIT_CONFIG_GLOBAL=/dev/null")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	f := &fakeClient{in: in, out: bufio.NewScanner(out)}
	f.out.Buffer(make([]byte, 1<<16), 1<<20)
	if !f.out.Scan() || f.out.Text() != "ready" {
		t.Fatalf("fake client %s did not start: %q %v", session, f.out.Text(), f.out.Err())
	}
	return f
}

// run has the client run argv and returns its exit code and output.
func (f *fakeClient) run(t *testing.T, argv ...string) (int, string) {
	t.Helper()
	b, _ := json.Marshal(argv)
	if _, err := fmt.Fprintf(f.in, "%s\n", b); err != nil {
		t.Fatal(err)
	}
	if !f.out.Scan() {
		t.Fatalf("fake client stopped: %v", f.out.Err())
	}
	var r struct {
		Code int    `json:"code"`
		Out  string `json:"out"`
	}
	if err := json.Unmarshal(f.out.Bytes(), &r); err != nil {
		t.Fatalf("fake client answered %q: %v", f.out.Text(), err)
	}
	return r.Code, r.Out
}

// TestGuardKnowsTheCommittingAgent: two agents of one node, each in its own
// client program, share a repository with the guard installed. A commit
// that alpha's client runs over alpha's claim goes through; the same
// commit run by beta's client is refused naming alpha's note and beta; a
// person's commit (no agent's client runs it) counts every agent of the
// node as its own, as before.
func TestGuardKnowsTheCommittingAgent(t *testing.T) {
	t.Parallel()
	repo, _ := twoClones(t)
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback)
	if _, errs, code := runIn(t, repo, "--home", home, "install", "git-guard"); code != 0 {
		t.Fatalf("install git-guard: %s", errs)
	}
	alpha := startFakeClient(t, home, "alpha", repo)
	beta := startFakeClient(t, home, "beta", repo)

	var agents []struct {
		Name      string `json:"name"`
		ClientPID int    `json:"client_pid"`
	}
	runInJSON(t, repo, &agents, "--home", home, "agent", "list")
	if len(agents) != 2 || agents[0].ClientPID == 0 || agents[0].ClientPID == agents[1].ClientPID {
		t.Fatalf("the two agents and their clients' processes: %+v", agents)
	}

	if code, out := alpha.run(t, parleyBin, "--home", home, "claim", "src/a.go", "--as", "test-alpha", "--note", "alpha splits the parser"); code != 0 {
		t.Fatalf("alpha's claim: %d %s", code, out)
	}
	edit := func(s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(repo, "src", "a.go"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("alpha's change\n")
	if code, out := alpha.run(t, "git", "add", "src/a.go"); code != 0 {
		t.Fatalf("git add: %s", out)
	}
	if code, out := alpha.run(t, "git", "commit", "-q", "-m", "alpha's change"); code != 0 {
		t.Fatalf("alpha's commit over its own claim was refused: %s", out)
	}

	edit("beta's change\n")
	if code, out := beta.run(t, "git", "add", "src/a.go"); code != 0 {
		t.Fatalf("git add: %s", out)
	}
	code, out := beta.run(t, "git", "commit", "-q", "-m", "beta's change")
	if code == 0 || !strings.Contains(out, "alpha splits the parser") || !strings.Contains(out, "test-beta") {
		t.Fatalf("beta's commit over alpha's claim: exit %d\n%s", code, out)
	}
	// With --as naming alpha (as $PARLEY_AGENT would), beta's client may
	// commit as alpha: the name given wins over the process.
	if code, out := beta.run(t, "env", "PARLEY_AGENT=test-alpha", "git", "commit", "-q", "-m", "as alpha"); code != 0 {
		t.Fatalf("the commit as alpha: %s", out)
	}

	edit("a person's change\n")
	gitIn(t, repo, "add", "src/a.go")
	gitIn(t, repo, "commit", "-q", "-m", "a person's change")
}

// TestGuardLetsAFirstCommitThrough: a repository with no commit has no
// project key (it is its root commit), so no claim can name it; the
// guard says so and lets the first commit through instead of failing it.
func TestGuardLetsAFirstCommitThrough(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q", "-b", "main")
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	if _, errs, code := runEnv(t, repo, []string{"GIT_CONFIG_GLOBAL=/dev/null"}, "--home", home, "install", "git-guard"); code != 0 {
		t.Fatalf("install git-guard: %s", errs)
	}
	writeFile(t, filepath.Join(repo, "a.go"), "package a\n")
	gitIn(t, repo, "add", ".")
	out, err := gitTry(repo, nil, "commit", "-q", "-m", "first")
	if err != nil || !strings.Contains(out, "no commit yet") {
		t.Fatalf("the first commit with the guard: %v\n%s", err, out)
	}
	if got := gitIn(t, repo, "rev-list", "--count", "HEAD"); strings.TrimSpace(got) != "1" {
		t.Fatalf("commits after the first: %q", got)
	}
}
