package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// runQuestionAgent runs the fake agent behind a start-up question with
// `parley run` (with extra flags) and answers the question at its pane, as
// the person would; it returns the agent's name.
func runQuestionAgent(t *testing.T, home, name string, flags ...string) {
	t.Helper()
	sock := tmuxDir(t)
	script, err := filepath.Abs(filepath.Join("testdata", "fakeagent.sh"))
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--name", name, "--tmux-socket", sock}, flags...)
	args = append(args, "--", "sh", "-c", "printf 'Do you trust the files in this folder? [y/N] '; read answer; exec bash --norc "+script)
	out, code := parleyRun(t, home, args...)
	if code != 0 {
		t.Fatalf("parley run: exit %d\n%s", code, out)
	}
	m := regexp.MustCompile(`tmux pane (%[0-9]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("parley run named no pane: %s", out)
	}
	if out, err := exec.Command("tmux", "-S", sock, "send-keys", "-t", m[1], "-l", "y").CombinedOutput(); err != nil {
		t.Fatalf("send-keys: %v %s", err, out)
	}
	if out, err := exec.Command("tmux", "-S", sock, "send-keys", "-t", m[1], "Enter").CombinedOutput(); err != nil {
		t.Fatalf("send-keys: %v %s", err, out)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, err := exec.Command("tmux", "-S", sock, "display-message", "-p", "-t", m[1], "#{cursor_x}").Output()
		return err == nil && strings.TrimSpace(string(out)) == "2"
	}, "the agent's prompt")
}

// askAgent asks the agent and wants its answer.
func askAgent(t *testing.T, home, name string) {
	t.Helper()
	c := localapi.NewClient(node.SocketPath(home))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := c.Ask(ctx, "human", localapi.AskRequest{Text: "which port does the shop use?", To: name, WaitSeconds: 40})
	if err != nil || res.Reply == nil || res.Reply.Text != "the port is 8080" {
		t.Fatalf("no answer from the agent: %+v, %v", res, err)
	}
}

// A program that asks something before its prompt (a folder-trust
// question): run learns the question, and once the person has answered,
// the node learns the real prompt and wakes the agent there.
func TestRunLearnsThePromptAfterAStartupQuestion(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	runQuestionAgent(t, home, "asker")
	askAgent(t, home, "asker")
}

// --prompt gives the empty prompt as a pattern: the question never
// matches it, the prompt after it does; a pattern that does not compile
// is refused before anything starts.
func TestRunWithAPromptPattern(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	if out, code := parleyRun(t, home, "--prompt", "^> (", "--tmux-socket", tmuxDir(t), "--", "sh"); code != 1 || !strings.Contains(out, "--prompt") {
		t.Fatalf("a --prompt that does not compile: exit %d\n%s", code, out)
	}
	runQuestionAgent(t, home, "patterned", "--prompt", "^> ?$")
	askAgent(t, home, "patterned")
}
