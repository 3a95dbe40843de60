package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/cmd-testnet/testnet"
)

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "0"}, "at least 2"},
		{[]string{"-n", "1"}, "at least 2 nodes"},
		{[]string{"-rate", "-5"}, "-rate -5"},
		{[]string{"-size", "0"}, "-size 0"},
		{[]string{"-duration", "0s"}, "duration must be positive"},
		{[]string{"-scenario", "meteor"}, `no scenario "meteor"`},
		{[]string{"-procs", "-netns"}, "exclude each other"},
		{[]string{"-delay", "20ms"}, "need -netns"},
		{[]string{"-loss", "lots", "-netns"}, "percentage"},
		{[]string{"stray"}, "unexpected argument"},
		{[]string{"-nodes", "3"}, "not defined"},
		{[]string{"-scale", "10,many"}, "numbers of nodes"},
		{[]string{"-scale", "1"}, "in [2, 1000]"},
		{[]string{"-roomsize", "1"}, "at least 2 members"},
		{[]string{"-mocknet", "-procs"}, "excludes -procs"},
		{[]string{"-mocknet", "-loss", "1"}, "mocknet loses nothing"},
		{[]string{"-burn", "-1"}, "-burn -1"},
		{[]string{"-repeat", "3"}, "add -baseline"},
	} {
		var out, errb bytes.Buffer
		// A command line that parsed would start a whole run: say so
		// instead of running it.
		var ue usageError
		if _, _, err := parse(tc.args, &errb); !errors.As(err, &ue) {
			t.Errorf("%v: parsed (%v); want a usage error with %q", tc.args, err, tc.want)
			continue
		}
		errb.Reset()
		if code := run(context.Background(), tc.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("%v: wrote to stdout: %q", tc.args, out.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "-baseline") {
		t.Errorf("-h: exit %d, %q", code, errb.String())
	}
}

// TestScaleSync: the scale scenario runs at the node's anti-entropy
// period unless -sync is given; the other scenarios keep 5 s.
func TestScaleSync(t *testing.T) {
	var errb bytes.Buffer
	cfg, _, err := parse([]string{"-scenario", "scale"}, &errb)
	if err != nil || cfg.ScaleSyncInterval != 0 || cfg.SyncInterval != 5*time.Second {
		t.Errorf("no -sync: scale %v, others %v, %v", cfg.ScaleSyncInterval, cfg.SyncInterval, err)
	}
	cfg, _, err = parse([]string{"-scenario", "scale", "-sync", "10s"}, &errb)
	if err != nil || cfg.ScaleSyncInterval != 10*time.Second || cfg.SyncInterval != 10*time.Second {
		t.Errorf("-sync 10s: scale %v, others %v, %v", cfg.ScaleSyncInterval, cfg.SyncInterval, err)
	}
}

// TestNothingRunExitsNonZero: a run whose every scenario was skipped
// checked nothing and must not exit 0.
func TestNothingRunExitsNonZero(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-mocknet", "-scenario", "restart", "-duration", "1s"}, &out, &errb)
	if code == 0 || strings.Contains(out.String(), "OK:") {
		t.Errorf("exit %d, stdout %q", code, out.String())
	}
}

// TestFlagsThatWouldBeIgnored: flags a mode would not use, values that
// would fall back to a default, and numbers with trailing text are usage
// errors, not a run that silently does something else. (parse only: a
// command line that passed would start a run.)
func TestFlagsThatWouldBeIgnored(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-procs", "-sync", "10s"}, "-sync"},
		{[]string{"-netns", "-sync", "10s"}, "-sync"},
		{[]string{"-scale", "10x,25"}, "numbers of nodes"},
		{[]string{"-scale", "10,25,10"}, "twice"},
		{[]string{"-rooms", "0"}, "-rooms 0"},
		{[]string{"-roomsize", "0"}, "-roomsize 0"},
		{[]string{"-loss", "1x", "-netns"}, "percentage"},
		{[]string{"-procs", "-baseline"}, "-baseline"},
		{[]string{"-mocknet", "-delay", "50ms", "-baseline"}, "-baseline"},
		{[]string{"-scenario", "scale", "-n", "50"}, "-scale"},
		{[]string{"-procs", "-cpuprofile", "cpu.pprof"}, "-cpuprofile"},
		{[]string{"-netns", "-memprofile", "mem.pprof"}, "-memprofile"},
		{[]string{"-scenario", "scale", "-rate", "10"}, "1 msg/s"},
	} {
		var errb bytes.Buffer
		_, _, err := parse(tc.args, &errb)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(ue.msg, tc.want) {
			t.Errorf("%v: %v; want a usage error with %q", tc.args, err, tc.want)
		}
	}
	var errb bytes.Buffer
	if _, _, err := parse([]string{"-procs", "-scenario", "scale", "-scale", "10,25"}, &errb); err != nil {
		t.Errorf("-procs -scale 10,25: %v", err)
	}
}

// TestScaleTableWithholdsWhatTwoSizesCannotSay: a line through two sizes
// always has R² 1, which says nothing of the fit, and a cost below zero
// at 1,000 nodes or 192 peers is no prediction.
func TestScaleTableWithholdsWhatTwoSizesCannotSay(t *testing.T) {
	sr := &testnet.ScaleResult{Mode: testnet.InProcess, RoomSize: 4,
		Rows: []testnet.ScaleRow{{Nodes: 4, Rooms: 1}, {Nodes: 8, Rooms: 2}},
		Fits: []testnet.ScaleFit{{Figure: "idle heap", Unit: "MiB", Slope: 6.026, Intercept: 1.575, R2: 1, At1000: 6028, PerNodeAt1000: 6.028,
			PerNodeGrowth: -4.92, PerNodeTrendAt1000: -42.6, PerPeer: -0.0492, AtNoPeers: 6.568, PerNodeAtCap: -2.882, ConnCap: 192}},
	}
	var out bytes.Buffer
	printScale(&out, sr)
	var row string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Contains(l, "idle heap MiB") {
			row = l
		}
	}
	if row == "" || strings.Contains(row, "1.000") || strings.Contains(row, "-42.6") || strings.Contains(row, "-2.882") {
		t.Errorf("row %q of\n%s", row, out.String())
	}
}

// TestHelpNamesEveryScenario: -h's line for -scenario names every
// scenario that -scenario accepts, the measurements too.
func TestHelpNamesEveryScenario(t *testing.T) {
	var out, errb bytes.Buffer
	run(context.Background(), []string{"-h"}, &out, &errb)
	var line string
	lines := strings.Split(errb.String(), "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "-scenario") && i+1 < len(lines) {
			line = lines[i+1]
		}
	}
	for _, name := range append(append([]string{}, testnet.Scenarios...), testnet.Measurements...) {
		if !strings.Contains(line, name) {
			t.Errorf("-scenario's help %q does not name %s", line, name)
		}
	}
}

// TestBaselineTableGivesNoRatioItLacks: a ratio left out (the system it
// compares with lost deliveries) is not printed as ×0.
func TestBaselineTableGivesNoRatioItLacks(t *testing.T) {
	res := testnet.Results{OK: false, Baseline: &testnet.Baseline{
		GossipSub: &testnet.ScenarioResult{Name: "gossipsub", Sent: 10, Expected: 50, Delivered: 40, DeliveryRatio: 0.8},
		NATS:      &testnet.ScenarioResult{Name: "nats", Sent: 10, Expected: 50, Delivered: 50, DeliveryRatio: 1},
		Ratios:    map[string]float64{"p50_vs_nats": 4, "p99_vs_nats": 8},
	}}
	var out bytes.Buffer
	printTable(&out, res)
	if strings.Contains(out.String(), "×0") || !strings.Contains(out.String(), "×4") {
		t.Errorf("%s", out.String())
	}
}

// TestDocumentedCommandsParse: every cmd-testnet command line the README
// and docs/ARCHITECTURE.md give is one the flags accept.
func TestDocumentedCommandsParse(t *testing.T) {
	re := regexp.MustCompile("go run \\./cmd-testnet((?: +-[^`\\n#;)]*)?)")
	seen := 0
	for _, path := range []string{"../README.md", "../docs/ARCHITECTURE.md"} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// Commands wrapped inside a paragraph continue on the next line.
		text := regexp.MustCompile("\\n +").ReplaceAllString(string(raw), " ")
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			line := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(m[1]), "\\"))
			if strings.ContainsAny(line, "[]|…") || strings.Contains(line, "...") {
				continue // a pattern, not a command
			}
			seen++
			var errb bytes.Buffer
			if _, _, err := parse(strings.Fields(line), &errb); err != nil {
				t.Errorf("%s: go run ./cmd-testnet %s: %v", path, line, err)
			}
		}
	}
	if seen < 10 {
		t.Errorf("found %d documented commands", seen)
	}
}

// TestBaselineTableSaysLatencyOverSomeDeliveries: a system whose
// deliveries were all made but not all timed is named, as a lossy one is.
func TestBaselineTableSaysLatencyOverSomeDeliveries(t *testing.T) {
	res := testnet.Results{OK: true, Baseline: &testnet.Baseline{
		Parley:    &testnet.ScenarioResult{Name: "fanout", Sent: 10, Expected: 50, Delivered: 50, DeliveryRatio: 1, Latency: &testnet.Latency{Count: 40, P50: 1}},
		GossipSub: &testnet.ScenarioResult{Name: "gossipsub", Sent: 10, Expected: 50, Delivered: 40, DeliveryRatio: 0.8, Latency: &testnet.Latency{Count: 40, P50: 1}},
	}}
	var out bytes.Buffer
	printTable(&out, res)
	for _, want := range []string{"fanout timed 40 of its 50 deliveries: no latency ratio", "gossipsub made 40 of 50 deliveries: no latency ratio"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
}
