package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/parley-mesh/parley/node"
)

// readyTimeout bounds how long a background start waits for the ready line.
const readyTimeout = 60 * time.Second

// errNoReadyLine: the node started printed no ready line in readyTimeout.
var errNoReadyLine = errors.New("printed no ready line")

// startBackground starts `parley --home HOME up ARGS...` as a process of its
// own session (it outlives this one), with its output appended to
// HOME/node.log, and waits for its ready line, which it returns with the
// warnings the node logged before it (a file of the home made private, one
// that cannot be: what the user should see, not only the log). If the node
// exits first, the error quotes the last line it logged.
func startBackground(ctx context.Context, home string, args ...string) (string, []string, error) {
	if err := node.MakeHome(home); err != nil {
		return "", nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return "", nil, fmt.Errorf("cannot find the parley binary: %v", err)
	}
	logPath := filepath.Join(home, node.LogFileName)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return "", nil, fmt.Errorf("cannot open node log %s: %v", logPath, err)
	}
	defer logf.Close()
	st, err := logf.Stat()
	if err != nil {
		return "", nil, fmt.Errorf("cannot open node log %s: %v", logPath, err)
	}
	from := st.Size() // the ready line is looked for in what this node writes
	cmd := exec.Command(exe, append([]string{"--home", home, "up"}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("cannot start a node: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.NewTimer(readyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	// The log is shared: a node another process started for the home at the
	// same moment writes its ready line there too. The line is this node's
	// only when it names this node's pid.
	ready := ownReady(cmd.Process.Pid)
	for {
		if l, _, _ := logLines(logPath, from, ready); l != "" {
			return l, startWarnings(logPath, from), nil
		}
		select {
		case err := <-exited:
			if l, _, _ := logLines(logPath, from, ready); l != "" {
				return "", nil, fmt.Errorf("the node started for %s stopped at once (%v); see %s", home, err, logPath)
			}
			// Its own error is the last line it wrote as an error ("parley:
			// …"), whatever another node wrote after it.
			_, last, tail := logLines(logPath, from, hasPrefix("parley: "))
			if last == "" {
				last = tail
			}
			if last == "" {
				last = "it logged nothing"
			}
			return "", nil, fmt.Errorf("the node for %s did not start: %s", home, strings.TrimPrefix(strings.TrimPrefix(last, "Error: "), "parley: "))
		case <-deadline.C:
			return "", nil, fmt.Errorf("the node started for %s %w within %s; see %s", home, errNoReadyLine, readyTimeout, logPath)
		case <-ctx.Done():
			return "", nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// startWarnings returns the warnings (level=WARN) a node logged from
// offset from of its log up to its ready line.
func startWarnings(path string, from int64) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "parley ready ") {
			break
		}
		if strings.Contains(l, " level=WARN ") {
			out = append(out, l)
		}
	}
	return out
}

// logLines reads the log from offset from and returns the first and the
// last whole line that match, and the last non-empty line (also one still
// being written). A line is whole once its line end is written: a reader
// can see part of a write, and a ready line cut short would be taken
// without its addresses, or, cut inside another node's pid, as another
// process's.
func logLines(path string, from int64, match func(string) bool) (first, lastMatch, last string) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", ""
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return "", "", ""
	}
	r := bufio.NewReaderSize(f, 64*1024)
	for {
		raw, err := r.ReadString('\n')
		if l := strings.TrimSpace(raw); l != "" {
			last = l
			if strings.HasSuffix(raw, "\n") && match(l) {
				if first == "" {
					first = l
				}
				lastMatch = l
			}
		}
		if err != nil {
			return first, lastMatch, last
		}
	}
}

// ownReady returns a test of whether a line is the ready line of the node
// of process pid: it names that pid just after its peer ID (runUp prints
// it so).
func ownReady(pid int) func(string) bool {
	re := regexp.MustCompile(`^parley ready peer_id=\S+ pid=` + strconv.Itoa(pid) + `(\s|$)`)
	return re.MatchString
}

// hasPrefix returns a test of whether a line starts with prefix.
func hasPrefix(prefix string) func(string) bool {
	return func(l string) bool { return strings.HasPrefix(l, prefix) }
}

// readyAddrs finds the addresses in a ready line.
var readyAddrs = regexp.MustCompile(`addrs=(\S+)`)
