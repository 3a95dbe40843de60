package testnet

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Scenario names, in the order "all" runs them.
var Scenarios = []string{"fanout", "burst", "partition", "restart", "churn", "discovery"}

// Measurements are scenarios that run only when named ("all" leaves them
// out): they take minutes and measure cost rather than check behaviour.
var Measurements = []string{"scale", "soak"}

// Mode is how nodes run.
type Mode string

// Modes.
const (
	InProcess Mode = "inproc" // real libp2p hosts on 127.0.0.1 in this process
	Procs     Mode = "procs"  // one `parley up` process per node
	Netns     Mode = "netns"  // one process per node, each in its own network namespace
	// Mocknet runs in-process nodes on go-libp2p's in-memory mocknet, with
	// Delay added to every write on every link.
	Mocknet Mode = "mocknet"
)

// Config configures a run. Zero values are documented and sensible.
type Config struct {
	// Nodes is the number of nodes per scenario. Zero means 12; it must be
	// at least 2.
	Nodes int
	// Scenarios to run, in order; "all" (or nil) means every scenario.
	Scenarios []string
	// Rate is the message rate of fanout, partition and churn, in messages
	// per second. Zero means 100.
	Rate int
	// Size is the message size in bytes. Zero means 1024.
	Size int
	// Duration is how long each scenario sends. Zero means 30 s.
	Duration time.Duration
	// Baseline runs the fanout workload on raw GossipSub and NATS too.
	Baseline bool
	// Busy is how many CPUs other processes keep busy during the run
	// (cmd-testnet -burn). It picks the targets a baseline run checks:
	// none busy, p50 within 1.5 times and p99 within twice raw GossipSub's;
	// some, p50 within twice; every one, p50 under 50 ms.
	Busy int
	// Repeat is how many rounds of Parley's fanout and its baselines a
	// Baseline run makes, one after the other (Parley, the baselines,
	// Parley again, ...), so that a noisy machine's drift falls on every
	// system alike; the results give each ratio's median and spread. Zero
	// means 1; more needs Baseline and the fanout scenario alone.
	Repeat int
	// Mode is how nodes run. Empty means InProcess.
	Mode Mode
	// Delay and Loss (percent) are applied with netem to every node's link
	// in Netns mode; Delay is also the mocknet's link latency (one way) in
	// Mocknet mode, which has no loss.
	Delay time.Duration
	Loss  float64
	// CatchUp is the number of events a node catches up with in the restart
	// scenario. Zero means 10,000.
	CatchUp int
	// BigRoom is the size of the room reopened after a restart in the
	// restart scenario. Zero means 100,000.
	BigRoom int
	// Burst is the number of messages of the burst scenario. Zero means
	// Rate × Duration, at least 1,000.
	Burst int
	// SyncInterval is the rooms' anti-entropy period on in-process nodes,
	// in every scenario but scale. Zero means 5 s; the node's own default
	// is 30 s (set it to reproduce that). Processes always run with the
	// node's default.
	SyncInterval time.Duration
	// ScaleSyncInterval is the rooms' anti-entropy period on in-process
	// nodes in the scale scenario. Zero means the node's default
	// (rooms.DefaultSyncInterval, 30 s), so that its idle CPU, and what
	// that predicts for 1,000 nodes, are measured at the rate nodes run.
	ScaleSyncInterval time.Duration
	// Parley is the parley binary for Procs and Netns modes. Empty means
	// build it from the module with `go build`.
	Parley string
	// Dir is where node homes go. Empty means a new temporary folder,
	// removed at the end.
	Dir string
	// Verbose adds node-level detail to the progress output.
	Verbose bool
	// Scale lists the numbers of nodes the scale scenario measures, in
	// turn. Nil means 10, 25, 50 and 100.
	Scale []int
	// Rooms is the number of rooms of the soak scenario. Zero means 10.
	Rooms int
	// RoomSize is the number of members of each room of the scale
	// scenario (the nodes are split into rooms of this size). Zero means
	// 10.
	RoomSize int
}

// WithDefaults fills in zero values and checks the result; errors wrap
// ErrUsage.
func (c Config) WithDefaults() (Config, error) {
	if c.Nodes == 0 {
		c.Nodes = 12
	}
	if c.Rate == 0 {
		c.Rate = 100
	}
	if c.Size == 0 {
		c.Size = 1024
	}
	if c.Duration == 0 {
		c.Duration = 30 * time.Second
	}
	if c.Mode == "" {
		c.Mode = InProcess
	}
	if c.SyncInterval == 0 {
		c.SyncInterval = 5 * time.Second
	}
	if c.CatchUp == 0 {
		c.CatchUp = 10_000
	}
	if c.BigRoom == 0 {
		c.BigRoom = 100_000
	}
	if c.Scale == nil {
		c.Scale = []int{10, 25, 50, 100}
	}
	if c.RoomSize == 0 {
		c.RoomSize = 10
	}
	if c.Rooms == 0 {
		c.Rooms = 10
	}
	if c.Rooms < 1 || c.Rooms > 1000 {
		return c, fmt.Errorf("%w: -rooms %d: from 1 to 1000 rooms", ErrUsage, c.Rooms)
	}
	for _, n := range c.Scale {
		if n < 2 || n > 1000 {
			return c, fmt.Errorf("%w: -scale %d: each number of nodes must be in [2, 1000]", ErrUsage, n)
		}
	}
	if c.RoomSize < 2 {
		return c, fmt.Errorf("%w: -roomsize %d: a room needs at least 2 members", ErrUsage, c.RoomSize)
	}
	switch {
	case c.Nodes < 2:
		return c, fmt.Errorf("%w: -n %d: a testnet needs at least 2 nodes", ErrUsage, c.Nodes)
	case c.Nodes > 1000:
		return c, fmt.Errorf("%w: -n %d: at most 1000 nodes", ErrUsage, c.Nodes)
	case c.Rate < 0:
		return c, fmt.Errorf("%w: -rate %d: the rate must be positive (messages per second)", ErrUsage, c.Rate)
	case c.Rate > 100_000:
		return c, fmt.Errorf("%w: -rate %d: at most 100000 messages per second", ErrUsage, c.Rate)
	case c.Size < 0:
		return c, fmt.Errorf("%w: -size %d: the size must be positive (bytes)", ErrUsage, c.Size)
	case c.Size > 64<<10:
		return c, fmt.Errorf("%w: -size %d: a room message holds at most %d bytes", ErrUsage, c.Size, 64<<10)
	case c.Duration < 0:
		return c, fmt.Errorf("%w: -duration %v: the duration must be positive", ErrUsage, c.Duration)
	case c.Duration < 100*time.Millisecond:
		return c, fmt.Errorf("%w: -duration %v: at least 100ms", ErrUsage, c.Duration)
	case c.Duration > 24*time.Hour:
		return c, fmt.Errorf("%w: -duration %v: at most 24h", ErrUsage, c.Duration)
	case c.CatchUp < 0 || c.BigRoom < 0 || c.Burst < 0:
		return c, fmt.Errorf("%w: -catchup, -bigroom and -burst must be positive", ErrUsage)
	case c.SyncInterval < 0 || c.ScaleSyncInterval < 0:
		return c, fmt.Errorf("%w: -sync %v: must be positive", ErrUsage, min(c.SyncInterval, c.ScaleSyncInterval))
	case c.Delay < 0:
		return c, fmt.Errorf("%w: -delay %v: must not be negative", ErrUsage, c.Delay)
	case c.Loss < 0 || c.Loss >= 100:
		return c, fmt.Errorf("%w: -loss %v%%: must be in [0, 100)", ErrUsage, c.Loss)
	}
	if c.Burst == 0 {
		c.Burst = max(1000, int(float64(c.Rate)*c.Duration.Seconds()))
	}
	switch c.Mode {
	case InProcess, Procs:
		if c.Delay > 0 || c.Loss > 0 {
			return c, fmt.Errorf("%w: -delay and -loss need -netns (netem shapes the namespaces' links), or -delay -mocknet", ErrUsage)
		}
	case Mocknet:
		if c.Loss > 0 {
			return c, fmt.Errorf("%w: -loss needs -netns (the mocknet loses nothing)", ErrUsage)
		}
	case Netns:
		if c.Nodes > 250*250 {
			return c, fmt.Errorf("%w: -n %d: too many namespaces", ErrUsage, c.Nodes)
		}
	default:
		return c, fmt.Errorf("%w: unknown mode %q", ErrUsage, c.Mode)
	}
	if c.Baseline && c.Mode != InProcess {
		// The baselines run in this process on loopback: against nodes
		// behind a local API, on a simulated network or in namespaces
		// their ratios would compare unlike runs (and Parley's CPU per
		// delivery is measured in-process only).
		return c, fmt.Errorf("%w: -baseline compares in-process nodes with GossipSub and NATS in the same process; it excludes -procs, -netns and -mocknet", ErrUsage)
	}
	var want []string
	seen := map[string]bool{}
	add := func(names ...string) {
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				want = append(want, n)
			}
		}
	}
	for _, s := range c.Scenarios {
		for _, part := range strings.Split(s, ",") {
			part = strings.TrimSpace(part)
			switch {
			case part == "":
			case part == "all":
				add(Scenarios...)
			case slices.Contains(Scenarios, part), slices.Contains(Measurements, part):
				add(part)
			default:
				return c, fmt.Errorf("%w: there is no scenario %q; choose from %s, all, or %s", ErrUsage, part, strings.Join(Scenarios, ", "), strings.Join(Measurements, ", "))
			}
		}
	}
	if len(want) == 0 {
		add(Scenarios...)
	}
	c.Scenarios = want
	if c.Repeat == 0 {
		c.Repeat = 1
	}
	switch {
	case c.Repeat < 1 || c.Repeat > 50:
		return c, fmt.Errorf("%w: -repeat %d: from 1 to 50 rounds", ErrUsage, c.Repeat)
	case c.Repeat > 1 && (!c.Baseline || !slices.Equal(c.Scenarios, []string{"fanout"})):
		// Other scenarios would run between the first round's fanout and
		// its baselines, which are to run one after the other.
		return c, fmt.Errorf("%w: -repeat %d: rounds repeat the fanout scenario and its baselines; add -baseline and -scenario fanout (alone)", ErrUsage, c.Repeat)
	}
	return c, nil
}

// inProcess reports whether the nodes run in this process.
func (c Config) inProcess() bool { return c.Mode == InProcess || c.Mode == Mocknet }

// messages is how many messages a steady-rate scenario sends.
func (c Config) messages() int {
	return max(1, int(float64(c.Rate)*c.Duration.Seconds()))
}
