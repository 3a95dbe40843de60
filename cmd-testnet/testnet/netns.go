package testnet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
)

// Netns mode: every node runs in its own network namespace NS-i with one
// interface, eth0 (10.213.x.y/16), whose veth peer hI sits in a hub
// namespace NS-hub on bridge br0. netem on each eth0 delays and drops what
// the node sends. A partition moves the hub ends of one group's veths to
// another bridge; healing moves them back. Nothing touches the host's own
// network namespace.

// checkNetns checks that this process can build namespaces.
func checkNetns(cfg Config) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: -netns needs root: it creates network namespaces, veth pairs and bridges (run it with sudo, or use -procs or the default in-process mode)", ErrEnvironment)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%w: -netns needs the ip tool from iproute2, which is missing (install it: apt-get install iproute2)", ErrEnvironment)
	}
	if cfg.Delay > 0 || cfg.Loss > 0 {
		if _, err := exec.LookPath("tc"); err != nil {
			return fmt.Errorf("%w: -delay and -loss need the tc tool from iproute2, which is missing (install it: apt-get install iproute2)", ErrEnvironment)
		}
		// Probe netem in a scratch namespace.
		ns := fmt.Sprintf("ptn%d-probe", os.Getpid())
		if err := ipRun("netns", "add", ns); err != nil {
			return fmt.Errorf("%w: cannot create a network namespace: %v", ErrEnvironment, err)
		}
		defer func() { _ = ipRun("netns", "del", ns) }()
		if err := ipRun("-n", ns, "link", "set", "lo", "up"); err != nil {
			return fmt.Errorf("%w: %v", ErrEnvironment, err)
		}
		if err := run("tc", "-n", ns, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"); err != nil {
			return fmt.Errorf("%w: netem (for -delay and -loss) is not available in this kernel (load it with `modprobe sch_netem`, or run without -delay and -loss): %v", ErrEnvironment, err)
		}
	}
	return nil
}

var netnsSeq struct {
	sync.Mutex
	n int
}

// netnsEnv is the namespaces of one cluster.
type netnsEnv struct {
	prefix  string
	n       int
	mu      sync.Mutex // protects created, bridges
	created []string   // namespaces, to delete
	bridges int        // bridges made in the hub: br0..br{bridges-1}
}

func (e *netnsEnv) hub() string     { return e.prefix + "-hub" }
func (e *netnsEnv) ns(i int) string { return e.prefix + "-" + strconv.Itoa(i) }
func (e *netnsEnv) addr(i int) string {
	return fmt.Sprintf("10.213.%d.%d", (i+1)/250, (i+1)%250+1)
}

// netnsCluster is a procs cluster whose nodes live in namespaces.
type netnsCluster struct {
	*procs
	env *netnsEnv
}

var _ cluster = (*netnsCluster)(nil)

func startNetns(ctx context.Context, cfg Config, pc procsConfig) (c cluster, err error) {
	netnsSeq.Lock()
	netnsSeq.n++
	seq := netnsSeq.n
	netnsSeq.Unlock()
	env := &netnsEnv{prefix: fmt.Sprintf("ptn%d-%d", os.Getpid(), seq), n: pc.n}
	defer func() {
		if err != nil {
			env.teardown()
		}
	}()
	pc.progress.printf("creating %d network namespaces (%s-*)", pc.n+1, env.prefix)
	if err := env.create(cfg); err != nil {
		return nil, err
	}
	pc.listen = func(i int) string { return fmt.Sprintf("/ip4/%s/tcp/4190", env.addr(i)) }
	pc.wrap = func(i int, argv []string) []string {
		return append([]string{"ip", "netns", "exec", env.ns(i)}, argv...)
	}
	p, err := startProcs(ctx, pc)
	if err != nil {
		return nil, err
	}
	return &netnsCluster{procs: p, env: env}, nil
}

func (e *netnsEnv) add(ns string) error {
	if err := ipRun("netns", "add", ns); err != nil {
		return fmt.Errorf("%w: %v", ErrEnvironment, err)
	}
	e.mu.Lock()
	e.created = append(e.created, ns)
	e.mu.Unlock()
	return nil
}

func (e *netnsEnv) create(cfg Config) error {
	hub := e.hub()
	if err := e.add(hub); err != nil {
		return err
	}
	if err := e.bridge(0); err != nil {
		return err
	}
	for i := range e.n {
		ns := e.ns(i)
		if err := e.add(ns); err != nil {
			return err
		}
		veth := "h" + strconv.Itoa(i)
		steps := [][]string{
			{"-n", hub, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns},
			{"-n", hub, "link", "set", veth, "master", "br0"},
			{"-n", hub, "link", "set", veth, "up"},
			{"-n", ns, "link", "set", "lo", "up"},
			{"-n", ns, "addr", "add", e.addr(i) + "/16", "dev", "eth0"},
			{"-n", ns, "link", "set", "eth0", "up"},
		}
		for _, s := range steps {
			if err := ipRun(s...); err != nil {
				return fmt.Errorf("%w: node %d's namespace: %v", ErrEnvironment, i, err)
			}
		}
		if cfg.Delay > 0 || cfg.Loss > 0 {
			args := []string{"-n", ns, "qdisc", "add", "dev", "eth0", "root", "netem"}
			if cfg.Delay > 0 {
				args = append(args, "delay", fmt.Sprintf("%dus", cfg.Delay.Microseconds()))
			}
			if cfg.Loss > 0 {
				args = append(args, "loss", strconv.FormatFloat(cfg.Loss, 'f', -1, 64)+"%")
			}
			if err := run("tc", args...); err != nil {
				return fmt.Errorf("%w: netem on node %d: %v", ErrEnvironment, i, err)
			}
		}
	}
	return nil
}

// bridge makes sure brK exists in the hub.
func (e *netnsEnv) bridge(k int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for ; e.bridges <= k; e.bridges++ {
		br := "br" + strconv.Itoa(e.bridges)
		if err := ipRun("-n", e.hub(), "link", "add", br, "type", "bridge"); err != nil {
			return fmt.Errorf("%w: %v", ErrEnvironment, err)
		}
		if err := ipRun("-n", e.hub(), "link", "set", br, "up"); err != nil {
			return fmt.Errorf("%w: %v", ErrEnvironment, err)
		}
	}
	return nil
}

// teardown deletes the namespaces (and with them the veths and bridges).
func (e *netnsEnv) teardown() {
	e.mu.Lock()
	created := e.created
	e.created = nil
	e.mu.Unlock()
	for k := len(created) - 1; k >= 0; k-- {
		_ = ipRun("netns", "del", created[k])
	}
}

// Partition puts each group's veths on its own bridge; nodes in no group
// share one more.
func (c *netnsCluster) Partition(groups ...[]int) error {
	where := make(map[int]int)
	for g, members := range groups {
		for _, i := range members {
			where[i] = g
		}
	}
	rest := len(groups)
	for i := range c.env.n {
		g, ok := where[i]
		if !ok {
			g = rest
		}
		if err := c.env.bridge(g); err != nil {
			return err
		}
		if err := ipRun("-n", c.env.hub(), "link", "set", "h"+strconv.Itoa(i), "master", "br"+strconv.Itoa(g)); err != nil {
			return err
		}
	}
	return nil
}

// Heal puts every veth back on br0. Connections cut by the partition
// resume (TCP retransmits) or are redialled.
func (c *netnsCluster) Heal(context.Context) error {
	for i := range c.env.n {
		if err := ipRun("-n", c.env.hub(), "link", "set", "h"+strconv.Itoa(i), "master", "br0"); err != nil {
			return err
		}
	}
	return nil
}

func (c *netnsCluster) Close() error {
	err := c.procs.Close()
	c.env.teardown()
	return err
}

func ipRun(args ...string) error { return run("ip", args...) }

// run runs a command with a deadline and returns its stderr in the error.
func run(name string, args ...string) error { return runStdin("", name, args...) }
