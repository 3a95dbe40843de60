package testnet

import (
	"bytes"
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

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/localapi"
)

// The NAT lab: two private networks, each behind a router namespace that
// masquerades with nftables, and one public network with a node that is
// the bootstrap and the relay:
//
//	a (192.168.1.2) ── ra (NAT, 5.0.0.1) ─┐
//	                                     inet (bridge 5.0.0.0/24) ── r (5.0.0.10: bootstrap, relay)
//	b (192.168.2.2) ── rb (NAT, 5.0.0.2) ─┘
//
// The cone variant masquerades keeping the source port where it can
// (endpoint-independent mapping), so hole punching can open a direct path;
// the symmetric variant picks a random port for every connection
// (fully-random), so the port a peer observed is useless to anyone else
// and the nodes stay relayed. Both routers drop unsolicited packets from
// outside, as home routers do.

// NAT types of the lab.
const (
	NATCone      = "cone"
	NATSymmetric = "symmetric"
)

// NATConfig configures RunNAT.
type NATConfig struct {
	// NAT is NATCone or NATSymmetric; empty means NATCone.
	NAT string
	// Runs is the number of times the scenario runs, each on a fresh
	// topology; zero means 1.
	Runs int
	// Messages is the number of messages each of A and B says; zero
	// means 10 (half before the connection settles, half after).
	Messages int
	// RelayDrop also kills the public node (the relay) once A and B talk,
	// has both say another half of their messages while it is gone, and
	// starts it again: every message must arrive once the relay is back.
	RelayDrop bool
	// RelayStall first freezes the relay (SIGSTOP: its connections stay
	// open and carry nothing) for RelayStallFor while A and B say another
	// half of their messages, then lets it go on (SIGCONT): every message
	// must arrive. Zero RelayStallFor means 10 s.
	RelayStall    bool
	RelayStallFor time.Duration
	// RelayTCP gives A and B the relay's TCP address (as bootstrap and
	// relay) instead of its QUIC one: A and B then reach the public node
	// over TCP alone, and must still become direct behind cone NATs.
	RelayTCP bool
	// Parley is the parley binary; empty means build it.
	Parley string
	// Dir is where node homes go; empty means a temporary folder.
	Dir string
}

// NATRun is the outcome of one run of the NAT scenario.
type NATRun struct {
	// UpToContactS is the time from A's and B's `up` to A holding B as
	// a contact (B found by its peer ID alone).
	UpToContactS float64 `json:"up_to_contact_s"`
	// UpToFirstMessageS is the time from `up` to B holding A's first
	// room message.
	UpToFirstMessageS float64 `json:"up_to_first_message_s"`
	// Direct reports whether A and B ended with a direct connection;
	// Conn and Why are what A's `parley peers` said about B.
	Direct bool   `json:"direct"`
	Conn   string `json:"conn"`
	Why    string `json:"why"`
	// SettleS is the time from `up` until the connection was direct, or
	// until the node gave up on hole punching.
	SettleS float64 `json:"settle_s"`
	// Sent and Delivered count messages; Delivered counts each message
	// once, when both nodes hold it. OrderIdentical reports whether both
	// logs hold the same events in the same order.
	Sent           int  `json:"sent"`
	Delivered      int  `json:"delivered"`
	OrderIdentical bool `json:"order_identical"`
	// Latency is from the say on one node to the event on the other, over
	// every message.
	Latency *Latency `json:"latency_ms,omitempty"`
	// RelayBackS is, with RelayDrop, the time from the relay's restart to
	// both nodes holding every message said while it was gone.
	RelayBackS float64 `json:"relay_back_s,omitempty"`
	// StallBackS is, with RelayStall, the time from the relay going on to
	// both nodes holding every message said while it was frozen.
	StallBackS float64 `json:"stall_back_s,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// NATResult is the outcome of RunNAT.
type NATResult struct {
	NAT  string   `json:"nat"`
	Runs []NATRun `json:"runs"`
	// DirectShare is the share of runs that ended direct.
	DirectShare float64  `json:"direct_share"`
	OK          bool     `json:"ok"`
	Failures    []string `json:"failures,omitempty"`
}

// CheckNAT reports whether this machine can build the lab: root, ip and
// nft. Its error wraps ErrEnvironment and says what is missing.
func CheckNAT() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: -nat needs root: it creates network namespaces, veth pairs, a bridge and nftables NAT rules (run it with sudo)", ErrEnvironment)
	}
	for _, tool := range []struct{ name, pkg string }{{"ip", "iproute2"}, {"nft", "nftables"}} {
		if _, err := exec.LookPath(tool.name); err != nil {
			return fmt.Errorf("%w: -nat needs the %s tool, which is missing (install it: apt-get install %s)", ErrEnvironment, tool.name, tool.pkg)
		}
	}
	return nil
}

// RunNAT runs the NAT scenario cfg.Runs times: A and B, each behind its
// NAT, start with only the public node as bootstrap and relay; A asks B
// to be a contact knowing only B's peer ID, B approves, A opens a room
// and invites B, both talk. A run fails when a message is lost or the two
// logs differ; on the cone NAT it also fails when the connection does not
// become direct, on the symmetric NAT when it does.
func RunNAT(ctx context.Context, cfg NATConfig, progress io.Writer) (NATResult, error) {
	if cfg.NAT == "" {
		cfg.NAT = NATCone
	}
	if cfg.Runs == 0 {
		cfg.Runs = 1
	}
	if cfg.Messages == 0 {
		cfg.Messages = 10
	}
	res := NATResult{NAT: cfg.NAT}
	switch {
	case cfg.NAT != NATCone && cfg.NAT != NATSymmetric:
		return res, fmt.Errorf("%w: -nat %q: choose cone or symmetric", ErrUsage, cfg.NAT)
	case cfg.Runs < 0 || cfg.Runs > 100:
		return res, fmt.Errorf("%w: -runs %d: from 1 to 100", ErrUsage, cfg.Runs)
	case cfg.Messages < 2 || cfg.Messages > 1000:
		return res, fmt.Errorf("%w: -messages %d: from 2 to 1000", ErrUsage, cfg.Messages)
	}
	if err := CheckNAT(); err != nil {
		return res, err
	}
	p := newProgress(progress)
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "pnat")
		if err != nil {
			return res, fmt.Errorf("%w: temporary folder: %v", ErrEnvironment, err)
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return res, fmt.Errorf("%w: %v", ErrEnvironment, err)
	}
	r := &runner{cfg: Config{Parley: cfg.Parley}, p: p, dir: dir}
	bin, err := r.parleyBinary(ctx)
	if err != nil {
		return res, err
	}
	for k := range cfg.Runs {
		p.printf("NAT lab (%s), run %d of %d", cfg.NAT, k+1, cfg.Runs)
		run, err := natRun(ctx, cfg, bin, filepath.Join(dir, fmt.Sprintf("run%d", k)), p)
		if err != nil {
			if errors.Is(err, ErrEnvironment) || ctx.Err() != nil {
				return res, err
			}
			run.Error = err.Error()
		}
		res.Runs = append(res.Runs, run)
		p.printf("%s", natSummary(run))
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
	direct := 0
	for k, run := range res.Runs {
		if run.Direct {
			direct++
		}
		var why []string
		switch {
		case run.Error != "":
			why = append(why, run.Error)
		case run.Delivered < run.Sent:
			why = append(why, fmt.Sprintf("%d of %d messages delivered", run.Delivered, run.Sent))
		case !run.OrderIdentical:
			why = append(why, "A's and B's logs differ")
		}
		if run.Error == "" {
			if cfg.NAT == NATCone && !run.Direct {
				why = append(why, "the connection stayed relayed behind cone NATs: "+run.Why)
			}
			if cfg.NAT == NATSymmetric && run.Direct {
				why = append(why, "the connection became direct behind symmetric NATs")
			}
		}
		for _, w := range why {
			res.Failures = append(res.Failures, fmt.Sprintf("run %d: %s", k+1, w))
		}
	}
	if len(res.Runs) > 0 {
		res.DirectShare = round3(float64(direct) / float64(len(res.Runs)))
	}
	res.OK = len(res.Failures) == 0 && len(res.Runs) == cfg.Runs
	return res, nil
}

func natSummary(r NATRun) string {
	if r.Error != "" {
		return "error: " + r.Error
	}
	conn := "relayed"
	if r.Direct {
		conn = "direct"
	}
	lat := ""
	if r.Latency != nil {
		lat = fmt.Sprintf(", say→delivered p50 %.0f ms max %.0f ms", r.Latency.P50, r.Latency.Max)
	}
	if r.RelayBackS > 0 {
		lat += fmt.Sprintf(", all in %.1f s after the relay came back", r.RelayBackS)
	}
	return fmt.Sprintf("contact %.1f s, first message %.1f s after up, %s at %.1f s, %d/%d delivered, order identical %v%s",
		r.UpToContactS, r.UpToFirstMessageS, conn, r.SettleS, r.Delivered, r.Sent, r.OrderIdentical, lat)
}

// natLab is the namespaces of one run.
type natLab struct {
	prefix  string
	created []string
}

func (l *natLab) ns(name string) string { return l.prefix + "-" + name }

var natSeq struct {
	sync.Mutex
	n int
}

// build creates the topology; on error the caller still calls teardown.
func (l *natLab) build(nat string) error {
	for _, n := range []string{"inet", "r", "ra", "rb", "a", "b"} {
		ns := l.ns(n)
		if err := ipRun("netns", "add", ns); err != nil {
			return fmt.Errorf("%w: %v", ErrEnvironment, err)
		}
		l.created = append(l.created, ns)
		if err := ipRun("-n", ns, "link", "set", "lo", "up"); err != nil {
			return fmt.Errorf("%w: %v", ErrEnvironment, err)
		}
	}
	link := func(ns1, if1, ns2, if2 string) [][]string {
		return [][]string{
			{"-n", l.ns(ns1), "link", "add", if1, "type", "veth", "peer", "name", if2, "netns", l.ns(ns2)},
			{"-n", l.ns(ns1), "link", "set", if1, "up"},
			{"-n", l.ns(ns2), "link", "set", if2, "up"},
		}
	}
	steps := [][]string{
		{"-n", l.ns("inet"), "link", "add", "br0", "type", "bridge"},
		{"-n", l.ns("inet"), "link", "set", "br0", "up"},
	}
	for _, p := range [][4]string{{"inet", "vr", "r", "eth0"}, {"inet", "va", "ra", "wan"}, {"inet", "vb", "rb", "wan"}, {"ra", "lan", "a", "eth0"}, {"rb", "lan", "b", "eth0"}} {
		steps = append(steps, link(p[0], p[1], p[2], p[3])...)
	}
	steps = append(steps,
		[]string{"-n", l.ns("inet"), "link", "set", "vr", "master", "br0"},
		[]string{"-n", l.ns("inet"), "link", "set", "va", "master", "br0"},
		[]string{"-n", l.ns("inet"), "link", "set", "vb", "master", "br0"},
		[]string{"-n", l.ns("r"), "addr", "add", "5.0.0.10/24", "dev", "eth0"},
		[]string{"-n", l.ns("ra"), "addr", "add", "5.0.0.1/24", "dev", "wan"},
		[]string{"-n", l.ns("rb"), "addr", "add", "5.0.0.2/24", "dev", "wan"},
		[]string{"-n", l.ns("ra"), "addr", "add", "192.168.1.1/24", "dev", "lan"},
		[]string{"-n", l.ns("a"), "addr", "add", "192.168.1.2/24", "dev", "eth0"},
		[]string{"-n", l.ns("a"), "route", "add", "default", "via", "192.168.1.1"},
		[]string{"-n", l.ns("rb"), "addr", "add", "192.168.2.1/24", "dev", "lan"},
		[]string{"-n", l.ns("b"), "addr", "add", "192.168.2.2/24", "dev", "eth0"},
		[]string{"-n", l.ns("b"), "route", "add", "default", "via", "192.168.2.1"},
	)
	for _, s := range steps {
		if err := ipRun(s...); err != nil {
			return fmt.Errorf("%w: %v", ErrEnvironment, err)
		}
	}
	masq := "masquerade"
	if nat == NATSymmetric {
		masq = "masquerade fully-random"
	}
	// Dropping unsolicited packets in the input hook also keeps conntrack
	// from recording them, so a peer's early hole-punching packet does
	// not take the port the router would map for the node's own.
	rules := `table ip nat {
	chain outgoing {
		type nat hook postrouting priority 100;
		oifname "wan" ` + masq + `
	}
}
table ip filter {
	chain forwarding {
		type filter hook forward priority 0; policy drop;
		ct state established,related accept
		iifname "lan" accept
	}
	chain incoming {
		type filter hook input priority 0; policy drop;
		ct state established,related accept
		iifname "lan" accept
		iifname "lo" accept
	}
}
`
	for _, router := range []string{"ra", "rb"} {
		ns := l.ns(router)
		if err := runStdin("", "ip", "netns", "exec", ns, "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"); err != nil {
			return fmt.Errorf("%w: %v", ErrEnvironment, err)
		}
		if err := runStdin(rules, "ip", "netns", "exec", ns, "nft", "-f", "-"); err != nil {
			return fmt.Errorf("%w: nftables in %s: %v", ErrEnvironment, ns, err)
		}
	}
	return nil
}

// teardown deletes the namespaces (and with them every veth, the bridge
// and the rules).
func (l *natLab) teardown() {
	for k := len(l.created) - 1; k >= 0; k-- {
		_ = ipRun("netns", "del", l.created[k])
	}
	l.created = nil
}

// runStdin runs a command with stdin and a deadline; stderr goes into the
// error.
func runStdin(stdin, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return errors.New(name + " " + strings.Join(args, " ") + ": " + msg)
	}
	return nil
}

// natNode starts a node in namespace ns with the given config lines.
func natNode(ctx context.Context, bin, ns, home, handle string, i int, listen []string, config string) (*procNode, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEnvironment, err)
	}
	conf := "agent_post_limit = none\nmdns = false\nport_map = false\n" + config
	if err := os.WriteFile(filepath.Join(home, "config"), []byte(conf), 0o600); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEnvironment, err)
	}
	argv := []string{"ip", "netns", "exec", ns, bin, "--home", home, "up", "--no-mdns", "--handle", handle, "--log-level", "info"}
	for _, l := range listen {
		argv = append(argv, "--listen", l)
	}
	return launch(ctx, i, home, argv)
}

func stopNodes(nodes ...*procNode) {
	var wg sync.WaitGroup
	for _, p := range nodes {
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.stop()
		}()
	}
	wg.Wait()
}

// natRun runs the scenario once on a fresh topology.
func natRun(ctx context.Context, cfg NATConfig, bin, dir string, p *progress) (run NATRun, err error) {
	natSeq.Lock()
	natSeq.n++
	lab := &natLab{prefix: fmt.Sprintf("pnat%d-%d", os.Getpid(), natSeq.n)}
	natSeq.Unlock()
	defer lab.teardown()
	if err := lab.build(cfg.NAT); err != nil {
		return run, err
	}
	var nodes []*procNode
	defer func() { stopNodes(nodes...) }()

	both := func(ip string) []string {
		return []string{"/ip4/" + ip + "/tcp/4190", "/ip4/" + ip + "/udp/4190/quic-v1"}
	}
	pr, err := natNode(ctx, bin, lab.ns("r"), filepath.Join(dir, "r"), "relay", 0, both("5.0.0.10"), "relay_service = open\nreachability = public\n")
	if err != nil {
		return run, err
	}
	nodes = append(nodes, pr)
	raddr := "/ip4/5.0.0.10/udp/4190/quic-v1/p2p/" + pr.peerID
	if cfg.RelayTCP {
		raddr = "/ip4/5.0.0.10/tcp/4190/p2p/" + pr.peerID
	}
	behind := fmt.Sprintf("bootstrap = %s\nrelay = %s\nreachability = private\n", raddr, raddr)
	t0 := time.Now()
	since := func() float64 { return round3(time.Since(t0).Seconds()) }
	var pa, pb *procNode
	var ea, eb error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		pa, ea = natNode(ctx, bin, lab.ns("a"), filepath.Join(dir, "a"), "alice", 1, both("0.0.0.0"), behind)
	}()
	go func() {
		defer wg.Done()
		pb, eb = natNode(ctx, bin, lab.ns("b"), filepath.Join(dir, "b"), "bob", 2, both("0.0.0.0"), behind)
	}()
	wg.Wait()
	nodes = append(nodes, pa, pb)
	if err := errors.Join(ea, eb); err != nil {
		return run, err
	}
	a, b := pa.client, pb.client
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w (homes in %s; keep them with -dir)", err, dir)
		}
	}()

	// A asks B by peer ID alone: the DHT on the public node finds B's
	// relay address.
	err = poll(ctx, 30*time.Second, func() bool {
		_, err := a.ContactRequest(ctx, pb.peerID, "NAT lab")
		return err == nil
	}, "A to reach B by its peer ID")
	if err != nil {
		return run, err
	}
	err = poll(ctx, 20*time.Second, func() bool {
		res, err := b.ContactApprove(ctx, pa.peerID, "")
		return err == nil && res.State == "active"
	}, "B to approve A")
	if err != nil {
		return run, err
	}
	err = poll(ctx, 20*time.Second, func() bool {
		cs, err := a.Contacts(ctx)
		return err == nil && slices.ContainsFunc(cs, func(c localapi.ContactEntry) bool { return c.PeerID == pb.peerID && c.State == "active" })
	}, "A to hold B as a contact")
	if err != nil {
		return run, err
	}
	run.UpToContactS = since()
	p.printf("A and B are contacts %.1f s after up", run.UpToContactS)

	cr, err := a.OpenRoom(ctx, string(agent), localapi.OpenRoomRequest{Name: "across"})
	if err != nil {
		return run, fmt.Errorf("A opens a room: %w", err)
	}
	room := cr.RoomID
	if _, err := a.Invite(ctx, string(agent), localapi.InviteRequest{Room: room, Member: pb.peerID}); err != nil {
		return run, fmt.Errorf("A invites B: %w", err)
	}
	err = poll(ctx, 30*time.Second, func() bool {
		in, err := b.Room(ctx, room)
		return err == nil && slices.Contains(in.Members, pb.peerID)
	}, "B to join the room")
	if err != nil {
		return run, err
	}
	// B joined as its user, who lets its agent in: an agent posts only in
	// rooms it was let into.
	if _, err := b.Invite(ctx, string(identity.HumanAgent), localapi.InviteRequest{Room: room, Member: string(agent)}); err != nil {
		return run, fmt.Errorf("B lets its agent into the room: %w", err)
	}

	// Each node tails the room; every message's arrival on the other node
	// is timed against its say.
	type arrival struct {
		at   time.Time
		node int
	}
	var mu sync.Mutex // protects seen, sentAt, run.Sent
	seen := map[string][]arrival{}
	sentAt := map[string]time.Time{}
	firstAtB := make(chan time.Time, 1)
	var tails []func()
	defer func() {
		for _, stop := range tails {
			stop()
		}
	}()
	for _, pn := range []*procNode{pa, pb} {
		tctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = pn.client.Tail(tctx, room, func(v localapi.Event) error {
				if v.Kind != "message" {
					return nil
				}
				mu.Lock()
				seen[v.Text] = append(seen[v.Text], arrival{time.Now(), pn.i})
				mu.Unlock()
				if pn == pb && strings.HasPrefix(v.Text, "a-") {
					select {
					case firstAtB <- time.Now():
					default:
					}
				}
				return nil
			})
		}()
		tails = append(tails, func() { cancel(); <-done })
	}

	half := cfg.Messages / 2
	say := func(from int, lo, hi int, prefix string) error {
		c, tag := a, "a"
		if from == 2 {
			c, tag = b, "b"
		}
		for k := lo; k < hi; k++ {
			text := fmt.Sprintf("%s%s-%03d", prefix, tag, k)
			mu.Lock()
			sentAt[text] = time.Now()
			mu.Unlock()
			err := poll(ctx, 30*time.Second, func() bool {
				_, err := c.Say(ctx, string(agent), localapi.SayRequest{Room: room, Text: text})
				return err == nil
			}, fmt.Sprintf("%s to say %s", strings.ToUpper(tag), text))
			if err != nil {
				return err
			}
			mu.Lock()
			run.Sent++
			mu.Unlock()
		}
		return nil
	}
	// The first half goes out at once, over whatever connects A and B.
	var e1, e2 error
	wg.Add(2)
	go func() { defer wg.Done(); e1 = say(1, 0, half, "") }()
	go func() { defer wg.Done(); e2 = say(2, 0, half, "") }()
	wg.Wait()
	if err := errors.Join(e1, e2); err != nil {
		return run, err
	}
	select {
	case at := <-firstAtB:
		run.UpToFirstMessageS = round3(at.Sub(t0).Seconds())
	case <-time.After(60 * time.Second):
		return run, errors.New("B did not get A's first message within 60 s")
	case <-ctx.Done():
		return run, ctx.Err()
	}
	p.printf("B holds A's first message %.1f s after up", run.UpToFirstMessageS)

	// Wait for the connection to settle: direct, or (behind symmetric
	// NATs) a failed hole punch. Behind cone NATs a failed punch is tried
	// again, so the lab waits for direct until the deadline, which is
	// wide for a loaded machine: the first punch comes once both nodes
	// know a public address of their own (about 10 s on a quiet one).
	settle := 60 * time.Second
	_ = poll(ctx, settle, func() bool {
		ps, err := a.Peers(ctx)
		if err != nil {
			return false
		}
		for _, x := range ps {
			if x.PeerID == pb.peerID {
				run.Conn, run.Why = x.Conn, x.Why
				return x.Conn == "direct" || (cfg.NAT == NATSymmetric && strings.Contains(x.Why, "failed"))
			}
		}
		return false
	}, "")
	run.Direct = run.Conn == "direct"
	run.SettleS = since()
	p.printf("A reaches B %s at %.1f s: %s", run.Conn, run.SettleS, run.Why)

	// The second half goes out over the settled connection.
	wg.Add(2)
	go func() { defer wg.Done(); e1 = say(1, half, cfg.Messages, "") }()
	go func() { defer wg.Done(); e2 = say(2, half, cfg.Messages, "") }()
	wg.Wait()
	if err := errors.Join(e1, e2); err != nil {
		return run, err
	}
	// Delivery is counted on the logs (the tails time it): a message is
	// delivered when both logs hold it.
	count := func() int {
		held := map[string]int{}
		for _, c := range []*localapi.Client{a, b} {
			vs, err := c.Log(ctx, room, 10000, "")
			if err != nil {
				return 0
			}
			for _, v := range vs {
				if v.Kind == "message" {
					held[v.Text]++
				}
			}
		}
		n := 0
		for _, k := range held {
			if k >= 2 {
				n++
			}
		}
		return n
	}
	_ = poll(ctx, 60*time.Second, func() bool { return count() >= run.Sent }, "") // both says are done: run.Sent is settled
	if cfg.RelayStall && count() >= run.Sent {
		// The relay stalls: it holds every circuit open and forwards
		// nothing. Both talk meanwhile; then it goes on.
		stall := cfg.RelayStallFor
		if stall <= 0 {
			stall = 10 * time.Second
		}
		if err := pr.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			return run, fmt.Errorf("stall the relay: %w", err)
		}
		p.printf("the relay stalls at %.1f s for %v; A and B say %d messages each", since(), stall, half)
		stalled := time.Now()
		wg.Add(2)
		go func() { defer wg.Done(); e1 = say(1, 0, half, "stall-") }()
		go func() { defer wg.Done(); e2 = say(2, 0, half, "stall-") }()
		wg.Wait()
		if rest := stall - time.Since(stalled); rest > 0 {
			select { // the stall lasts its whole length (a property of the run, not a wait for an event)
			case <-time.After(rest):
			case <-ctx.Done():
			}
		}
		if err := pr.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			return run, fmt.Errorf("let the relay go on: %w", err)
		}
		if err := errors.Join(e1, e2); err != nil {
			return run, err
		}
		back := time.Now()
		if err := poll(ctx, 90*time.Second, func() bool { return count() >= run.Sent }, "every message said while the relay stalled"); err != nil {
			p.printf("%v", err)
		} else {
			run.StallBackS = round3(time.Since(back).Seconds())
			p.printf("every message arrived %.1f s after the relay went on", run.StallBackS)
		}
	}
	if cfg.RelayDrop && count() >= run.Sent {
		// The relay goes (every circuit with it); both talk meanwhile;
		// it comes back at the same address with the same key.
		_ = pr.cmd.Process.Kill()
		<-pr.done
		pr.client.Close()
		p.printf("the relay is gone at %.1f s; A and B say %d messages each", since(), half)
		wg.Add(2)
		go func() { defer wg.Done(); e1 = say(1, 0, half, "drop-") }()
		go func() { defer wg.Done(); e2 = say(2, 0, half, "drop-") }()
		wg.Wait()
		if err := errors.Join(e1, e2); err != nil {
			return run, err
		}
		pr, err = natNode(ctx, bin, lab.ns("r"), filepath.Join(dir, "r"), "relay", 0, both("5.0.0.10"), "relay_service = open\nreachability = public\n")
		if err != nil {
			return run, fmt.Errorf("the relay's restart: %w", err)
		}
		nodes = append(nodes, pr)
		back := time.Now()
		if err := poll(ctx, 90*time.Second, func() bool { return count() >= run.Sent }, "every message said while the relay was gone"); err != nil {
			p.printf("%v", err)
		} else {
			run.RelayBackS = round3(time.Since(back).Seconds())
			p.printf("every message arrived %.1f s after the relay came back", run.RelayBackS)
		}
	}
	run.Delivered = count()
	mu.Lock()
	var lat []time.Duration
	for text, t := range sentAt {
		if strings.HasPrefix(text, "drop-") || strings.HasPrefix(text, "stall-") {
			continue // said with no path between A and B
		}
		for _, ar := range seen[text] {
			// The other node's arrival: A's messages on B, B's on A.
			if strings.HasPrefix(text, "a-") == (ar.node == 2) {
				lat = append(lat, ar.at.Sub(t))
			}
		}
	}
	mu.Unlock()
	run.Latency = summarize(lat)
	la, err := a.Log(ctx, room, 10000, "")
	if err != nil {
		return run, fmt.Errorf("A's log: %w", err)
	}
	lb, err := b.Log(ctx, room, 10000, "")
	if err != nil {
		return run, fmt.Errorf("B's log: %w", err)
	}
	run.OrderIdentical = slices.EqualFunc(la, lb, func(x, y localapi.Event) bool { return x.ID == y.ID })
	return run, nil
}
