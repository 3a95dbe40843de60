package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rssKB is a process's resident set size.
func rssKB(t *testing.T, pid int) int {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestMCPSurvivesMalformedLines writes broken lines to a real `parley mcp`
// over pipes: each gets a JSON-RPC error, the process keeps serving, and a
// 10 MB line is refused early without growing its memory.
func TestMCPSurvivesMalformedLines(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	up(t, home, "--listen", loopback)
	proc := startMCPProcess(t, home, "--session", "wire", "--client", "test")
	cmd, stdin, stdout, exited := proc.cmd, proc.stdin, proc.stdout, proc.exited
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	type answer struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	send := func(line string) answer {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatalf("write: %v (did parley mcp exit? %v)", err, cmd.ProcessState)
		}
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("parley mcp closed its output after %.60q: %v", line, <-exited)
			}
			var a answer
			if err := json.Unmarshal([]byte(l), &a); err != nil {
				t.Fatalf("answer %q: %v", l, err)
			}
			return a
		case <-time.After(30 * time.Second):
			t.Fatalf("no answer to %.60q", line)
		}
		return answer{}
	}
	init := send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if init.Error != nil || init.Result == nil {
		t.Fatalf("initialize: %+v", init)
	}
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	before := rssKB(t, cmd.Process.Pid)
	for _, tc := range []struct{ name, line, id string }{
		{"not json", "hello there", "null"},
		{"truncated", `{"jsonrpc":"2.0","id":2,"method":"tools/li`, "null"},
		{"a number", `17`, "null"},
		{"object id", `{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}`, "null"},
		{"no jsonrpc", `{"id":3,"method":"tools/list"}`, "3"},
		{"deep", strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000), "null"},
		{"10 MB", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"parley_say","arguments":{"room":"r","text":"` +
			strings.Repeat("x", 10<<20) + `"}}}`, "4"},
	} {
		a := send(tc.line)
		if a.Error == nil || string(a.ID) != tc.id {
			t.Fatalf("%s: answer %+v, want an error with id %s", tc.name, a, tc.id)
		}
		t.Logf("%s: %d %s", tc.name, a.Error.Code, a.Error.Message)
	}
	after := rssKB(t, cmd.Process.Pid)
	t.Logf("RSS %d kB before the bad lines, %d kB after", before, after)
	if after-before > 40<<10 {
		t.Fatalf("RSS grew from %d to %d kB", before, after)
	}
	list := send(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
	if list.Error != nil || !strings.Contains(string(list.Result), "parley_say") {
		t.Fatalf("tools/list after the bad lines: %+v", list)
	}
}

// mcpProcess is a `parley mcp` run over pipes.
type mcpProcess struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *syncBuffer
	exited <-chan error // its exit, once
}

// startMCPProcess starts `parley --home home mcp --no-start args...` over
// pipes; the test's end closes its input and waits for it (killing it after
// 10 s).
func startMCPProcess(t *testing.T, home string, args ...string) mcpProcess {
	t.Helper()
	cmd := exec.Command(parleyBin, append([]string{"--home", home, "mcp", "--no-start"}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	// gone is closed after exited is sent: the cleanup waits on it, as a
	// test may have read exited.
	gone := make(chan struct{})
	go func() { exited <- cmd.Wait(); close(gone) }()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-gone:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
	})
	return mcpProcess{cmd: cmd, stdin: stdin, stdout: stdout, stderr: stderr, exited: exited}
}
