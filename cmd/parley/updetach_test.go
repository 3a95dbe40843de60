package main

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/parley-mesh/parley/node/nodetest"
)

// Regression: `up -d` started its background node with a hand-kept list
// of up's flags, which had left --wake-limit out: `up -d --wake-limit 1s`
// ran a node with the default 60 s, silently. Now the child gets every
// flag given but -d and the shared ones; an agent no route reaches is
// marked unreached after the second asked for.
func TestUpDetachedPassesWakeLimitToTheNode(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	out, errs, code := run(t, "--home", home, "up", "-d", "--loopback", "--wake-limit", "1s")
	t.Cleanup(func() { run(t, "--home", home, "down") })
	if code != 0 || !strings.HasPrefix(out, "parley ready ") {
		t.Fatalf("up -d: exit %d\n%s\n%s", code, out, errs)
	}
	if _, errs, code := run(t, "--home", home, "agent", "register", "quiet", "--ttl", "10m"); code != 0 {
		t.Fatalf("agent register: %s", errs)
	}
	if _, errs, code := run(t, "--home", home, "room", "create", "solo"); code != 0 {
		t.Fatalf("room create: %s", errs)
	}
	if _, errs, code := run(t, "--home", home, "room", "ask", "solo", "anyone there?", "--to", "quiet", "--wait", "0"); code != 0 {
		t.Fatalf("room ask: %s", errs)
	}
	// With a 1 s limit the agent, which no route reaches, is marked within
	// a few seconds; with the default it takes 60.
	var st struct {
		Unreached int `json:"unreached"`
	}
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		runJSON(t, &st, "--home", home, "status")
		return st.Unreached > 0
	}, "the agent to be counted unreached, with --wake-limit 1s (the default is 60 s)")
}

// Every flag of up given with -d reaches the background node, so that a
// flag added to up later cannot be left out; -d itself and the flags every
// command shares (--home is given apart, --json would change the ready
// line the parent reads) do not.
func TestUpDetachedChildArgsHoldEveryFlag(t *testing.T) {
	root := newRoot()
	up, _, err := root.Find([]string{"up"})
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-d", "--json", "--home", "/tmp/h", "--timeout", "5s"}
	var want []string
	up.LocalFlags().VisitAll(func(fl *pflag.Flag) {
		if fl.Name == "detach" {
			return
		}
		var v string
		switch fl.Value.Type() {
		case "bool":
			v = "true"
		case "string", "stringArray":
			v = "x-" + fl.Name
		case "duration":
			v = "7s"
		default:
			t.Fatalf("flag --%s of type %s: give this test a value for it", fl.Name, fl.Value.Type())
		}
		args = append(args, "--"+fl.Name+"="+v)
		want = append(want, "--"+fl.Name+"="+v)
	})
	args = append(args, "--listen=second")
	want = append(want, "--listen=second")
	if err := up.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	got := childArgs(up)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("childArgs of up %q:\n got %q\nwant %q", args, got, want)
	}
}

// Regression: `parley --json up -d` printed the text ready line, so
// `parley --json up -d | jq` failed. It prints one JSON object with the
// ready line's fields.
func TestUpDetachedJSONPrintsOneObject(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	out, errs, code := run(t, "--home", home, "--json", "up", "-d", "--loopback", "--handle", "alice")
	t.Cleanup(func() { run(t, "--home", home, "down") })
	if code != 0 {
		t.Fatalf("up -d --json: exit %d: %s", code, errs)
	}
	var v struct {
		PeerID    string   `json:"peer_id"`
		PID       int      `json:"pid"`
		Handle    string   `json:"handle"`
		Addrs     []string `json:"addrs"`
		Home      string   `json:"home"`
		StartupMS int64    `json:"startup_ms"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil || dec.More() {
		t.Fatalf("up -d --json: stdout is not one JSON object (%v): %q", err, out)
	}
	// One line, as the README says: a script reading a line gets it all.
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "}\n") {
		t.Fatalf("up -d --json: the ready object is not one line: %q", out)
	}
	if v.PeerID != peerID(t, home) || v.PID <= 0 || v.Handle != "alice" || len(v.Addrs) == 0 || v.Home != home {
		t.Fatalf("up -d --json: %+v", v)
	}
}

// parseReady reads every field of a ready line, quoted ones unquoted, and
// takes the home as given (the line does not quote it).
func TestParseReady(t *testing.T) {
	line := `parley ready peer_id=12D3KooWabc pid=42 handle="al \"x\" ice" addrs=/ip4/127.0.0.1/tcp/1,/ip4/127.0.0.1/udp/2/quic-v1 home=/tmp/a b startup_ms=35 dashboard_error="not served: port 8 taken"`
	got := parseReady(line, "/tmp/a b")
	want := readyInfo{PeerID: "12D3KooWabc", PID: 42, Handle: `al "x" ice`, Addrs: []string{"/ip4/127.0.0.1/tcp/1", "/ip4/127.0.0.1/udp/2/quic-v1"},
		Home: "/tmp/a b", StartupMS: 35, DashboardError: "not served: port 8 taken"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseReady:\n got %+v\nwant %+v", got, want)
	}
}

// `parley --json up` in the foreground prints its ready line as the same
// JSON object.
func TestUpJSONPrintsTheReadyLineAsJSON(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	cmd := exec.Command(parleyBin, "--home", home, "--json", "up", "--loopback")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	got := make(chan readyInfo, 1)
	go func() {
		// The first line holds the whole object.
		var v readyInfo
		line, err := bufio.NewReader(stdout).ReadString('\n')
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err != nil || dec.Decode(&v) != nil {
			t.Errorf("the ready line of up --json is no JSON object on one line: %q, %v", line, err)
		}
		got <- v
	}()
	select {
	case v := <-got:
		if v.PeerID == "" || v.PID != cmd.Process.Pid || len(v.Addrs) == 0 || v.Home != home {
			t.Fatalf("up --json: %+v", v)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("up --json printed no ready object")
	}
	if _, errs, code := run(t, "--home", home, "down"); code != 0 {
		t.Fatalf("down: %s", errs)
	}
}
