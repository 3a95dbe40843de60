// Command cmd-testnet runs a local Parley testnet: N nodes, scenarios that
// drive rooms and break the network, a results table, JSON and an SVG chart.
//
//	go run ./cmd-testnet [-n 12] [-scenario fanout|burst|partition|restart|churn|discovery|all|scale|soak]
//	    [-rate 100] [-size 1024] [-duration 30s] [-json FILE] [-svg FILE] [-baseline [-repeat N]]
//	    [-cpuprofile FILE] [-burn N] [-scale 10,25,50,100] [-roomsize 10] [-rooms 10]
//	    [-procs | -netns [-delay 20ms] [-loss 1] | -mocknet [-delay 50ms]]
//	go run ./cmd-testnet -netns -nat [cone|symmetric] [-runs 5] [-messages 10] [-relay-drop] [-relay-stall] [-relay-tcp] [-json FILE]
//
// It exits 0 when every scenario delivered every message with the same order
// on every node and no Say failed (and a soak's live heap and goroutines
// stayed flat), 1 when one did not, the run failed or nothing was checked
// (every scenario skipped in the mode, or no delivery expected), 2 on a
// usage error and 3 when the machine lacks what the mode needs (root, ip,
// nft).
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/parley-mesh/parley/cmd-testnet/testnet"
	"github.com/parley-mesh/parley/internal/store"
)

func main() {
	burnChild()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is a bad command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// natFlag is -nat: alone it means cone; -nat=symmetric or -nat symmetric
// chooses the variant.
type natFlag struct{ v string }

func (f *natFlag) String() string   { return f.v }
func (f *natFlag) IsBoolFlag() bool { return true }
func (f *natFlag) Set(s string) error {
	switch s {
	case "true", "":
		f.v = testnet.NATCone
	case "false":
		f.v = ""
	case testnet.NATCone, testnet.NATSymmetric:
		f.v = s
	default:
		return fmt.Errorf("choose cone or symmetric, not %q", s)
	}
	return nil
}

func parse(args []string, stderr io.Writer) (testnet.Config, outputs, error) {
	fs := flag.NewFlagSet("cmd-testnet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg       testnet.Config
		scenario  string
		out       outputs
		procs     bool
		netns     bool
		mock      bool
		loss      string
		nodes     = fs.Int("n", 12, "number of nodes")
		rate      = fs.Int("rate", 100, "messages per second (fanout, partition, churn)")
		size      = fs.Int("size", 1024, "message size in bytes")
		duration  = fs.Duration("duration", 30*time.Second, "how long each scenario sends")
		catchUp   = fs.Int("catchup", 10_000, "events a restarted node catches up with (restart)")
		bigRoom   = fs.Int("bigroom", 100_000, "events of the room reopened after a restart (restart)")
		burst     = fs.Int("burst", 0, "messages of the burst (default rate × duration, at least 1000)")
		delay     = fs.Duration("delay", 0, "netem delay on every node's link (-netns), or the mocknet's link latency (-mocknet)")
		syncEvery = fs.Duration("sync", 5*time.Second, "rooms' anti-entropy period of in-process nodes (the node default is 30s, which the scale scenario uses unless this is given)")
		parleyBin = fs.String("parley", "", "parley binary for -procs and -netns (default: go build ./cmd/parley)")
		dir       = fs.String("dir", "", "folder for node homes (default: a temporary folder, removed at the end)")
		verbose   = fs.Bool("v", false, "more progress detail")
		burn      = fs.Int("burn", 0, "keep `N` CPUs busy during the run with spinning processes, one pinned to each CPU in turn (1: one core busy, 2: both cores of a 2-core machine)")
		scale     = fs.String("scale", "10,25,50,100", "numbers of nodes the scale scenario measures, comma-separated")
		roomSize  = fs.Int("roomsize", 10, "members of each room of the scale scenario")
		roomCount = fs.Int("rooms", 10, "rooms of the soak scenario")
		nat       natFlag
	)
	fs.Var(&nat, "nat", "with -netns: the NAT lab instead of the scenarios, `cone` (default) or symmetric: A and B behind NATs, a public relay (needs root and nft)")
	fs.IntVar(&out.natRuns, "runs", 1, "with -nat: how many times to run the NAT scenario")
	fs.IntVar(&out.natMessages, "messages", 10, "with -nat: messages each of A and B says")
	fs.BoolVar(&out.natRelayDrop, "relay-drop", false, "with -nat: kill the relay while A and B talk, say more, start it again; every message must arrive")
	fs.BoolVar(&out.natRelayStall, "relay-stall", false, "with -nat: freeze the relay for 10 s (connections open, nothing forwarded) while A and B say more; every message must arrive")
	fs.BoolVar(&out.natRelayTCP, "relay-tcp", false, "with -nat: give A and B the relay's TCP address instead of its QUIC one")
	fs.StringVar(&scenario, "scenario", "all", "scenario: "+strings.Join(testnet.Scenarios, "|")+"|all (comma-separated for several); or "+strings.Join(testnet.Measurements, "|")+", which run only when named")
	fs.StringVar(&out.json, "json", "", "write the full results as JSON to `FILE`")
	fs.StringVar(&out.svg, "svg", "", "write a chart of the latency distributions to `FILE` (SVG)")
	fs.StringVar(&out.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to `FILE` (go tool pprof)")
	fs.StringVar(&out.memProfile, "memprofile", "", "write an allocation profile of the whole run to `FILE` (go tool pprof -sample_index=alloc_space)")
	fs.StringVar(&out.pprof, "pprof", "", "serve net/http/pprof on `ADDR` (a loopback address such as 127.0.0.1:6060) during the run, with block and mutex profiling on: heap profiles of in-process nodes over time, where goroutines wait")
	fs.BoolVar(&cfg.Baseline, "baseline", false, "also run the fanout workload on raw go-libp2p-pubsub (its defaults, and mesh publishing as in Parley) and embedded NATS, and compare")
	fs.IntVar(&cfg.Repeat, "repeat", 1, "with -baseline: run `N` rounds of Parley's fanout and its baselines, one after the other, and give each figure's median and spread")
	fs.BoolVar(&procs, "procs", false, "run each node as a separate `parley up` process with its own home")
	fs.BoolVar(&netns, "netns", false, "run each node as a process in its own network namespace, joined by veth pairs (needs root)")
	fs.BoolVar(&mock, "mocknet", false, "run the in-process nodes on go-libp2p's in-memory mocknet, with -delay on every link (one way)")
	fs.StringVar(&loss, "loss", "0", "netem packet loss in percent on every node's link, e.g. 1 or 1% (-netns)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: go run ./cmd-testnet [flags]

Runs N Parley nodes through scenarios and measures them: a table on stdout,
-json for the full results, -svg for a chart. Exits 1 if any scenario loses a
message, shows different orders on different nodes or has a Say fail, and if
nothing was checked (every scenario skipped in the mode).

In-process fanout also shows where the time goes: for each delivery, the time
from the Say call to each stage (published and durable on the sender: the
fsync runs beside the publishing, so the receiver's stages step from
published; validated, stored and visible on the receiver), and the process's
CPU time per delivery. With -baseline, raw GossipSub's and NATS's CPU per delivery are
measured the same way, in the same run, and a table of hops sets Parley's way
through GossipSub beside raw GossipSub's: queued (Publish returned → queued for
the first peer), wire (→ the receiver's GossipSub took it in, directly or through
a relay), receive (→ delivered to the subscription, validation included) and,
for Parley, visible (→ handed to the room's subscribers). -cpuprofile writes a profile for
go tool pprof. To compare with raw GossipSub:

  go run ./cmd-testnet -n 12 -scenario fanout -baseline -duration 15s \
      -json out.json -cpuprofile cpu.pprof

and the same with -burn 1 (one core busy with another process) or -burn 2
(both cores of a 2-core machine busy). The targets checked follow the load:
quiet, p50 within 1.5 times and p99 within twice raw GossipSub's; some CPUs
busy, p50 within twice; every CPU busy, p50 under 50 ms.
On a noisy machine one run's ratio moves by a third from run to run; -repeat N
makes N rounds (Parley's fanout, then the baselines, then Parley again, ...) and
prints each round's figures and each ratio's median and spread:

  go run ./cmd-testnet -n 12 -scenario fanout -baseline -repeat 5 -duration 15s

The scale scenario (run only when named) measures, for each N of -scale, what
N nodes cost: RSS, Go heap, goroutines and CPU per node at idle and while every
node says 1 message a second into its room (rooms of -roomsize members), each
over a window of -duration, and peers per node; then it fits each total
against N and predicts 1,000 nodes. Its nodes run the rooms' anti-entropy at
the node's default period (30 s), not the other scenarios' 5 s, unless -sync
is given. With -procs every node is a process and
its figures come from /proc and its metrics:

  go run ./cmd-testnet -scenario scale -scale 10,25,50,100 -duration 20s

The soak scenario (run only when named; 50 nodes and 10 minutes unless -n and
-duration say otherwise) has the nodes say -rate messages a second in all into
-rooms overlapping rooms, samples RSS, heap and goroutines every 5 s, checks 0
lost and one order per room, and fits the samples of the second half: it fails
if the live heap or the goroutines grow (anonymous RSS is judged and shown, but
does not fail it):

  go run ./cmd-testnet -scenario soak -json soak.json

-mocknet runs the in-process nodes on go-libp2p's in-memory network with -delay
added to every link (one way), e.g. a room of 100 members 50 ms apart:

  go run ./cmd-testnet -mocknet -delay 50ms -n 100 -scenario fanout -rate 10 -duration 20s

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, outputs{}, err
		}
		return cfg, outputs{}, usageError{err.Error()}
	}
	rest := fs.Args()
	if nat.v != "" && len(rest) > 0 && (rest[0] == testnet.NATCone || rest[0] == testnet.NATSymmetric) {
		nat.v, rest = rest[0], rest[1:]
		if err := fs.Parse(rest); err != nil {
			return cfg, outputs{}, usageError{err.Error()}
		}
		rest = fs.Args()
	}
	if len(rest) > 0 {
		return cfg, outputs{}, usageError{fmt.Sprintf("unexpected argument %q (flags only; see -h)", rest[0])}
	}
	if nat.v != "" {
		if !netns {
			return cfg, outputs{}, usageError{"-nat needs -netns (the lab is built of network namespaces)"}
		}
		if out.natRuns < 1 || out.natRuns > 100 {
			return cfg, outputs{}, usageError{fmt.Sprintf("-runs %d: from 1 to 100", out.natRuns)}
		}
		if out.natMessages < 2 || out.natMessages > 1000 {
			return cfg, outputs{}, usageError{fmt.Sprintf("-messages %d: from 2 to 1000", out.natMessages)}
		}
		out.nat = nat.v
	}
	switch {
	case *nodes < 1:
		return cfg, outputs{}, usageError{fmt.Sprintf("-n %d: the number of nodes must be at least 2", *nodes)}
	case *rate <= 0:
		return cfg, outputs{}, usageError{fmt.Sprintf("-rate %d: the rate must be a positive number of messages per second", *rate)}
	case *size <= 0:
		return cfg, outputs{}, usageError{fmt.Sprintf("-size %d: the size must be a positive number of bytes", *size)}
	case *duration <= 0:
		return cfg, outputs{}, usageError{fmt.Sprintf("-duration %v: the duration must be positive, e.g. 30s", *duration)}
	case *syncEvery <= 0:
		return cfg, outputs{}, usageError{fmt.Sprintf("-sync %v: must be positive", *syncEvery)}
	case *catchUp <= 0 || *bigRoom <= 0:
		return cfg, outputs{}, usageError{"-catchup and -bigroom must be positive"}
	case *burn < 0:
		return cfg, outputs{}, usageError{fmt.Sprintf("-burn %d: give a number of CPUs to keep busy", *burn)}
	case procs && netns:
		return cfg, outputs{}, usageError{"-procs and -netns exclude each other (-netns runs processes too)"}
	case mock && (procs || netns):
		return cfg, outputs{}, usageError{"-mocknet runs nodes in this process: it excludes -procs and -netns"}
	}
	lossPct, err := strconv.ParseFloat(strings.TrimSuffix(loss, "%"), 64)
	if err != nil {
		return cfg, outputs{}, usageError{fmt.Sprintf("-loss %q: give a percentage such as 1 or 0.5%%", loss)}
	}
	cfg.Nodes, cfg.Rate, cfg.Size, cfg.Duration = *nodes, *rate, *size, *duration
	cfg.CatchUp, cfg.BigRoom, cfg.Burst = *catchUp, *bigRoom, *burst
	cfg.Scenarios = []string{scenario}
	cfg.Delay, cfg.Loss, cfg.SyncInterval = *delay, lossPct, *syncEvery
	cfg.Parley, cfg.Dir, cfg.Verbose = *parleyBin, *dir, *verbose
	out.burn = *burn
	cfg.RoomSize, cfg.Rooms = *roomSize, *roomCount
	// The soak's own defaults: 50 nodes for 10 minutes.
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["sync"] && (procs || netns):
		return cfg, outputs{}, usageError{"-sync sets the anti-entropy period of in-process nodes; processes (-procs, -netns) run the node's default (30s)"}
	case set["rooms"] && *roomCount == 0:
		return cfg, outputs{}, usageError{"-rooms 0: the soak needs at least 1 room"}
	case set["roomsize"] && *roomSize == 0:
		return cfg, outputs{}, usageError{"-roomsize 0: a room needs at least 2 members"}
	case (procs || netns) && (out.cpuProfile != "" || out.memProfile != ""):
		return cfg, outputs{}, usageError{"-cpuprofile and -memprofile profile this process, and with -procs or -netns the nodes run in others: profile in-process nodes (the default mode)"}
	case scenario == "scale" && set["n"]:
		return cfg, outputs{}, usageError{"-n: the scale scenario takes its numbers of nodes from -scale, e.g. -scale 10,25,50"}
	case scenario == "scale" && set["rate"]:
		return cfg, outputs{}, usageError{"-rate: under load every node of the scale scenario says 1 msg/s into its room; -rate is not used"}
	}
	if set["sync"] {
		cfg.ScaleSyncInterval = *syncEvery
	}
	if scenario == "soak" {
		if !set["n"] {
			cfg.Nodes = 50
		}
		if !set["duration"] {
			cfg.Duration = 10 * time.Minute
		}
	}
	for _, part := range strings.Split(*scale, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			return cfg, outputs{}, usageError{fmt.Sprintf("-scale %q: give numbers of nodes, e.g. 10,25,50", *scale)}
		}
		if slices.Contains(cfg.Scale, n) {
			// The fits against N need distinct sizes.
			return cfg, outputs{}, usageError{fmt.Sprintf("-scale %q: %d is given twice", *scale, n)}
		}
		cfg.Scale = append(cfg.Scale, n)
	}
	switch {
	case procs:
		cfg.Mode = testnet.Procs
	case netns:
		cfg.Mode = testnet.Netns
	case mock:
		cfg.Mode = testnet.Mocknet
	}
	checked, err := cfg.WithDefaults()
	if err != nil {
		return cfg, outputs{}, usageError{strings.TrimPrefix(err.Error(), testnet.ErrUsage.Error()+": ")}
	}
	return checked, out, nil
}

// outputs are the files a run writes besides its table.
type outputs struct {
	json, svg, cpuProfile string
	memProfile            string
	pprof                 string // address for net/http/pprof
	burn                  int    // CPUs to keep busy during the run
	// The NAT lab, when nat is set.
	nat                  string
	natRuns, natMessages int
	natRelayDrop         bool
	natRelayStall        bool
	natRelayTCP          bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, out, err := parse(args, stderr)
	jsonFile, svgFile := out.json, out.svg
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "cmd-testnet: %s\nrun `go run ./cmd-testnet -h` for the flags\n", ue.msg)
		return 2
	}
	if out.cpuProfile != "" {
		f, err := os.Create(out.cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
			if err != nil {
				f.Close()
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "cmd-testnet: -cpuprofile: %v\n", err)
			return 2
		}
		defer func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				fmt.Fprintf(stderr, "cmd-testnet: write %s: %v\n", out.cpuProfile, err)
			}
		}()
	}
	if out.memProfile != "" {
		runtime.MemProfileRate = 64 << 10
		defer func() {
			if err := writeHeapProfile(out.memProfile); err != nil {
				fmt.Fprintf(stderr, "cmd-testnet: -memprofile: %v\n", err)
			}
		}()
	}
	if out.pprof != "" {
		stopPprof, err := servePprof(out.pprof)
		if err != nil {
			fmt.Fprintf(stderr, "cmd-testnet: -pprof: %v\n", err)
			return 2
		}
		defer stopPprof()
		fmt.Fprintf(stderr, "cmd-testnet: pprof on http://%s/debug/pprof/\n", out.pprof)
	}
	load := loadAvg()
	cfg.Busy = out.burn
	if out.burn > 0 {
		stopBurn, err := startBurn(out.burn)
		if err != nil {
			fmt.Fprintf(stderr, "cmd-testnet: -burn: %v\n", err)
			return 2
		}
		defer stopBurn()
	}
	if out.nat != "" {
		return runNAT(ctx, cfg, out, stdout, stderr)
	}
	res, runErr := testnet.Run(ctx, cfg, stderr)
	res.Machine.LoadAvg, res.Machine.Burn = load, out.burn
	if errors.Is(runErr, testnet.ErrUsage) {
		fmt.Fprintf(stderr, "cmd-testnet: %v\n", runErr)
		return 2
	}
	if errors.Is(runErr, testnet.ErrEnvironment) && len(res.Scenarios) == 0 {
		fmt.Fprintf(stderr, "cmd-testnet: %v\n", runErr)
		return 3
	}
	if len(res.Scenarios) > 0 || res.Baseline != nil {
		printTable(stdout, res)
	}
	code := 0
	if jsonFile != "" {
		raw, err := json.MarshalIndent(res, "", "  ")
		if err == nil {
			err = os.WriteFile(jsonFile, append(raw, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "cmd-testnet: write %s: %v\n", jsonFile, err)
			code = 1
		}
	}
	if svgFile != "" {
		var buf bytes.Buffer
		err := testnet.WriteSVG(&buf, res)
		if err == nil {
			err = os.WriteFile(svgFile, buf.Bytes(), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "cmd-testnet: write %s: %v\n", svgFile, err)
			code = 1
		}
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "cmd-testnet: %v\n", runErr)
		return 1
	}
	if !res.OK {
		fmt.Fprintf(stderr, "cmd-testnet: FAILED:\n  %s\n", strings.Join(res.Failures, "\n  "))
		return 1
	}
	return code
}

// runNAT runs the NAT lab and prints one line a run and a summary.
func runNAT(ctx context.Context, cfg testnet.Config, out outputs, stdout, stderr io.Writer) int {
	res, err := testnet.RunNAT(ctx, testnet.NATConfig{NAT: out.nat, Runs: out.natRuns, Messages: out.natMessages, RelayDrop: out.natRelayDrop, RelayStall: out.natRelayStall, RelayTCP: out.natRelayTCP, Parley: cfg.Parley, Dir: cfg.Dir}, stderr)
	switch {
	case errors.Is(err, testnet.ErrUsage):
		fmt.Fprintf(stderr, "cmd-testnet: %v\n", err)
		return 2
	case errors.Is(err, testnet.ErrEnvironment) && len(res.Runs) == 0:
		fmt.Fprintf(stderr, "cmd-testnet: %v\n", err)
		return 3
	}
	if len(res.Runs) > 0 {
		printNAT(stdout, res)
	}
	code := 0
	if out.json != "" {
		raw, jerr := json.MarshalIndent(res, "", "  ")
		if jerr == nil {
			jerr = os.WriteFile(out.json, append(raw, '\n'), 0o644)
		}
		if jerr != nil {
			fmt.Fprintf(stderr, "cmd-testnet: write %s: %v\n", out.json, jerr)
			code = 1
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "cmd-testnet: %v\n", err)
		return 1
	}
	if !res.OK {
		fmt.Fprintf(stderr, "cmd-testnet: FAILED:\n  %s\n", strings.Join(res.Failures, "\n  "))
		return 1
	}
	return code
}

func printNAT(w io.Writer, res testnet.NATResult) {
	fmt.Fprintf(w, "Parley NAT lab: A and B each behind a %s NAT, one public node (bootstrap and relay)\n\n", res.NAT)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tcontact s\tfirst message s\tconnection\tsettled s\tdelivered\torder\tp50 ms\tmax ms\t")
	for k, r := range res.Runs {
		if r.Error != "" {
			fmt.Fprintf(tw, "%d\t-\t-\tERROR\t-\t-\t-\t-\t-\t\n", k+1)
			continue
		}
		conn := "relayed"
		if r.Direct {
			conn = "direct"
		}
		order := "identical"
		if !r.OrderIdentical {
			order = "DIVERGES"
		}
		p50, mx := "-", "-"
		if r.Latency != nil {
			p50, mx = fmt.Sprintf("%.1f", r.Latency.P50), fmt.Sprintf("%.0f", r.Latency.Max)
		}
		fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%s\t%.1f\t%d/%d\t%s\t%s\t%s\t\n", k+1, r.UpToContactS, r.UpToFirstMessageS, conn, r.SettleS, r.Delivered, r.Sent, order, p50, mx)
	}
	tw.Flush()
	for k, r := range res.Runs {
		switch {
		case r.Error != "":
			fmt.Fprintf(w, "  run %d: error: %s\n", k+1, r.Error)
		case r.Why != "":
			fmt.Fprintf(w, "  run %d: %s\n", k+1, r.Why)
		}
		if r.StallBackS > 0 {
			fmt.Fprintf(w, "  run %d: the relay stalled: every message said meanwhile arrived %.1f s after it went on\n", k+1, r.StallBackS)
		}
		if r.RelayBackS > 0 {
			fmt.Fprintf(w, "  run %d: the relay was killed and started again: every message said meanwhile arrived %.1f s after it came back\n", k+1, r.RelayBackS)
		}
	}
	fmt.Fprintf(w, "\ndirect connections: %.0f%% of %d runs\n", 100*res.DirectShare, len(res.Runs))
	if res.OK {
		fmt.Fprintln(w, "OK: every message delivered, in the same order on A and B")
	} else {
		for _, f := range res.Failures {
			fmt.Fprintf(w, "FAILED: %s\n", f)
		}
	}
}

func printTable(w io.Writer, res testnet.Results) {
	c := res.Config
	link := ""
	if c.Delay > 0 {
		link = fmt.Sprintf(", link delay %g ms", c.Delay)
	}
	nodes := fmt.Sprintf("%d nodes", c.Nodes)
	if slices.Equal(c.Scenarios, []string{"scale"}) {
		nodes = fmt.Sprintf("N = %s nodes", strings.Trim(strings.Join(strings.Fields(fmt.Sprint(c.Scale)), ","), "[]"))
	}
	sync := fmt.Sprintf("anti-entropy every %gs", c.SyncInterval)
	switch {
	case slices.Equal(c.Scenarios, []string{"scale"}):
		sync = fmt.Sprintf("anti-entropy every %gs", c.ScaleSyncInterval)
	case slices.Contains(c.Scenarios, "scale") && c.ScaleSyncInterval != c.SyncInterval:
		sync += fmt.Sprintf(" (scale: %gs)", c.ScaleSyncInterval)
	}
	rate := fmt.Sprintf("%d msg/s of %d B", c.Rate, c.Size)
	if slices.Equal(c.Scenarios, []string{"scale"}) {
		rate = fmt.Sprintf("under load 1 msg/s of %d B a node", c.Size)
	}
	fmt.Fprintf(w, "Parley testnet: %s (%s%s), %s, %gs per scenario, %s, %d CPUs (GOMAXPROCS %d), %s\n",
		nodes, c.Mode, link, rate, c.Duration, sync, res.Machine.CPUs, res.Machine.Procs, res.Machine.GoVersion)
	if m := res.Machine; len(m.LoadAvg) == 3 || m.Burn > 0 {
		var parts []string
		if len(m.LoadAvg) == 3 {
			parts = append(parts, fmt.Sprintf("load average %.2f %.2f %.2f at the start", m.LoadAvg[0], m.LoadAvg[1], m.LoadAvg[2]))
		}
		if m.Burn > 0 {
			parts = append(parts, fmt.Sprintf("%d CPUs kept busy by other processes (-burn)", m.Burn))
		}
		fmt.Fprintf(w, "machine: %s\n", strings.Join(parts, "; "))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tsent\tsays failed\tdelivered\tratio\torder\tp50 ms\tp95 ms\tp99 ms\tmax ms\tconverge ms\ttime s\t")
	for _, s := range res.Scenarios {
		if s.Skipped != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\tskipped\t-\t-\t-\t-\t-\t%.1f\t\n", s.Name, s.ElapsedS)
			continue
		}
		order := "n/a"
		if s.OrderChecked {
			order = "identical"
			if !s.OrderIdentical {
				order = "DIVERGES"
			}
		}
		ratio := fmt.Sprintf("%.4f", s.DeliveryRatio)
		if s.Error != "" {
			order, ratio = "ERROR", "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d/%d\t%s\t%s\t%s\t%.1f\t\n", s.Name, s.Sent, s.SaysFailed, s.Delivered, s.Expected, ratio, order, latCols(s.Latency, s.ConvergeMs), s.ElapsedS)
	}
	tw.Flush()
	for _, s := range res.Scenarios {
		if len(s.Metrics) > 0 {
			keys := make([]string, 0, len(s.Metrics))
			for k := range s.Metrics {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s=%g", k, s.Metrics[k]))
			}
			fmt.Fprintf(w, "  %s: %s\n", s.Name, strings.Join(parts, " "))
		}
		for _, n := range s.Notes {
			fmt.Fprintf(w, "  %s: note: %s\n", s.Name, n)
		}
		if s.Skipped != "" {
			fmt.Fprintf(w, "  %s: skipped: %s\n", s.Name, s.Skipped)
		}
		if s.Error != "" {
			fmt.Fprintf(w, "  %s: error: %s\n", s.Name, s.Error)
		}
	}
	for _, s := range res.Scenarios {
		printStages(w, s.Name, s.Stages)
		if res.Baseline == nil && s.Hops != nil {
			printHops(w, []*testnet.ScenarioResult{&s})
		}
		printScale(w, s.Scale)
		printSoak(w, s.Soak)
	}
	if b := res.Baseline; b != nil {
		fmt.Fprintf(w, "\nbaseline, same workload: %s\n", b.Workload)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "system\tdelivered\tratio\tp50 ms\tp95 ms\tp99 ms\tmax ms\tCPU µs/delivery\ttime s\t")
		for _, s := range []*testnet.ScenarioResult{b.Parley, b.GossipSub, b.GossipSubMesh, b.NATS} {
			if s == nil {
				continue
			}
			name := s.Name
			if name == "fanout" {
				name = "parley"
			}
			lat := strings.TrimSuffix(latCols(s.Latency, 0), "\t-")
			cpu := "-"
			if v, ok := s.Metrics["cpu_us_per_delivery"]; ok {
				cpu = fmt.Sprintf("%.1f", v)
			}
			fmt.Fprintf(tw, "%s\t%d/%d\t%.4f\t%s\t%s\t%.1f\t\n", name, s.Delivered, s.Expected, s.DeliveryRatio, lat, cpu, s.ElapsedS)
		}
		tw.Flush()
		for _, o := range []struct{ key, name string }{
			{"gossipsub", "gossipsub"},
			{"gossipsub_mesh", "gossipsub-mesh (flood publishing off and mesh size as in Parley)"},
			{"nats", "nats"},
		} {
			if v, ok := b.Ratios["p50_vs_"+o.key]; ok {
				fmt.Fprintf(w, "  parley ÷ %s: p50 ×%g, p99 ×%g\n", o.name, v, b.Ratios["p99_vs_"+o.key])
			}
		}
		if v, ok := b.Ratios["cpu_per_delivery_vs_gossipsub"]; ok {
			fmt.Fprintf(w, "  parley ÷ gossipsub: CPU per delivery ×%g (whole process, every node)", v)
			if m, ok := b.Ratios["cpu_per_delivery_vs_gossipsub_mesh"]; ok {
				fmt.Fprintf(w, "; ÷ gossipsub-mesh ×%g", m)
			}
			fmt.Fprintln(w)
		}
		for _, s := range []*testnet.ScenarioResult{b.Parley, b.GossipSub, b.GossipSubMesh, b.NATS} {
			if s == nil {
				continue
			}
			if why := s.Incomparable(); why != "" {
				fmt.Fprintf(w, "  %s %s: no latency ratio or target is set against it\n", s.Name, why)
			}
		}
		keys := make([]string, 0, len(b.Targets))
		for k := range b.Targets {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			met := "met"
			if !b.Targets[k] {
				met = "NOT met"
			}
			fmt.Fprintf(w, "  target %s: %s\n", k, met)
		}
		printHops(w, []*testnet.ScenarioResult{b.Parley, b.GossipSub, b.GossipSubMesh})
	}
	printRounds(w, res.Rounds, res.RoundSummary)
	fmt.Fprintln(w)
	var slow *testnet.ScenarioResult
	for i := range res.Scenarios {
		if s := &res.Scenarios[i]; slow == nil || s.ConvergeMs > slow.ConvergeMs {
			slow = s
		}
	}
	if slow != nil && slow.ConvergeMs > 0 {
		fmt.Fprintf(w, "slowest convergence: %s, %.0f ms\n", slow.Name, slow.ConvergeMs)
	}
	for _, s := range res.Scenarios {
		if s.Soak != nil && s.Error == "" {
			fmt.Fprintf(w, "%s: %s\n", s.Name, soakVerdict(s.Soak))
		}
	}
	skipped := 0
	for _, s := range res.Scenarios {
		if s.Skipped != "" {
			skipped++
		}
	}
	if res.OK && skipped > 0 {
		fmt.Fprintf(w, "OK: every scenario that ran delivered every message, in the same order on every node, and no Say failed (%d skipped in this mode)\n", skipped)
	} else if res.OK {
		fmt.Fprintln(w, "OK: every scenario delivered every message, in the same order on every node, and no Say failed")
	} else {
		for _, f := range res.Failures {
			fmt.Fprintf(w, "FAILED: %s\n", f)
		}
	}
}

func latCols(l *testnet.Latency, converge float64) string {
	conv := "-"
	if converge > 0 {
		conv = fmt.Sprintf("%.0f", converge)
	}
	if l == nil {
		return "-\t-\t-\t-\t" + conv
	}
	return fmt.Sprintf("%.2f\t%.2f\t%.2f\t%.1f\t%s", l.P50, l.P95, l.P99, l.Max, conv)
}

// printHops prints where the time goes inside GossipSub, one row a system.
func printHops(w io.Writer, systems []*testnet.ScenarioResult) {
	found := false
	for _, s := range systems {
		found = found || (s != nil && s.Hops != nil)
	}
	if !found {
		return
	}
	fmt.Fprintln(w, "\nwhere a hop's time goes, p50 / p99 ms (queued: Publish returned → queued for the first peer; wire: → the receiver's")
	fmt.Fprintln(w, "GossipSub took it in, from the publisher or, relayed, from the relay's delivery; receive: → delivered to the topic's")
	fmt.Fprintln(w, "subscription, validation included; visible: → handed to the room's subscribers)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tqueued\twire\trelayed wire\treceive\tvisible\trelayed\t")
	for _, s := range systems {
		if s == nil || s.Hops == nil {
			continue
		}
		name := s.Name
		if name == "fanout" {
			name = "parley"
		}
		h := s.Hops
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d of %d\t\n", name, p50p99(h.Queued), p50p99(h.Wire), p50p99(h.RelayWire), p50p99(h.Receive), p50p99(h.Visible), h.Relayed, h.Deliveries)
	}
	tw.Flush()
}

func p50p99(l *testnet.Latency) string {
	if l == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f / %.2f", l.P50, l.P99)
}

// printStages prints a scenario's latency breakdown by stage.
func printStages(w io.Writer, name string, st *testnet.Stages) {
	if st == nil || len(st.Stages) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s: where the time goes, over %d deliveries (ms since the Say call; step: since the stage before, and durable, beside the path, does not count as one)\n", name, st.Deliveries)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tnode\tp50\tp99\tmean\tstep p50\tstep p99\tstep mean\t")
	for _, s := range st.Stages {
		if s.SinceSend == nil || s.Step == nil {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t\n", s.Stage, s.Node)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t\n", s.Stage, s.Node,
			s.SinceSend.P50, s.SinceSend.P99, s.SinceSend.Mean, s.Step.P50, s.Step.P99, s.Step.Mean)
	}
	tw.Flush()
	if st.BySync > 0 || st.Incomplete > 0 || st.Clamped > 0 {
		fmt.Fprintf(w, "  not counted: %d by anti-entropy, %d incomplete; %d with a stamp before the stage before it (taken as equal)\n", st.BySync, st.Incomplete, st.Clamped)
	}
}

// printScale prints the scale scenario's table by N and its fits.
func printScale(w io.Writer, sr *testnet.ScaleResult) {
	if sr == nil || len(sr.Rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\nscale (%s): rooms of %d, anti-entropy every %gs, windows of %gs at idle and with every node saying %g msg/s; per node\n", sr.Mode, sr.RoomSize, sr.SyncIntervalS, sr.WindowS, sr.PerNodeRate)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "nodes\trooms\tstart s\tidle RSS MiB\tidle heap MiB\tidle goroutines\tpeers\tfiles\tidle CPU ms/s\tloaded CPU ms/s\tloaded RSS MiB\tloaded heap MiB\tloaded goroutines\tdelivered\tp50 ms\tp99 ms\tload avg\t")
	for _, r := range sr.Rows {
		lat := "-\t-"
		if r.Latency != nil {
			lat = fmt.Sprintf("%.1f\t%.1f", r.Latency.P50, r.Latency.P99)
		}
		sat := ""
		if r.Saturated {
			sat = " (CPU-bound)"
		}
		delivered := fmt.Sprintf("%d/%d", r.Delivered, r.Expected)
		if r.SaysFailed > 0 {
			delivered += fmt.Sprintf(" (%d SAYS FAILED)", r.SaysFailed)
		}
		fmt.Fprintf(tw, "%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f%s\t%.1f\t%.1f\t%.1f\t%s\t%s\t%.2f\t\n", r.Nodes, r.Rooms, r.StartS,
			r.Idle.RSSPerNodeMiB, r.Idle.HeapPerNodeMiB, r.Idle.GoroutinesPerNode, r.Idle.PeersPerNode, r.Idle.FDsPerNode,
			1000*r.Idle.CPUPerNode, 1000*r.Load.CPUPerNode, sat, r.Load.RSSPerNodeMiB, r.Load.HeapPerNodeMiB, r.Load.GoroutinesPerNode, delivered, lat, r.Load1)
	}
	tw.Flush()
	if len(sr.Fits) == 0 {
		fmt.Fprintln(w, "\nno fit against N and no prediction for 1,000 nodes: that needs two numbers of nodes measured")
		return
	}
	sizes := map[int]bool{}
	for _, r := range sr.Rows {
		sizes[r.Nodes] = true
	}
	fmt.Fprintln(w, "\nfit of each total against N (least squares), and what it predicts for 1,000 nodes; then each per-node figure against the node's peers, at 192 peers (the connection manager's high watermark)")
	if len(sizes) < 3 {
		fmt.Fprintf(w, "(%d numbers of nodes: a line through two points fits them exactly, so R² is not given; measure three or more to judge the line)\n", len(sizes))
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "figure\tper node\tintercept\tR²\tat 1,000 nodes\tper node at 1,000\tper-node growth per 100 nodes\tper node at 1,000 on that trend\tper node: at 0 peers\t+ per peer\tat 192 peers\t")
	for _, f := range sr.Fits {
		unit := ""
		if f.Unit != "" {
			unit = " " + f.Unit
		}
		capCols := "-\t-\t-"
		if f.ConnCap > 0 {
			capCols = fmt.Sprintf("%.4g\t%+.3g\t%s", f.AtNoPeers, f.PerPeer, prediction(f.PerNodeAtCap))
		}
		r2 := "-"
		if len(sizes) >= 3 {
			r2 = fmt.Sprintf("%.3f", f.R2)
		}
		fmt.Fprintf(tw, "%s%s\t%.4g\t%.4g\t%s\t%s\t%s\t%+.3g\t%s\t%s\t\n", f.Figure, unit, f.Slope, f.Intercept, r2, prediction(f.At1000), prediction(f.PerNodeAt1000), f.PerNodeGrowth, prediction(f.PerNodeTrendAt1000), capCols)
	}
	tw.Flush()
}

// prediction prints an extrapolated cost: below zero, the line does not
// hold that far (every figure fitted is a cost), and no number is given.
func prediction(v float64) string {
	if v < 0 {
		return "< 0: none"
	}
	return fmt.Sprintf("%.4g", v)
}

// printSoak prints the soak scenario's slopes and verdict.
func printSoak(w io.Writer, sr *testnet.SoakResult) {
	if sr == nil {
		return
	}
	fmt.Fprintf(w, "\nsoak: %d rooms of %d, %d msg/s in all for %gs; %d samples every %gs; slopes after %gs of warm-up\n",
		sr.Rooms, sr.RoomSize, sr.Rate, sr.DurationS, len(sr.Samples), sr.IntervalS, sr.WarmupS)
	fmt.Fprintf(w, "  live heap %+.3f MiB/min (mean %.0f MiB; growth over the span %.1f%% of it)\n",
		sr.HeapMiBPerMin, sr.MeanHeapMiB, 100*sr.HeapGrowthShare)
	fmt.Fprintf(w, "  anonymous RSS %+.3f MiB/min (mean %.0f MiB; growth over the span %.1f%% of it)\n",
		sr.RSSAnonMiBPerMin, sr.MeanRSSAnonMiB, 100*sr.RSSAnonGrowthShare)
	fmt.Fprintf(w, "  all RSS %+.3f MiB/min (mean %.0f MiB; growth over the span %.1f%% of it), of which file-backed %+.3f MiB/min\n",
		sr.RSSMiBPerMin, sr.MeanRSSMiB, 100*sr.RSSGrowthShare, sr.RSSFileMiBPerMin)
	fmt.Fprintf(w, "  goroutines %+.2f/min (mean %.0f; growth over the span %.2f%% of it)\n", sr.GoroutinesPerMin, sr.MeanGoroutines, 100*sr.GoroutineGrowthShare)
	fmt.Fprintf(w, "  fitted from 20%% of the run on (caches still filling): anonymous RSS %+.3f MiB/min, live heap %+.3f MiB/min, all RSS %+.3f MiB/min, goroutines %+.2f/min\n",
		sr.RSSAnonMiBPerMinFrom20, sr.HeapMiBPerMinFrom20, sr.RSSMiBPerMinFrom20, sr.GoroutinesPerMinFrom20)
	if n := len(sr.Samples); n > 0 {
		first, last := sr.Samples[0], sr.Samples[n-1]
		fmt.Fprintf(w, "  first and last sample: anonymous RSS %.0f → %.0f MiB, file-backed %.0f → %.0f MiB, live heap %.0f → %.0f MiB, heap goal %.0f → %.0f MiB, goroutines %d → %d\n",
			first.RSSAnonMiB, last.RSSAnonMiB, first.RSSFileMiB, last.RSSFileMiB, first.HeapMiB, last.HeapMiB, first.HeapGoalMiB, last.HeapGoalMiB, first.Goroutines, last.Goroutines)
	}
	fmt.Fprintf(w, "  (file-backed RSS is mapped files — Badger's value logs, tables and write-ahead logs, the binary —\n"+
		"   page cache the kernel drops when memory is short; it grows with the data written, so it is not judged; anonymous RSS\n"+
		"   is judged but does not fail the run, as it moves with the Go runtime's returning of freed pages to the system;\n"+
		"   the warm-up is half the run: memtables cycle every 3–4 min at this load, the depth and seen caches fill in 2–4 min;\n"+
		"   memory slopes are least squares, the goroutines' the median pairwise slope, which a minute-long step does not tilt)\n")
	if l := sr.SayLatency; l != nil {
		fmt.Fprintf(w, "  Say calls: p50 %.2f ms, p99 %.2f ms, max %.1f ms\n", l.P50, l.P99, l.Max)
	}
	printSoakTail(w, sr)
	fmt.Fprintf(w, "  %s\n  rule: %s\n", soakVerdict(sr), sr.FlatRule)
}

// soakVerdict is the soak's verdict in one line: FLAT, or NOT FLAT and
// which figure grew.
func soakVerdict(sr *testnet.SoakResult) string {
	if sr.Flat {
		return "FLAT: live heap, goroutines and anonymous RSS"
	}
	v := "NOT FLAT: "
	if sr.HeapFlat && sr.GoroutinesFlat {
		v = "NOT FLAT (anonymous RSS only, which does not fail the run): "
	}
	var parts []string
	for _, f := range []struct {
		name  string
		flat  bool
		share float64
	}{{"live heap", sr.HeapFlat, sr.HeapGrowthShare}, {"goroutines", sr.GoroutinesFlat, sr.GoroutineGrowthShare}, {"anonymous RSS", sr.RSSAnonFlat, sr.RSSAnonGrowthShare}} {
		word := "flat"
		if !f.flat {
			word = "NOT FLAT"
		}
		parts = append(parts, fmt.Sprintf("%s %s (%+.1f%%)", f.name, word, 100*f.share))
	}
	return v + strings.Join(parts, ", ")
}

// printSoakTail says when in the run the delivery tail came: the spread
// of each sampling interval's p99, the worst intervals, and how many
// intervals had a p99 over 100 ms and over 1 s.
func printSoakTail(w io.Writer, sr *testnet.SoakResult) {
	var with []testnet.SoakSample
	for _, s := range sr.Samples {
		if s.Deliveries > 0 {
			with = append(with, s)
		}
	}
	if len(with) == 0 {
		return
	}
	p99s := make([]float64, len(with))
	over100, over1s := 0, 0
	for i, s := range with {
		p99s[i] = s.DeliveryP99Ms
		if s.DeliveryP99Ms > 100 {
			over100++
		}
		if s.DeliveryP99Ms > 1000 {
			over1s++
		}
	}
	slices.Sort(p99s)
	worst := slices.Clone(with)
	slices.SortFunc(worst, func(a, b testnet.SoakSample) int { return cmp.Compare(b.DeliveryP99Ms, a.DeliveryP99Ms) })
	var at []string
	for _, s := range worst[:min(3, len(worst))] {
		at = append(at, fmt.Sprintf("%.0f ms at %.0fs (%.2f CPUs; p99 of flushes %s, of writes %s; new epochs %d, p99 %s)",
			s.DeliveryP99Ms, s.T, s.CPU, bucketMs(s.Flushes, s.FlushP99Ms), bucketMs(s.Writes, s.WriteP99Ms), s.Epochs, bucketMs(s.Epochs, s.EpochP99Ms)))
	}
	fmt.Fprintf(w, "  delivery p99 per %gs interval: median %.1f ms, worst %s; over 100 ms in %d of %d intervals, over 1 s in %d\n",
		sr.IntervalS, p99s[len(p99s)/2], strings.Join(at, ", "), over100, len(with), over1s)
}

// bucketMs says an upper bound from a soak sample (-1: past the last
// bucket), or "-" if nothing was timed.
func bucketMs(n uint64, ms float64) string {
	switch {
	case n == 0:
		return "-"
	case ms < 0:
		return fmt.Sprintf("> %.0f ms", 1000*store.FlushBuckets[len(store.FlushBuckets)-1])
	}
	return fmt.Sprintf("≤ %.1f ms", ms)
}

// writeHeapProfile writes the allocations of the run so far to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// printRounds prints a -repeat run's rounds, one row a round, and the
// median and spread of each figure and ratio.
func printRounds(w io.Writer, rounds []*testnet.Baseline, sum *testnet.RoundSummary) {
	if len(rounds) < 2 || sum == nil {
		return
	}
	fmt.Fprintf(w, "\n%d rounds, each Parley's fanout and then the baselines (p50 / p99 ms, CPU µs a delivery)\n", len(rounds))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tparley\tgossipsub\tgossipsub-mesh\tp50 ÷ gossipsub\tp99 ÷ gossipsub\tp50 ÷ mesh\tCPU ÷ gossipsub\t")
	lat := func(s *testnet.ScenarioResult) string {
		if s == nil || s.Latency == nil {
			return "-"
		}
		cpu := ""
		if v, ok := s.Metrics["cpu_us_per_delivery"]; ok {
			cpu = fmt.Sprintf(", %.0f", v)
		}
		return fmt.Sprintf("%.2f / %.1f%s", s.Latency.P50, s.Latency.P99, cpu)
	}
	ratio := func(m map[string]float64, k string) string {
		if v, ok := m[k]; ok {
			return fmt.Sprintf("×%.2f", v)
		}
		return "-"
	}
	for i, b := range rounds {
		if b == nil {
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", i+1, lat(b.Parley), lat(b.GossipSub), lat(b.GossipSubMesh),
			ratio(b.Ratios, "p50_vs_gossipsub"), ratio(b.Ratios, "p99_vs_gossipsub"), ratio(b.Ratios, "p50_vs_gossipsub_mesh"), ratio(b.Ratios, "cpu_per_delivery_vs_gossipsub"))
	}
	spread := func(name string, fig bool) string {
		m := sum.Ratios
		if fig {
			m = sum.Figures
		}
		s, ok := m[name]
		if !ok {
			return "-"
		}
		if fig {
			return fmt.Sprintf("%.2f (%.2f–%.2f)", s.Median, s.Min, s.Max)
		}
		return fmt.Sprintf("×%.2f (%.2f–%.2f)", s.Median, s.Min, s.Max)
	}
	fmt.Fprintf(tw, "p50 median (range)\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", spread("parley_p50_ms", true), spread("gossipsub_p50_ms", true), spread("gossipsub_mesh_p50_ms", true),
		spread("p50_vs_gossipsub", false), spread("p99_vs_gossipsub", false), spread("p50_vs_gossipsub_mesh", false), spread("cpu_per_delivery_vs_gossipsub", false))
	tw.Flush()
	keys := make([]string, 0, len(sum.TargetsMet))
	for k := range sum.TargetsMet {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  target %s: met in %d of %d rounds\n", k, sum.TargetsMet[k], sum.Rounds)
	}
}
