package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	osuser "os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/parley-mesh/parley/internal/config"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
)

type upFlags struct {
	listen      []string
	bootstrap   []string
	noMDNS      bool
	handle      string
	logLevel    string
	recover     bool
	newIdentity bool
	minFree     string
	detach      bool
	loopback    bool
	wakeLimit   time.Duration
	handWait    time.Duration
}

func upCmd(g *globals) *cobra.Command {
	f := &upFlags{}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a node in the foreground until interrupted",
		Long: `Run this user's Parley node in the foreground.

On first use the home gets a new identity key (identity.key, mode 0600) and a
documented config file. The node prints one ready line with its peer ID, pid and
addresses; SIGINT or SIGTERM (or ` + "`parley down`" + `) stop it.

A node never starts silently on an empty database or a new identity. If its
database is missing, damaged or another identity's, or its identity.key is
lost, it stops with one line saying what is wrong; then choose:
  --recover       keep the identity, set the old database aside (nothing is
                  deleted), start a new one with the room list and contacts
                  of HOME/recovery.json, and refetch rooms from their members
  --new-identity  the key is lost: become a new node; the old database is
                  set aside (contacts and rooms do not carry over)

Below --min-free-disk of free space the node refuses writes (saying so) and
keeps serving reads; writes resume once space is freed.

--handle sets your display name and saves it in HOME/config once the node has
started (an up that is refused changes nothing; on first use the handle is
your OS user name). With -d the node runs in the background: its
output goes to HOME/node.log and up returns after the ready line. --loopback
listens on 127.0.0.1 only (on its last start's ports when they are free, else on
ports the system chooses) without mDNS, as the
node that ` + "`parley mcp`" + ` starts when none runs.`,
		Example: `  parley up -d --handle alice
  parley up --listen /ip4/0.0.0.0/tcp/4190 --bootstrap /ip4/192.0.2.10/tcp/4190/p2p/12D3KooW...`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runUp(cmd, g, f) },
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.listen, "listen", nil, "multiaddr to listen on, repeatable (replaces the config's listen lines)")
	fl.StringArrayVar(&f.bootstrap, "bootstrap", nil, "peer multiaddr with /p2p/PEER_ID to dial at start, repeatable or comma-separated as the ready line's addrs= (adds to the config's)")
	fl.BoolVar(&f.noMDNS, "no-mdns", false, "do not look for peers on the local network")
	fl.StringVar(&f.handle, "handle", "", "your display name (saved in the config; default: the config's handle)")
	fl.BoolVarP(&f.detach, "detach", "d", false, "run in the background (output in HOME/node.log); return after the ready line")
	fl.BoolVar(&f.loopback, "loopback", false, "listen on 127.0.0.1 only (the ports of its last start when free, else system-chosen), without mDNS")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level on stderr: debug, info, warn, error")
	fl.BoolVar(&f.recover, "recover", false, "start anew when the database is missing, damaged or another identity's: keep it aside, restore rooms and contacts from recovery.json, refetch rooms from peers")
	fl.BoolVar(&f.newIdentity, "new-identity", false, "identity.key is lost: make a new identity and keep the old database aside")
	fl.StringVar(&f.minFree, "min-free-disk", "64MiB", "free disk space the database keeps; below it writes are refused and reads go on (0 turns it off)")
	durationFlag(fl, &f.wakeLimit, "wake-limit", 60*time.Second, "how long a wake-up route has to get an owed ask or invitation read before the next route tries (then the human is told)")
	durationFlag(fl, &f.handWait, "hand-wait", 30*time.Second, "how long items handed to an agent's client (a tool result, a hook's output) wait for the client's confirmation that it got them before they are offered to the agent again")
	return cmd
}

func runUp(cmd *cobra.Command, g *globals, f *upFlags) error {
	start := time.Now()
	home, err := g.resolveHome()
	if err != nil {
		return err
	}
	// The flags are checked before the home is made: an up that is refused
	// leaves no home behind (nor a config, nor a log).
	if cmd.Flags().Changed("handle") && f.handle == "" {
		// Before, --handle "" was taken as no flag: the old handle stayed
		// and nothing said so.
		return fmt.Errorf("--handle \"\": a handle cannot be empty; leave the flag out to keep the one in %s", filepath.Join(home, "config"))
	}
	if f.handle != "" {
		if err := config.CheckHandle(f.handle); err != nil {
			return fmt.Errorf("--handle %q: %v", f.handle, err)
		}
	}
	if f.wakeLimit <= 0 {
		return fmt.Errorf("--wake-limit %s: must be above 0 (60s when left out)", f.wakeLimit)
	}
	if f.handWait <= 0 {
		return fmt.Errorf("--hand-wait %s: must be above 0 (30s when left out)", f.handWait)
	}
	if f.loopback && len(f.listen) > 0 {
		return fmt.Errorf("--loopback chooses the listen addresses: drop --listen, or --loopback")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: use debug, info, warn or error", f.logLevel)
	}
	minFree, err := parseMinFree(f.minFree)
	if err != nil {
		return err
	}
	if f.recover && f.newIdentity {
		return fmt.Errorf("--recover keeps this node's identity and --new-identity replaces it: choose one")
	}
	for _, s := range f.listen {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return fmt.Errorf("listen address %q is not a multiaddr: %v (example: /ip4/0.0.0.0/tcp/4190)", s, err)
		}
		if err := node.CheckListenAddr(a); err != nil {
			return fmt.Errorf("--listen: %v", err)
		}
	}
	// The ready line's addrs= (several addresses of one node, separated by
	// commas) is taken as it is: before, it was refused as one multiaddr
	// with a parse error that did not say why. No multiaddr of a peer holds
	// a comma.
	f.bootstrap = splitAddrList(f.bootstrap)
	for _, s := range f.bootstrap {
		if _, err := parsePeerAddr(s); err != nil {
			return fmt.Errorf("bootstrap address %q: %v", s, err)
		}
	}
	if err := localapi.CheckSocketPath(nodeSocket(home)); err != nil {
		return err
	}
	if err := node.MakeHome(home); err != nil {
		return err
	}
	file, err := config.LoadOrCreate(home, defaultHandle())
	if err != nil {
		return err
	}
	// A new handle is saved once the node holds the home (below, or in the
	// background node): an up that is refused changes nothing.
	newHandle := f.handle != "" && (f.handle != file.Handle || file.HandleAsWritten != "")
	if !newHandle {
		for _, w := range file.Warnings {
			fmt.Fprintf(cmd.ErrOrStderr(), "parley: %s: %s\n", filepath.Join(home, config.FileName), w)
		}
	}
	if newHandle {
		file.Handle = f.handle
	}
	if held, _, err := node.HomeLockHolder(home); err == nil && !held && !f.loopback && node.LastRanLoopback(home) {
		// The home's node last ran on this machine only (`up --loopback`,
		// or the node parley mcp and parley run start): say, before it
		// starts, that this start is not so. Not when a node runs there
		// already: this start is then refused (the home's lock), and
		// starts nothing, nowhere.
		listen, where := file.Listen, "the config's listen addresses ("+strings.Join(file.Listen, ", ")+")"
		if len(f.listen) > 0 {
			listen, where = f.listen, strings.Join(f.listen, ", ")
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "parley: this home's node last ran with --loopback (this machine only); this start without it listens on %s%s. "+
			"To keep it on this machine only, stop it (`parley --home %s down`) and start it with `parley --home %s up -d --loopback`\n",
			where, openExtras(file, f, listen), home, home)
	}
	if f.detach {
		line, warnings, err := startBackground(cmd.Context(), home, childArgs(cmd)...)
		if err != nil {
			return err
		}
		for _, w := range warnings {
			fmt.Fprintf(cmd.ErrOrStderr(), "parley: the node warned: %s\n", w)
		}
		if g.json {
			if err := parseReady(line, home).print(cmd.OutOrStdout()); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(cmd.OutOrStdout(), line)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "parley: the node runs in the background (log %s); stop it with `parley --home %s down`\n",
			filepath.Join(home, node.LogFileName), home)
		return nil
	}
	cfg := node.Config{
		Home:        home,
		Handle:      file.Handle,
		MDNS:        file.MDNS && !f.noMDNS && !f.loopback,
		Logger:      slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level})),
		Recover:     f.recover,
		NewIdentity: f.newIdentity,
		MinFreeDisk: minFree,
		WakeLimit:   f.wakeLimit,
		HandWait:    f.handWait,
		UIPort:      file.UIPort,

		AgentPostLimit: file.AgentPostLimit,
	}
	listen := file.Listen
	if len(f.listen) > 0 {
		listen = f.listen
	}
	if f.loopback {
		listen = loopbackListen(home)
	}
	for _, s := range listen {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return fmt.Errorf("listen address %q is not a multiaddr: %v (example: /ip4/0.0.0.0/tcp/4190)", s, err)
		}
		cfg.ListenAddrs = append(cfg.ListenAddrs, a)
	}
	for _, s := range append(file.Bootstrap, f.bootstrap...) {
		ai, err := parsePeerAddr(s)
		if err != nil {
			return fmt.Errorf("bootstrap address %q: %v", s, err)
		}
		// Addresses of one peer are one entry: the node dials each peer
		// once, through any of them.
		if i := slices.IndexFunc(cfg.Bootstrap, func(b peer.AddrInfo) bool { return b.ID == ai.ID }); i >= 0 {
			cfg.Bootstrap[i].Addrs = append(cfg.Bootstrap[i].Addrs, ai.Addrs...)
			continue
		}
		cfg.Bootstrap = append(cfg.Bootstrap, ai)
	}
	for _, s := range file.Relays {
		ai, err := parsePeerAddr(s)
		if err != nil {
			return fmt.Errorf("relay address %q: %v", s, err)
		}
		cfg.Relays = append(cfg.Relays, ai)
	}
	cfg.RelayService = file.RelayService == "on" || file.RelayService == "open"
	cfg.RelayOpen = file.RelayService == "open"
	// A node on loopback only has no router to ask.
	cfg.NATPortMap = file.PortMap && !f.loopback && slices.ContainsFunc(cfg.ListenAddrs, func(a ma.Multiaddr) bool { return !manet.IsIPLoopback(a) })
	if file.Reachability != "auto" {
		cfg.Reachability = file.Reachability
	}

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := startNode(ctx, cfg)
	if err != nil && f.loopback && !slices.Equal(listen, anyLoopback) && strings.Contains(err.Error(), "address already in use") {
		// Its last ports were taken between the look and the listen: any
		// free ones do.
		slog.Info("the loopback node's last ports are taken; the system chooses others", "err", err)
		cfg.ListenAddrs = nil
		for _, s := range anyLoopback {
			cfg.ListenAddrs = append(cfg.ListenAddrs, ma.StringCast(s))
		}
		n, err = startNode(ctx, cfg)
	}
	if err != nil {
		return err
	}
	if newHandle {
		if err := config.SetHandle(home, f.handle); err != nil {
			n.Close()
			return err
		}
	}
	addrs := n.Addrs()
	if f.loopback {
		if err := saveLoopbackPorts(home, addrs); err != nil {
			slog.Warn("the ports of this loopback node are not kept for its next start", "err", err)
		}
	} else if err := os.Remove(filepath.Join(home, loopbackPorts)); err != nil && !os.IsNotExist(err) {
		// The file tells the hints (node.UpCommand) that the node last ran
		// with --loopback; this one did not.
		slog.Warn("the record of the home's last --loopback start is not removed", "err", err)
	}
	as := make([]string, len(addrs))
	for i, a := range addrs {
		as[i] = a.String()
	}
	// A dashboard that could not be served (its ui_port taken) is said on
	// the ready line, which `up -d` prints too: the node runs without it.
	noUI := ""
	if why := n.UIError(); why != "" {
		noUI = fmt.Sprintf(" dashboard_error=%q", "not served: "+why)
	}
	// The pid tells this node's ready line from another's in the shared
	// node log (startBackground). With --json the line is one JSON object
	// of the same fields; a background node is never given --json
	// (childArgs), so its parent reads the line.
	if g.json {
		r := readyInfo{PeerID: n.ID().String(), PID: os.Getpid(), Handle: n.Handle(), Addrs: as, Home: home, StartupMS: time.Since(start).Milliseconds()}
		if why := n.UIError(); why != "" {
			r.DashboardError = "not served: " + why
		}
		if err := r.print(cmd.OutOrStdout()); err != nil {
			n.Close()
			return err
		}
	} else {
		fmt.Fprintf(cmd.OutOrStdout(), "parley ready peer_id=%s pid=%d handle=%q addrs=%s home=%s startup_ms=%d%s\n",
			n.ID(), os.Getpid(), n.Handle(), strings.Join(as, ","), home, time.Since(start).Milliseconds(), noUI)
	}

	select {
	case <-ctx.Done():
	case <-n.Stopped():
	}
	stop()
	// Shut down within 5 s, whatever a stuck part does.
	done := make(chan error, 1)
	go func() { done <- n.Close() }()
	select {
	case err := <-done:
		if err != nil {
			slog.Warn("close", "err", err)
		}
		fmt.Fprintln(cmd.ErrOrStderr(), "parley: node stopped")
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("node did not stop within 5 s; exiting anyway")
	}
}

// openExtras is what a start without --loopback does besides its listen
// addresses, as the warning of a home that last ran with --loopback says
// it: mDNS and a port mapping, when the config (and flags) turn them on.
func openExtras(file config.File, f *upFlags, listen []string) string {
	var x []string
	if file.MDNS && !f.noMDNS {
		x = append(x, "announces itself over mDNS on the local network")
	}
	if file.PortMap && slices.ContainsFunc(listen, func(s string) bool {
		a, err := ma.NewMultiaddr(s)
		return err == nil && !manet.IsIPLoopback(a)
	}) {
		x = append(x, "asks the router for a port mapping")
	}
	if len(x) == 0 {
		return ""
	}
	return ", " + strings.Join(x, " and ")
}

// parseMinFree reads --min-free-disk: a size such as 64MiB, 500MB or
// 1048576; 0 turns the floor off.
func parseMinFree(s string) (int64, error) {
	n, err := humanize.ParseBytes(s)
	if err != nil || n > 1<<50 {
		return 0, fmt.Errorf("--min-free-disk %q: give a size such as 64MiB, 500MB or 0 (off)", s)
	}
	if n == 0 {
		return -1, nil
	}
	return int64(n), nil
}

func parsePeerAddr(s string) (peer.AddrInfo, error) {
	m, err := ma.NewMultiaddr(s)
	if err != nil {
		return peer.AddrInfo{}, fmt.Errorf("not a multiaddr: %v (example: /ip4/192.0.2.1/tcp/4190/p2p/12D3KooW...)", err)
	}
	ai, err := peer.AddrInfoFromP2pAddr(m)
	if err != nil {
		return peer.AddrInfo{}, fmt.Errorf("it needs a /p2p/PEER_ID part: %v", err)
	}
	return *ai, nil
}

// splitAddrList splits each of ss at its commas, leaving out blanks.
func splitAddrList(ss []string) []string {
	var out []string
	for _, s := range ss {
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// startNode makes and starts a node of cfg.
func startNode(ctx context.Context, cfg node.Config) (*node.Node, error) {
	n, err := node.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := n.Start(ctx); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// anyLoopback are loopback addresses on ports the system chooses.
var anyLoopback = []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"}

// loopbackPorts is the file in the home that keeps the ports a --loopback
// node listened on.
const loopbackPorts = node.LoopbackPortsFileName

// loopbackListen returns the addresses of a node that only this machine
// can reach: the ports it had last time when they are free, else ports the
// system chooses. Peers remember a node's addresses; with new ports at
// each start, two loopback nodes that both restarted would not find each
// other again.
func loopbackListen(home string) []string {
	tcp, udp := 0, 0
	if b, err := os.ReadFile(filepath.Join(home, loopbackPorts)); err == nil {
		for line := range strings.Lines(string(b)) {
			proto, port, _ := strings.Cut(strings.TrimSpace(line), " ")
			n, err := strconv.Atoi(port)
			if err != nil || n <= 0 || n > 65535 {
				continue
			}
			switch proto {
			case "tcp":
				if ln, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", n)); err == nil {
					ln.Close()
					tcp = n
				}
			case "udp":
				if pc, err := net.ListenPacket("udp4", fmt.Sprintf("127.0.0.1:%d", n)); err == nil {
					pc.Close()
					udp = n
				}
			}
		}
	}
	if tcp == 0 && udp == 0 {
		return anyLoopback
	}
	return []string{fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", tcp), fmt.Sprintf("/ip4/127.0.0.1/udp/%d/quic-v1", udp)}
}

// saveLoopbackPorts keeps the TCP and UDP ports of addrs in the home, for
// loopbackListen.
func saveLoopbackPorts(home string, addrs []ma.Multiaddr) error {
	var b strings.Builder
	for _, a := range addrs {
		if !manet.IsIPLoopback(a) {
			continue
		}
		if p, err := a.ValueForProtocol(ma.P_TCP); err == nil {
			fmt.Fprintf(&b, "tcp %s\n", p)
		} else if p, err := a.ValueForProtocol(ma.P_UDP); err == nil {
			fmt.Fprintf(&b, "udp %s\n", p)
		}
	}
	path := filepath.Join(home, loopbackPorts)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// childArgs are the flags of a background `up`: every flag given to this
// one, so that a new flag of up cannot be left out, but for those the child
// must not get: -d itself, and the flags every command shares (the child
// gets --home from startBackground; --json would turn its ready line, which
// startBackground reads in the log, into JSON).
func childArgs(cmd *cobra.Command) []string {
	var a []string
	inherited := cmd.InheritedFlags()
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if fl.Name == "detach" || inherited.Lookup(fl.Name) != nil {
			return
		}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				a = append(a, "--"+fl.Name+"="+v)
			}
			return
		}
		a = append(a, "--"+fl.Name+"="+fl.Value.String())
	})
	return a
}

// readyInfo is the ready line of a node, as `parley --json up -d` prints
// it: the same fields.
type readyInfo struct {
	PeerID         string   `json:"peer_id"`
	PID            int      `json:"pid"`
	Handle         string   `json:"handle"`
	Addrs          []string `json:"addrs"`
	Home           string   `json:"home"`
	StartupMS      int64    `json:"startup_ms"`
	DashboardError string   `json:"dashboard_error,omitempty"`
}

// print writes r as the ready line of --json: one JSON object on one
// line, which a script reads as it reads the text line.
func (r readyInfo) print(w io.Writer) error { return json.NewEncoder(w).Encode(r) }

// parseReady reads a ready line (runUp prints it) of the node of home.
// The home is the one given, not read from the line, where a home with a
// space in it is not quoted.
func parseReady(line, home string) readyInfo {
	r := readyInfo{Home: home, Addrs: []string{}}
	rest := strings.TrimPrefix(line, "parley ready ")
	for rest != "" {
		rest = strings.TrimLeft(rest, " ")
		key, after, ok := strings.Cut(rest, "=")
		if !ok || strings.Contains(key, " ") {
			// Not a key=value: a word of an unquoted value with a space.
			_, rest, _ = strings.Cut(rest, " ")
			continue
		}
		var val string
		if q, err := strconv.QuotedPrefix(after); err == nil {
			val, _ = strconv.Unquote(q)
			rest = after[len(q):]
		} else {
			val, rest, _ = strings.Cut(after, " ")
		}
		switch key {
		case "peer_id":
			r.PeerID = val
		case "pid":
			r.PID, _ = strconv.Atoi(val)
		case "handle":
			r.Handle = val
		case "addrs":
			if val != "" {
				r.Addrs = strings.Split(val, ",")
			}
		case "startup_ms":
			r.StartupMS, _ = strconv.ParseInt(val, 10, 64)
		case "dashboard_error":
			r.DashboardError = val
		}
	}
	return r
}

// defaultHandle is the handle of a new home: the OS user name.
func defaultHandle() string {
	if u, err := osuser.Current(); err == nil && config.CheckHandle(u.Username) == nil {
		return u.Username
	}
	if u := os.Getenv("USER"); config.CheckHandle(u) == nil {
		return u
	}
	return "anonymous"
}
