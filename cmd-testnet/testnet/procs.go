package testnet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
)

// procsConfig configures a cluster of `parley up` processes.
type procsConfig struct {
	bin      string
	n        int
	dir      string
	logf     func(string, ...any)
	progress *progress
	// listen returns node i's first listen address; nil means
	// /ip4/127.0.0.1/tcp/0 (and the same port again after a restart).
	listen func(i int) string
	// wrap turns node i's command line into the one to run (netns mode
	// prefixes `ip netns exec NS`); nil runs it as it is.
	wrap func(i int, argv []string) []string
}

// procNode is one node process.
type procNode struct {
	i      int
	home   string
	listen string // the address to listen on (the port it got, after a start)
	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has exited
	err    error         // the exit status, set before done is closed
	peerID string
	addrs  []string
	client *localapi.Client
}

// procs runs each node as a `parley up` process with its own home, and
// drives it through its local API.
type procs struct {
	cfg     procsConfig
	mu      sync.Mutex // protects nodes[i] (replaced on restart) and contact
	nodes   []*procNode
	contact map[[2]int]bool // pairs of nodes that are contacts
}

var _ cluster = (*procs)(nil)

// buildParley builds the parley binary from the module in the current
// directory's tree, or checks the given one.
func (r *runner) parleyBinary(ctx context.Context) (string, error) {
	if r.cfg.Parley != "" {
		p, err := exec.LookPath(r.cfg.Parley)
		if err != nil {
			return "", fmt.Errorf("%w: -parley %s: %v", ErrEnvironment, r.cfg.Parley, err)
		}
		return filepath.Abs(p)
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("%w: building parley needs the Go toolchain (%v); or pass -parley BINARY", ErrEnvironment, err)
	}
	gomod := strings.TrimSpace(string(out))
	raw, rerr := os.ReadFile(gomod)
	if gomod == "" || gomod == os.DevNull || rerr != nil || !strings.Contains(string(raw), "module github.com/parley-mesh/parley\n") {
		return "", fmt.Errorf("%w: run from inside the parley module to build parley, or pass -parley BINARY", ErrEnvironment)
	}
	bin := filepath.Join(r.dir, "parley")
	r.p.printf("building parley (go build -o %s ./cmd/parley)", bin)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/parley")
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w: go build ./cmd/parley: %v\n%s", ErrEnvironment, err, out)
	}
	return bin, nil
}

func startProcs(ctx context.Context, cfg procsConfig) (_ *procs, err error) {
	c := &procs{cfg: cfg, nodes: make([]*procNode, cfg.n), contact: make(map[[2]int]bool)}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if err := c.start(ctx, 0); err != nil {
		return nil, err
	}
	errs := make([]error, cfg.n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8) // starting many processes at once swamps 2 cores
	for i := 1; i < cfg.n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = c.start(ctx, i)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// start starts node i (again) and waits for its ready line.
func (c *procs) start(ctx context.Context, i int) error {
	c.mu.Lock()
	old := c.nodes[i]
	var boot []string
	for j, o := range c.nodes {
		if j != i && o != nil && o.running() && len(o.addrs) > 0 {
			boot = append(boot, o.addrs[0])
			break
		}
	}
	c.mu.Unlock()
	home := filepath.Join(c.cfg.dir, fmt.Sprintf("n%d", i))
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("%w: node %d: %v", ErrNodeStart, i, err)
	}
	// Scenarios post as fast as they can: no per-agent post limit.
	cfgPath := filepath.Join(home, "config")
	if _, err := os.Stat(cfgPath); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(cfgPath, []byte("agent_post_limit = none\nmdns = false\n"), 0o600); err != nil {
			return fmt.Errorf("%w: node %d: %v", ErrNodeStart, i, err)
		}
	}
	listen := "/ip4/127.0.0.1/tcp/0"
	if c.cfg.listen != nil {
		listen = c.cfg.listen(i)
	}
	if old != nil {
		listen = old.listen
	}
	argv := []string{c.cfg.bin, "--home", home, "up", "--listen", listen, "--no-mdns", "--handle", fmt.Sprintf("node%d", i), "--log-level", "warn"}
	for _, b := range boot {
		argv = append(argv, "--bootstrap", b)
	}
	if c.cfg.wrap != nil {
		argv = c.cfg.wrap(i, argv)
	}
	pn, err := launch(ctx, i, home, argv)
	if err != nil {
		return err
	}
	pn.listen = listen
	// Keep the port across restarts, as peers remember it.
	if a, err := ma.NewMultiaddr(pn.addrs[0]); err == nil {
		if tr, _ := ma.SplitLast(a); tr != nil {
			pn.listen = tr.String()
		}
	}
	c.mu.Lock()
	c.nodes[i] = pn
	c.mu.Unlock()
	return nil
}

// launch runs argv, a `parley up` command line for the node with home
// (wrapped or not), and waits for its ready line. Its stderr goes to
// HOME/testnet-stderr.log; it dies with the testnet.
func launch(ctx context.Context, i int, home string, argv []string) (*procNode, error) {
	logPath := filepath.Join(home, "testnet-stderr.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: node %d: %v", ErrNodeStart, i, err)
	}
	defer logf.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the testnet
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%w: node %d: %v", ErrNodeStart, i, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: node %d: %s: %v", ErrNodeStart, i, argv[0], err)
	}
	pn := &procNode{i: i, home: home, cmd: cmd, done: make(chan struct{}), client: localapi.NewClient(node.SocketPath(home))}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			if line := sc.Text(); !sent && strings.HasPrefix(line, "parley ready ") {
				ready <- line
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		pn.err = cmd.Wait()
		close(pn.done)
	}()
	fail := func(why string) (*procNode, error) {
		_ = cmd.Process.Kill()
		<-pn.done
		return nil, fmt.Errorf("%w: node %d (home %s): %s%s", ErrNodeStart, i, home, why, tailFile(logPath, 5))
	}
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case line := <-ready:
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "peer_id":
				pn.peerID = v
			case "addrs":
				pn.addrs = strings.Split(v, ",")
			}
		}
		if pn.peerID == "" || len(pn.addrs) == 0 {
			return fail(fmt.Sprintf("unreadable ready line %q", line))
		}
		// The scenarios post as agent: a node refuses a post as an agent
		// it does not know. Registered for a day (the node keeps it across
		// a restart), so a scenario needs no heartbeat.
		if _, err := pn.client.RegisterAgent(ctx, localapi.RegisterAgentRequest{Name: string(agent), TTLSeconds: 24 * 3600}); err != nil {
			return fail(fmt.Sprintf("register agent %s: %v", agent, err))
		}
		return pn, nil
	case <-pn.done:
		return fail(fmt.Sprintf("exited before it was ready (%v)", pn.err))
	case <-t.C:
		return fail("not ready within 30 s")
	case <-ctx.Done():
		return fail(ctx.Err().Error())
	}
}

// tailFile returns the last n lines of a file, indented, for error messages.
func tailFile(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil || len(raw) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	return "; its stderr ends:\n    " + strings.Join(lines, "\n    ")
}

func (p *procNode) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (c *procs) node(i int) (*procNode, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.nodes[i]
	if p == nil || !p.running() {
		return nil, fmt.Errorf("node %d is not running", i)
	}
	return p, nil
}

func (c *procs) Len() int { return c.cfg.n }

func (c *procs) PeerID(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.nodes[i]; p != nil {
		return p.peerID
	}
	return ""
}

func (c *procs) Running(i int) bool {
	_, err := c.node(i)
	return err == nil
}

func (c *procs) OpenRoom(ctx context.Context, name string) (string, error) {
	var members []int
	for i := 1; i < c.Len(); i++ {
		if c.Running(i) {
			members = append(members, i)
		}
	}
	return c.OpenRoomOf(ctx, name, 0, members)
}

func (c *procs) OpenRoomOf(ctx context.Context, name string, creator int, members []int) (string, error) {
	n0, err := c.node(creator)
	if err != nil {
		return "", err
	}
	cr, err := n0.client.OpenRoom(ctx, string(agent), localapi.OpenRoomRequest{Name: name})
	if err != nil {
		return "", fmt.Errorf("create room: %w", err)
	}
	room := cr.RoomID
	var invited []*procNode
	for _, i := range members {
		if i == creator {
			continue
		}
		p, err := c.node(i)
		if err != nil {
			continue
		}
		invited = append(invited, p)
		if err := c.befriend(ctx, n0, p); err != nil {
			return "", err
		}
		if _, err := n0.client.Invite(ctx, string(agent), localapi.InviteRequest{Room: room, Member: p.peerID}); err != nil {
			return "", fmt.Errorf("invite node %d: %w", i, err)
		}
	}
	for _, p := range invited {
		err := poll(ctx, 30*time.Second, func() bool {
			in, err := p.client.Room(ctx, room)
			return err == nil && slices.Contains(in.Members, p.peerID)
		}, fmt.Sprintf("node %d to learn it is a member", p.i))
		if err != nil {
			return room, err
		}
		// The node joined (as its user): its user lets its agent in, as
		// a person would, since an agent posts only in rooms it was let into.
		if _, err := p.client.Invite(ctx, string(identity.HumanAgent), localapi.InviteRequest{Room: room, Member: string(agent)}); err != nil {
			return room, fmt.Errorf("node %d lets its agent into the room: %w", p.i, err)
		}
	}
	return room, nil
}

// befriend makes p a contact of n0 (a certificate both hold), which
// inviting p needs under the node's default room policy: p asks, n0
// approves, through their local APIs.
func (c *procs) befriend(ctx context.Context, n0, p *procNode) error {
	c.mu.Lock()
	pair := [2]int{min(n0.i, p.i), max(n0.i, p.i)}
	done := c.contact[pair]
	c.mu.Unlock()
	if done {
		return nil
	}
	addr := n0.addrs[0]
	if _, err := p.client.ContactRequest(ctx, addr, "testnet"); err != nil {
		return fmt.Errorf("node %d asks node %d to be a contact: %w", p.i, n0.i, err)
	}
	err := poll(ctx, 20*time.Second, func() bool {
		res, err := n0.client.ContactApprove(ctx, p.peerID, "")
		return err == nil && string(res.State) == "active"
	}, fmt.Sprintf("node %d to approve node %d as a contact", n0.i, p.i))
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.contact[pair] = true
	c.mu.Unlock()
	return nil
}

func (c *procs) CreateRoom(ctx context.Context, i int, name string) (string, error) {
	p, err := c.node(i)
	if err != nil {
		return "", err
	}
	cr, err := p.client.OpenRoom(ctx, string(agent), localapi.OpenRoomRequest{Name: name})
	return cr.RoomID, err
}

func (c *procs) Say(ctx context.Context, i int, room, text string) error {
	p, err := c.node(i)
	if err != nil {
		return err
	}
	_, err = p.client.Say(ctx, string(agent), localapi.SayRequest{Room: room, Text: text})
	return err
}

func (c *procs) Subscribe(i int, room string, fn func(string, time.Time)) (func(), error) {
	p, err := c.node(i)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := p.client.Tail(ctx, room, func(v localapi.Event) error {
			fn(v.Text, time.Now())
			return nil
		})
		if err != nil && ctx.Err() == nil && p.running() {
			c.cfg.logf("node %d: tail ended: %v", i, err)
		}
	}()
	return func() { cancel(); <-done }, nil
}

func (c *procs) Count(ctx context.Context, i int, room string) (uint64, error) {
	p, err := c.node(i)
	if err != nil {
		return 0, err
	}
	in, err := p.client.Room(ctx, room)
	return in.Events, err
}

// VV reads the whole log: the local API has no version vector.
func (c *procs) VV(ctx context.Context, i int, room string) (map[string]uint64, error) {
	log, err := c.Log(ctx, i, room)
	if err != nil {
		return nil, err
	}
	return vvOf(log), nil
}

func (c *procs) Log(ctx context.Context, i int, room string) ([]entry, error) {
	p, err := c.node(i)
	if err != nil {
		return nil, err
	}
	var pages [][]entry
	before := ""
	total := 0
	for {
		vs, err := p.client.Log(ctx, room, 10000, before)
		if err != nil {
			return nil, err
		}
		if len(vs) == 0 {
			break
		}
		page := make([]entry, len(vs))
		for k, v := range vs {
			page[k] = entry{ID: v.ID, Text: v.Text, Author: v.Author, Seq: v.Seq}
		}
		pages = append(pages, page)
		total += len(vs)
		before = vs[0].ID
		if len(vs) < 10000 {
			break
		}
	}
	out := make([]entry, 0, total)
	for k := len(pages) - 1; k >= 0; k-- {
		out = append(out, pages[k]...)
	}
	return out, nil
}

func (c *procs) Tail(ctx context.Context, i int, room string, n int) ([]entry, error) {
	p, err := c.node(i)
	if err != nil {
		return nil, err
	}
	vs, err := p.client.Log(ctx, room, n, "")
	if err != nil {
		return nil, err
	}
	out := make([]entry, len(vs))
	for k, v := range vs {
		out[k] = entry{ID: v.ID, Text: v.Text, Author: v.Author, Seq: v.Seq}
	}
	return out, nil
}

// Crash kills node i's process (SIGKILL: no clean shutdown).
func (c *procs) Crash(i int) error {
	p, err := c.node(i)
	if err != nil {
		return err
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	p.client.Close()
	return nil
}

func (c *procs) Restart(ctx context.Context, i int) error {
	if c.Running(i) {
		return fmt.Errorf("node %d is running; crash it first", i)
	}
	return c.start(ctx, i)
}

func (c *procs) Partition(...[]int) error {
	return fmt.Errorf("%w: partitions need the in-process or -netns mode (processes on 127.0.0.1 share one network)", ErrUnsupported)
}

func (c *procs) Heal(context.Context) error { return nil }

// Close stops every node: SIGTERM, then SIGKILL after 5 s.
func (c *procs) Close() error {
	c.mu.Lock()
	nodes := slices.Clone(c.nodes)
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range nodes {
		if p == nil || !p.running() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.stop()
		}()
	}
	wg.Wait()
	return nil
}

// stop stops the process: SIGTERM, then SIGKILL after 5 s.
func (p *procNode) stop() {
	if p.running() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		t := time.NewTimer(5 * time.Second)
		defer t.Stop()
		select {
		case <-p.done:
		case <-t.C:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	p.client.Close()
}
