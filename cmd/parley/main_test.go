package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// The CLI tests drive the real binary, as a user does.
var parleyBin string

func TestMain(m *testing.M) {
	// A binary built with -race sleeps a second before it exits, to catch
	// races in goroutines still running (the race runtime's
	// atexit_sleep_ms, 1000 by default); every CLI call of these tests
	// paid it. A race found before the exit still fails the process (exit
	// code 66), which the tests check.
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
	if os.Getenv(fakeClientEnv) != "" {
		os.Exit(runFakeClient())
	}
	if b := os.Getenv("PARLEY_TEST_BIN"); b != "" {
		// A binary built elsewhere, e.g. without -race to measure the
		// floods' memory as a user's node has it.
		parleyBin = b
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "parley-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	parleyBin = filepath.Join(dir, "parley")
	out, err := exec.Command("go", "build", "-race", "-o", parleyBin, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build parley: %v\n%s", err, out)
		os.Exit(1)
	}
	waitersInParallel()
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// waitersInParallel runs four of the package's tests at once (at least),
// not GOMAXPROCS (2 on CI's machine), unless -test.parallel says: most of
// their time is spent waiting for the processes they start (nodes,
// clients, panes), with the CPUs half idle.
func waitersInParallel() {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); f != nil && !set {
		_ = f.Value.Set(strconv.Itoa(max(4, runtime.GOMAXPROCS(0))))
	}
}

// daemon is a `parley up` process.
type daemon struct {
	cmd    *exec.Cmd
	ready  string // the ready line
	stderr *syncBuffer
	done   chan error
	// exited is closed once the process has exited (after done is sent):
	// up's cleanup waits on it, not on done, which a test may have read.
	exited chan struct{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var addrsRe = regexp.MustCompile(`addrs=(\S+)`)

func (d *daemon) addr() string { return strings.Split(addrsRe.FindStringSubmatch(d.ready)[1], ",")[0] }

// up starts `parley up` and waits for its ready line.
func up(t testing.TB, home string, args ...string) *daemon {
	t.Helper()
	return upEnv(t, home, nil, args...)
}

// upEnv is up with env added to the node's environment.
func upEnv(t testing.TB, home string, env []string, args ...string) *daemon {
	t.Helper()
	cmd := exec.Command(parleyBin, append([]string{"--home", home, "up", "--no-mdns"}, args...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	return upPrepared(t, cmd)
}

// upPrepared starts a prepared `parley up` command and waits for its ready
// line.
func upPrepared(t testing.TB, cmd *exec.Cmd) *daemon {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1), exited: make(chan struct{})}
	cmd.Stderr = d.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		d.done <- cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		// The node is built with -race: a race it ran into fails the test
		// that started it (the race runtime prints a report and, at exit,
		// makes the exit code 66, which a stopped node's caller ignores).
		if strings.Contains(d.stderr.String(), "WARNING: DATA RACE") {
			t.Errorf("parley up ran into a data race:\n%s", d.stderr)
		}
	})
	select {
	case l := <-lines:
		if !strings.HasPrefix(l, "parley ready ") {
			t.Fatalf("first line of up: %q", l)
		}
		d.ready = l
	case err := <-d.done:
		t.Fatalf("parley up exited: %v\n%s", err, d.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("parley up printed no ready line\n%s", d.stderr)
	}
	return d
}

// run runs one CLI command and returns stdout, stderr and the exit code.
func run(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(parleyBin, args...)
	return runPrepared(t, cmd)
}

// runPrepared runs a prepared parley command and returns stdout, stderr and the
// exit code (a command that cannot start at all fails the test).
func runPrepared(t testing.TB, cmd *exec.Cmd) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func runJSON(t testing.TB, v any, args ...string) {
	t.Helper()
	out, errs, code := run(t, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("parley %v: exit %d: %s", args, code, errs)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("parley %v: bad JSON %q: %v", args, out, err)
	}
}

const loopback = "/ip4/127.0.0.1/tcp/0"

func TestCLITwoNodesPeersRestartAndLock(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeB := filepath.Join(base, "a"), filepath.Join(base, "b")
	a := up(t, homeA, "--listen", loopback)
	up(t, homeB, "--listen", loopback, "--bootstrap", a.addr())

	var idA struct {
		PeerID string   `json:"peer_id"`
		Handle string   `json:"handle"`
		Addrs  []string `json:"addrs"`
	}
	runJSON(t, &idA, "--home", homeA, "id")
	if idA.PeerID == "" || len(idA.Addrs) == 0 {
		t.Fatalf("id: %+v", idA)
	}
	// Every key README lists is there, empty when it does not apply: a
	// script written from README finds relay_addrs with no relay, org with
	// no organisation.
	hasKeys := func(what string, raw []byte, keys ...string) {
		t.Helper()
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s: %v: %s", what, err, raw)
		}
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				t.Fatalf("%s has no %q: %s", what, k, raw)
			}
		}
	}
	out, _, _ := run(t, "--home", homeA, "--json", "id")
	hasKeys("id", []byte(out), "peer_id", "handle", "addrs", "relay_addrs", "org")
	if !strings.Contains(out, `"relay_addrs": []`) {
		t.Fatalf("id without relays: relay_addrs is not []: %s", out)
	}
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		var peers []struct {
			PeerID string `json:"peer_id"`
		}
		runJSON(t, &peers, "--home", homeB, "peers")
		return len(peers) == 1 && peers[0].PeerID == idA.PeerID
	}, "B to list A in peers")
	out, _, _ = run(t, "--home", homeB, "--json", "peers")
	var peers []json.RawMessage
	if err := json.Unmarshal([]byte(out), &peers); err != nil || len(peers) != 1 {
		t.Fatalf("peers: %v: %s", err, out)
	}
	hasKeys("peers", peers[0], "peer_id", "handle", "name", "addrs", "conn", "relay", "why", "org")

	// A second up on A's home is refused, and A keeps running.
	_, errs, code := run(t, "--home", homeA, "up", "--no-mdns", "--listen", loopback)
	if code == 0 || !strings.Contains(errs, "in use by a running node") {
		t.Fatalf("second up: exit %d: %s", code, errs)
	}
	if _, _, code := run(t, "--home", homeA, "status"); code != 0 {
		t.Fatal("A died after the refused second up")
	}

	// Key is 0600.
	st, err := os.Stat(filepath.Join(homeA, "identity.key"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key mode: %v %v", st, err)
	}

	// down stops A; a restart keeps its peer ID.
	if _, errs, code := run(t, "--home", homeA, "down"); code != 0 {
		t.Fatalf("down: %s", errs)
	}
	select {
	case <-a.done:
	case <-time.After(10 * time.Second):
		t.Fatal("A did not stop after down")
	}
	up(t, homeA, "--listen", loopback)
	var again struct {
		PeerID string `json:"peer_id"`
	}
	runJSON(t, &again, "--home", homeA, "id")
	if again.PeerID != idA.PeerID {
		t.Fatalf("peer id changed across restart: %s then %s", idA.PeerID, again.PeerID)
	}
}

func TestCLISignalStopsNode(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	d := up(t, home, "--listen", loopback)
	start := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatalf("exit after SIGINT: %v\n%s", err, d.stderr)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("node still running %v after SIGINT", time.Since(start))
	}
	if _, err := os.Stat(filepath.Join(home, "parley.sock")); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
}

func TestCLIBadInput(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for _, tc := range []struct {
		name  string
		setup func(home string)
		args  []string
		want  string
	}{
		{"no node", nil, []string{"peers"}, "no node is running for home"},
		{"no node json", nil, []string{"id", "--json"}, "up`)"},
		{"bad listen", nil, []string{"up", "--listen", "/ip4/1.2.3"}, "is not a multiaddr"},
		{"bad bootstrap", nil, []string{"up", "--listen", loopback, "--bootstrap", "/ip4/127.0.0.1/tcp/1"}, "/p2p/PEER_ID"},
		{"bad config", func(home string) {
			os.MkdirAll(home, 0o700)
			os.WriteFile(filepath.Join(home, "config"), []byte("handle = x\nwat = 1\n"), 0o600)
		}, []string{"up"}, `line 2: unknown key "wat"`},
		{"loose key", func(home string) {
			os.MkdirAll(home, 0o700)
			run(t, "--home", home, "up", "--listen", "/ip4/1.2.3") // creates config only
			d := up(t, home, "--listen", loopback)
			d.cmd.Process.Signal(syscall.SIGTERM)
			// Wait for the process to end (it holds the home until then),
			// not just for its socket to close.
			select {
			case <-d.done:
			case <-time.After(30 * time.Second):
				t.Fatal("node did not stop")
			}
			os.Chmod(filepath.Join(home, "identity.key"), 0o644)
		}, []string{"up", "--listen", loopback}, "chmod 600"},
		{"connect nonsense", nil, []string{"connect", "x"}, "no node is running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := filepath.Join(base, strings.ReplaceAll(tc.name, " ", "-"))
			if tc.setup != nil {
				tc.setup(home)
			}
			before := snapshot(t, home)
			_, errs, code := run(t, append([]string{"--home", home}, tc.args...)...)
			if code == 0 {
				t.Fatalf("exit 0, want failure")
			}
			if !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Fatalf("stderr = %q, want one line containing %q", errs, tc.want)
			}
			if tc.setup != nil {
				if after := snapshot(t, home); after != before {
					t.Fatalf("home changed by a refused start:\nbefore %s\nafter  %s", before, after)
				}
			}
		})
	}
}

func TestCLIBusyPort(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	a := up(t, filepath.Join(base, "a"), "--listen", loopback)
	port := regexp.MustCompile(`/tcp/(\d+)/`).FindStringSubmatch(a.addr())[1]
	_, errs, code := run(t, "--home", filepath.Join(base, "b"), "up", "--no-mdns", "--listen", "/ip4/127.0.0.1/tcp/"+port)
	if code == 0 || !strings.Contains(errs, "cannot listen") || !strings.Contains(errs, "--listen") {
		t.Fatalf("busy port: exit %d: %q", code, errs)
	}
}

// snapshot describes a home's key and config files, to prove a refused
// start damaged nothing.
func snapshot(t *testing.T, home string) string {
	var b strings.Builder
	for _, f := range []string{"identity.key", "config"} {
		st, err := os.Stat(filepath.Join(home, f))
		if err != nil {
			fmt.Fprintf(&b, "%s:missing ", f)
			continue
		}
		raw, _ := os.ReadFile(filepath.Join(home, f))
		fmt.Fprintf(&b, "%s:%o:%x ", f, st.Mode().Perm(), raw)
	}
	return b.String()
}

// With --json a failing command writes its error as one JSON object on
// stderr and nothing on stdout; without it, the text as before.
func TestCLIJSONErrors(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "none")
	out, errs, code := run(t, "--home", home, "--json", "status")
	var e struct {
		Error string `json:"error"`
	}
	if code != 1 || out != "" || json.Unmarshal([]byte(errs), &e) != nil || !strings.Contains(e.Error, "no node is running") {
		t.Fatalf("status --json without a node: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, errs, code = run(t, "--home", home, "status"); code != 1 || !strings.HasPrefix(errs, "parley: no node is running") {
		t.Fatalf("status without a node: exit %d, stderr %q", code, errs)
	}
	// So does an error found before the command ran: an unknown command, a
	// bad flag, a wrong number of arguments (each naming what to do).
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--json", "stauts"}, "did you mean status?"},
		{[]string{"stauts", "--json"}, "did you mean status?"},
		{[]string{"status", "--bogus", "--json"}, "unknown flag: --bogus"},
		{[]string{"--json", "room", "sya"}, "did you mean say?"},
		{[]string{"--json", "room", "say", "x"}, "usage: parley room say ROOM TEXT"},
	} {
		out, errs, code := run(t, append([]string{"--home", home}, tc.args...)...)
		e.Error = ""
		if code != 1 || out != "" || json.Unmarshal([]byte(errs), &e) != nil || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q, want {\"error\"} with %q", tc.args, code, out, errs, tc.want)
		}
	}
	// Without --json: one line.
	for _, args := range [][]string{{"room", "sya"}, {"room", "say"}, {"stauts"}} {
		if _, errs, code := run(t, append([]string{"--home", home}, args...)...); code != 1 || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q, want one line", args, code, errs)
		}
	}
}

// A command that groups others fails on a word it does not know, as the
// root does (it printed its help and exited 0), and prints its help alone.
func TestCLIUnknownSubcommandFails(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"room", "read", "x"}, {"agent", "bogus"}, {"contact", "list2"}, {"bogus"}} {
		out, errs, code := run(t, args...)
		if code != 1 || out != "" || !strings.Contains(errs, "unknown command") {
			t.Errorf("parley %v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
	if out, _, code := run(t, "room"); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Errorf("parley room: exit %d\n%s", code, out)
	}
}

// `find cap:` (a kind with no value) can match nothing: it fails saying so
// (it said "no agents found" and exited 0); `down` with no node running
// says there is none to stop (it said "start one with parley up"), exit 1.
func TestCLIFindEmptyValueAndDownWithoutNode(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	home := filepath.Join(base, "a")
	up(t, home, "--listen", loopback)
	for _, q := range []string{"cap:", "handle: ", ""} {
		_, errs, code := run(t, "--home", home, "find", q)
		if code != 1 || !strings.Contains(errs, "give") {
			t.Errorf("find %q: exit %d, stderr %q; want exit 1 saying what to give", q, code, errs)
		}
	}
	if out, errs, code := run(t, "--home", home, "find", "cap:go"); code != 0 || !strings.Contains(out, "no agents found") || !strings.Contains(out, "`parley who`") {
		t.Errorf("find cap:go: exit %d, %q %q; want exit 0, no agents found", code, out, errs)
	}
	empty := filepath.Join(base, "none")
	if err := os.MkdirAll(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	_, errs, code := run(t, "--home", empty, "down")
	if code != 1 || !strings.Contains(errs, "no node is running") || !strings.Contains(errs, "nothing to stop") || strings.Contains(errs, "start one") {
		t.Errorf("down with no node: exit %d, stderr %q", code, errs)
	}
}
