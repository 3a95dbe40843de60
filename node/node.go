package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	record "github.com/libp2p/go-libp2p-record"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/discovery/mdns"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	quic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parley-mesh/parley/discovery"
	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/contacts"
	"github.com/parley-mesh/parley/internal/dialerr"
	"github.com/parley-mesh/parley/internal/inbox"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/moderation"
	"github.com/parley-mesh/parley/internal/names"
	"github.com/parley-mesh/parley/internal/org"
	"github.com/parley-mesh/parley/internal/reconnect"
	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/internal/ui"
	"github.com/parley-mesh/parley/internal/usage"
	"github.com/parley-mesh/parley/internal/version"
	"github.com/parley-mesh/parley/internal/wake"
	"github.com/parley-mesh/parley/rooms"
	"github.com/parley-mesh/parley/rooms/board"
)

// Version is the Parley version reported by the node.
const Version = version.Version

// DHTPrefix is the protocol prefix of Parley's Kad-DHT (/parley/kad/1.0.0).
const DHTPrefix = "/parley"

// mdnsService is the mDNS service name Parley nodes announce on the LAN.
const mdnsService = "_parley._udp"

// mdnsDials bounds the dials of peers found over mDNS under way at once.
const mdnsDials = 32

// Node is one Parley node.
type Node struct {
	cfg  Config
	log  *slog.Logger
	priv crypto.PrivKey
	id   peer.ID
	lock *homeLock
	reg  *prometheus.Registry
	// audit is the home's audit log (see Audit); it takes its own lock.
	audit *audit.Log
	// auditWarn is the dashboard's last warning of an audit log that does
	// not read: each open page reads the log every second, and it is
	// warned only when the failure changes.
	auditWarn warnOnce

	// Set by Start, read-only afterwards.
	started time.Time
	ctx     context.Context
	cancel  context.CancelFunc
	host    host.Host
	dht     *dht.IpfsDHT
	ps      *pubsub.PubSub
	db      *store.DB
	rooms   *rooms.Manager
	mdns    mdns.Service
	api     *localapi.Server
	wg      sync.WaitGroup

	contacts  *contacts.Service   // set by Start, read-only afterwards
	agents    *agents.Service     // set by Start, read-only afterwards
	inbox     *inbox.Inbox        // set by Start, read-only afterwards
	mod       *moderation.Service // set by Start, read-only afterwards
	names     *names.Service      // set by Start, read-only afterwards
	reconnect *reconnect.Service  // set by Start, read-only afterwards
	reach     *reach              // set by Start, read-only afterwards
	allow     *allowKeeper        // the resource manager's allowlist (nil: none); set by Start, read-only afterwards
	relaySvc  *relayv2.Relay      // the relay service (nil: off); set by Start, read-only afterwards
	// listening is closed once Start has opened (or failed to open) the
	// listen sockets: dials that must leave from the listening port wait.
	listening     chan struct{}
	listeningDone func()
	org           *org.Service                  // set by Start, read-only afterwards
	usage         *usage.Meter                  // set by Start, read-only afterwards
	board         *board.Service                // set by Start, read-only afterwards
	wake          *wake.Service                 // set by Start, read-only afterwards
	ui            *ui.Server                    // set by Start, read-only afterwards (nil: not served)
	uiAddr        string                        // the dashboard's host:port (set with ui)
	uiErr         string                        // why the dashboard is not served
	boardKick     atomic.Pointer[board.Service] // n.board, for the contacts' goroutines that start before it

	recoverySum [32]byte // of the recovery file's entries last written (see saveRecovery)

	stop      chan struct{} // closed when the local API asks to shut down
	stopOnce  sync.Once
	startOnce sync.Once
	startErr  error
	closeOnce sync.Once
	closeErr  error
}

// New checks cfg, creates the home if needed, loads (or creates) the key
// and locks the home. It starts no goroutines.
func New(cfg Config) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := CheckHome(cfg.Home); err != nil {
		return nil, err
	}
	if err := MakeHome(cfg.Home); err != nil {
		return nil, err
	}
	lock, err := lockHome(cfg.Home)
	if err != nil {
		return nil, err
	}
	if err := tightenHome(cfg.Home, cfg.Logger); err != nil {
		lock.unlock()
		return nil, err
	}
	if err := prepareIdentity(cfg); err != nil {
		lock.unlock()
		return nil, err
	}
	priv, err := identity.LoadOrCreate(filepath.Join(cfg.Home, KeyFileName))
	if err != nil {
		lock.unlock()
		return nil, err
	}
	id, err := identity.PeerID(priv)
	if err != nil {
		lock.unlock()
		return nil, err
	}
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	al, err := audit.New(cfg.Home, priv)
	if err != nil {
		lock.unlock()
		return nil, err
	}
	return &Node{
		cfg:   cfg,
		log:   cfg.Logger.With("node", id.String()),
		priv:  priv,
		id:    id,
		lock:  lock,
		reg:   reg,
		audit: al,
		stop:  make(chan struct{}),
	}, nil
}

// ID is the node's peer ID.
func (n *Node) ID() peer.ID { return n.id }

// Home is the node's home folder.
func (n *Node) Home() string { return n.cfg.Home }

// Handle is the user's display name.
func (n *Node) Handle() string { return n.cfg.Handle }

// Host is the libp2p host (nil before Start).
func (n *Node) Host() host.Host { return n.host }

// DHT is the node's Kad-DHT (nil before Start).
func (n *Node) DHT() *dht.IpfsDHT { return n.dht }

// PubSub is the node's GossipSub router (nil before Start).
func (n *Node) PubSub() *pubsub.PubSub { return n.ps }

// Rooms is the node's rooms service (nil before Start).
func (n *Node) Rooms() *rooms.Manager { return n.rooms }

// Inbox is the node's agent edge: agents' calls and pending items (nil
// before Start).
func (n *Node) Inbox() *inbox.Inbox { return n.inbox }

// Usage is what the node's agents did, per agent and per room (nil before
// Start).
func (n *Node) Usage() *usage.Meter { return n.usage }

// Registry is the node's metrics registry.
func (n *Node) Registry() *prometheus.Registry { return n.reg }

// Start brings the node up: store, host, listeners, DHT, GossipSub, mDNS and
// the local API. It returns once every listen address is bound; bootstrap
// dials go on in the background. Calling it again returns the first result.
func (n *Node) Start(ctx context.Context) error {
	n.startOnce.Do(func() {
		n.startErr = n.start(ctx)
		if n.startErr != nil {
			n.Close()
		}
	})
	return n.startErr
}

func (n *Node) start(ctx context.Context) error {
	n.started = time.Now()
	n.ctx, n.cancel = context.WithCancel(context.Background())

	if err := n.openStore(); err != nil {
		return err
	}

	ch := make(chan struct{})
	n.listening, n.listeningDone = ch, sync.OnceFunc(func() { close(ch) })
	defer n.listeningDone()
	if err := n.startHost(); err != nil {
		return err
	}
	for _, a := range n.cfg.ListenAddrs {
		var err error
		// A host of its own (mocknet) listens on no port of this
		// machine's: only the default host's ports are checked.
		if n.cfg.NewHost == nil {
			err = tcpPortFree(a)
		}
		if err == nil {
			err = n.host.Network().Listen(a)
		}
		if err != nil {
			if noIPv6(a, err) {
				n.log.Warn("no IPv6 on this machine: not listening on it", "addr", a.String(), "err", rootCause(err))
				continue
			}
			// The hint is for a port taken alone: another error
			// (an address not on this machine, say) is not another
			// program's doing.
			if errors.Is(err, syscall.EADDRINUSE) {
				return fmt.Errorf("%w on %s: %v (is another program using the port? choose another with --listen, e.g. /ip4/0.0.0.0/tcp/0)",
					ErrListen, a, rootCause(err))
			}
			return fmt.Errorf("%w on %s: %v (choose another address with --listen)", ErrListen, a, rootCause(err))
		}
	}

	n.listeningDone()
	n.keepConfiguredAddrs()

	kad, err := dht.New(n.host, append([]dht.Option{
		// A server unless AutoNAT finds the node behind a NAT.
		dht.Mode(dht.ModeAutoServer),
		dht.ProtocolPrefix(DHTPrefix),
		dht.Validator(record.NamespacedValidator{"pk": record.PublicKeyValidator{}, discovery.Namespace: discovery.Validator{}}),
		dht.BootstrapPeersFunc(func() []peer.AddrInfo { return n.cfg.Bootstrap }),
	}, n.dhtOptions()...)...)
	if err != nil {
		return fmt.Errorf("node: start dht: %w", err)
	}
	n.dht = kad

	if err := n.newContacts(); err != nil {
		return err
	}
	if err := n.newOrg(); err != nil {
		return err
	}
	if err := n.newModeration(); err != nil {
		return err
	}
	if err := n.newNames(); err != nil {
		return err
	}
	if err := n.newAgents(); err != nil {
		return err
	}
	policy := n.cfg.RoomPolicy
	if policy == nil {
		policy = n.contacts
	}
	rm, err := rooms.New(rooms.Config{
		Host:          n.host,
		Store:         n.db,
		Key:           n.priv,
		Logger:        n.log,
		Registry:      n.reg,
		Policy:        policy,
		SyncInterval:  n.cfg.SyncInterval,
		OwnEventsWait: n.cfg.OwnEventsWait,
		Trace:         n.cfg.RoomTrace,
		Now:           n.cfg.RoomClock,
	})
	if err != nil {
		return err
	}
	n.rooms = rm

	subs := newSubFilter(rm.HasTopic, func(p peer.ID) bool {
		return n.host.Network().Connectedness(p) != network.NotConnected
	}, n.log)
	register(n.reg, subs.dropped)
	n.host.Network().Notify(subs.notifiee())

	// Room events are signed by their authors, so GossipSub's own signing
	// is off; a message's ID is the hash of its bytes, as an event's is.
	ps, err := pubsub.NewGossipSub(n.ctx, n.host,
		pubsub.WithMessageSignaturePolicy(pubsub.StrictNoSign),
		pubsub.WithNoAuthor(),
		pubsub.WithMessageIdFn(messageID),
		pubsub.WithPeerFilter(rm.PeerFilter),
		// GossipSub only: a floodsub peer gets every message of a topic
		// it subscribes to, and the peer filter vets only GossipSub's
		// mesh, fanout and gossip, so a stranger speaking floodsub would
		// read every room it named.
		pubsub.WithGossipSubProtocols(GossipSubProtocols(), pubsub.GossipSubDefaultFeatures),
		// Own events go to mesh peers only, which the peer filter vets:
		// never flooded to every subscriber of a room's topic.
		pubsub.WithFloodPublish(false),
		// At most MaxForeignTopics topics this node is not in are kept
		// for a peer: GossipSub keeps every topic a peer announces.
		pubsub.WithSubscriptionFilter(subs),
		pubsub.WithRawTracer(rm.Tracer()),
		pubsub.WithValidateQueueSize(4096),
		pubsub.WithPeerOutboundQueueSize(4096),
		pubsub.WithGossipSubParams(GossipSubParams()),
		gossipTracer(n.cfg.GossipTracer),
	)
	if err != nil {
		return fmt.Errorf("node: start gossipsub: %w", err)
	}
	n.ps = ps
	if err := rm.Start(n.ctx, ps); err != nil {
		return err
	}
	n.startRoomAudit()
	n.allow = newAllowKeeper(n.host, n.wantedPeers)
	if err := n.contacts.Start(n.ctx); err != nil {
		return err
	}
	n.org.Start()
	n.startAgents()
	n.startNames()
	n.startRecovery()
	if err := n.startReconnect(); err != nil {
		return err
	}
	n.startAllowlist()
	n.usage = usage.New(usage.Config{Registry: n.reg})
	ib, err := inbox.New(inbox.Config{Rooms: n.rooms, Store: n.db, Agents: agentsAPI{n}, AskTTL: n.cfg.AskTTL, HandWait: n.cfg.HandWait, Logger: n.log, Now: n.cfg.InboxClock, Audit: n.Audit, Usage: n.usage,
		Moderation: modEdge{n.mod}, Names: n.names, CutOff: refused(policy),
		Notices: n.boardNotices})
	if err != nil {
		return err
	}
	n.inbox = ib
	if err := n.newBoard(); err != nil {
		return err
	}
	if err := n.startWake(); err != nil {
		return err
	}

	n.registerMetrics()

	if n.cfg.MDNS {
		n.mdns = mdns.NewMdnsService(n.host, mdnsService, newMDNSNotifee(n))
		if err := n.mdns.Start(); err != nil {
			return fmt.Errorf("node: start mdns: %w (turn it off with --no-mdns)", err)
		}
	}

	if !n.cfg.NoLocalAPI {
		ln, err := listenSocket(n.cfg.Home)
		if err != nil {
			return err
		}
		n.api = localapi.NewServer(apiBackend{n}, n.log)
		n.api.HandleRooms(n.inbox)
		n.api.HandleEdge(n.inbox)
		n.api.HandleContacts(n.contactsAPI())
		n.api.HandleOrg(orgAPI{n})
		n.api.HandleInvites(invitesAPI{n})
		n.api.HandleAgents(agentsAPI{n})
		n.api.GuardAgents(agentsAPI{n}.guard)
		n.api.HandleModeration(modAPI{n})
		n.api.HandleNames(namesAPI{n.names})
		n.api.HandleBoard(boardAPI{n})
		n.api.HandleWake(n.wake)
		n.api.HandleUI(n.uiInfo)
		n.api.HandleSpent(n.inbox.Spent)
		n.api.HandleUsage(n.usageView)
		n.api.HandleBackup(n.WriteBackup)
		if !n.cfg.NoUI {
			n.startUI()
		}
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			if err := n.api.Serve(ln); err != nil {
				n.log.Error("local api stopped", "err", err)
			}
		}()
	}

	n.watchRelayConns()
	n.reach.started()
	// The relay service starts once the node knows whom it deals with:
	// until then it would refuse its contacts (who then wait out a
	// back-off of 30 s).
	if err := n.startRelayService(); err != nil {
		return err
	}
	n.wg.Add(3)
	go func() {
		defer n.wg.Done()
		n.maintain()
	}()
	go func() {
		defer n.wg.Done()
		n.watchRelays()
	}()
	go func() {
		defer n.wg.Done()
		n.retryPunches()
	}()
	n.log.Info("node started", "addrs", fmt.Sprint(n.Addrs()))
	return nil
}

func (n *Node) startHost() error {
	n.reach = newReach(n.reg)
	if n.cfg.NewHost != nil {
		h, err := n.cfg.NewHost(n.priv)
		if err != nil {
			return fmt.Errorf("node: start libp2p host: %w", err)
		}
		if h.ID() != n.id {
			h.Close()
			return fmt.Errorf("node: start libp2p host: its peer ID %s is not the node's %s", h.ID(), n.id)
		}
		n.host = h
		return n.watchReachability()
	}
	cm, err := connmgr.NewConnManager(n.cfg.ConnLow, n.cfg.ConnHigh, connmgr.WithGracePeriod(time.Minute))
	if err != nil {
		return fmt.Errorf("node: connection manager: %w", err)
	}
	limiter := rcmgr.NewFixedLimiter(rcmgr.DefaultLimits.AutoScale())
	rm, err := rcmgr.NewResourceManager(limiter, rcmgr.WithMetricsDisabled())
	if err != nil {
		return fmt.Errorf("node: resource manager: %w", err)
	}
	opts := []libp2p.Option{
		libp2p.Identity(n.priv),
		libp2p.NoListenAddrs,
		// TCP dials leave from the listening port (SO_REUSEPORT,
		// libp2p's default): a peer records the address it observes
		// for the node only on a connection from a listening port, and
		// hole punching needs one. Without it a node that reached the
		// others over TCP alone (a TCP bootstrap or relay address) knew
		// no public address and never punched. tcpPortFree refuses a
		// port another node holds, which SO_REUSEPORT would share.
		libp2p.Transport(tcp.NewTCPTransport),
		// QUIC dials from its listening socket (libp2p's default: the
		// socket is shared inside the process, no SO_REUSEPORT), so a NAT
		// maps the node's one QUIC port, peers observe that mapping, and
		// hole punching can use it.
		libp2p.Transport(quic.NewTransport),
		libp2p.DefaultSecurity, // Noise and TLS
		libp2p.DefaultMuxers,   // yamux
		libp2p.ConnectionManager(cm),
		libp2p.ResourceManager(rm),
		libp2p.DisableMetrics(),
		libp2p.UserAgent("parley/" + Version),
	}
	if n.cfg.Gater != nil {
		opts = append(opts, libp2p.ConnectionGater(n.cfg.Gater))
	}
	ro, err := n.reachOptions()
	if err != nil {
		rm.Close()
		return err
	}
	opts = append(opts, ro...)
	h, err := libp2p.New(opts...)
	if err != nil {
		rm.Close()
		return fmt.Errorf("node: start libp2p host: %w", err)
	}
	n.host = h
	return n.watchReachability()
}

// configuredPeers are the bootstrap peers and the configured relays, each
// once: the peers the config gives with their addresses.
func (n *Node) configuredPeers() []peer.AddrInfo {
	return mergePeers(append(append([]peer.AddrInfo(nil), n.cfg.Bootstrap...), n.cfg.Relays...), n.id)
}

// relayList is the configured relays, each once (a relay named on two
// relay = lines, by its TCP and its QUIC address, is one relay with both),
// in the config's order, the node itself left out (a team's shared config
// used on the relay's own machine names it).
func (n *Node) relayList() []peer.AddrInfo {
	return mergePeers(n.cfg.Relays, n.id)
}

// configuredRelay reports whether p is one of the configured relays.
func (n *Node) configuredRelay(p peer.ID) bool {
	return p != n.id && slices.ContainsFunc(n.cfg.Relays, func(ai peer.AddrInfo) bool { return ai.ID == p })
}

// mergePeers is ais with each peer once, at its first place, with the
// addresses of all its entries, and without self.
func mergePeers(ais []peer.AddrInfo, self peer.ID) []peer.AddrInfo {
	var out []peer.AddrInfo
	for _, ai := range ais {
		if ai.ID == self {
			continue
		}
		if i := slices.IndexFunc(out, func(o peer.AddrInfo) bool { return o.ID == ai.ID }); i >= 0 {
			for _, a := range ai.Addrs {
				if !slices.ContainsFunc(out[i].Addrs, a.Equal) {
					out[i].Addrs = append(out[i].Addrs, a)
				}
			}
			continue
		}
		out = append(out, peer.AddrInfo{ID: ai.ID, Addrs: append([]ma.Multiaddr(nil), ai.Addrs...)})
	}
	return out
}

// keepConfiguredAddrs puts the configured peers' addresses in the
// peerstore for good, so that a dial by peer ID alone (a contact request
// to the relay's ID) finds them, not only a DHT lookup, which a node with
// no peer yet cannot make.
func (n *Node) keepConfiguredAddrs() {
	for _, ai := range n.configuredPeers() {
		n.host.Peerstore().AddAddrs(ai.ID, ai.Addrs, peerstore.PermanentAddrTTL)
	}
}

// maintain dials the bootstrap peers and the configured relays at start
// and whenever the node has no connections, then refreshes the DHT. A
// relay is dialled as a bootstrap peer is: a node whose config names only
// a relay has no other peer to learn from, with AutoNAT, that it is behind
// a NAT, and so would never ask the relay.
func (n *Node) maintain() {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		if len(n.host.Network().Peers()) == 0 && len(n.configuredPeers()) > 0 {
			n.dialBootstrap()
		}
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (n *Node) dialBootstrap() {
	var wg sync.WaitGroup
	for _, ai := range n.configuredPeers() {
		wg.Add(1)
		go func(ai peer.AddrInfo) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
			defer cancel()
			if err := n.host.Connect(ctx, ai); err != nil {
				n.log.Warn("dial of a bootstrap peer or configured relay failed", "peer", ai.ID.String(), "err", err)
			}
		}(ai)
	}
	wg.Wait()
	if n.ctx.Err() == nil {
		select {
		case <-n.dht.RefreshRoutingTable():
		case <-n.ctx.Done():
		}
	}
}

// Addrs returns the node's dialable addresses, each ending in /p2p/PEER_ID.
func (n *Node) Addrs() []ma.Multiaddr {
	if n.host == nil {
		return nil
	}
	addrs, err := peer.AddrInfoToP2pAddrs(&peer.AddrInfo{ID: n.id, Addrs: n.host.Addrs()})
	if err != nil {
		return nil
	}
	return addrs
}

// Connect dials a peer.
func (n *Node) Connect(ctx context.Context, ai peer.AddrInfo) error {
	if n.host == nil {
		return ErrClosed
	}
	if ai.ID == n.id {
		return fmt.Errorf("node: connect: that is this node's own address")
	}
	sw, _ := n.host.Network().(*swarm.Swarm) // not on a mocknet
	var err error
	for range connectTries {
		// This dial was asked for: an address that another dial of the
		// peer (a DHT query's, a redial's) failed a moment ago is in
		// the swarm's dial backoff, and a dial now would fail it with
		// "dial backoff", not why it fails (a relay's refusal of the
		// circuit: TestRelayRefusedDialSaysWhy failed so, 1 run in 300).
		if sw != nil {
			sw.Backoff().Clear(ai.ID)
		}
		err = n.host.Connect(ctx, ai)
		if err == nil || ctx.Err() != nil {
			break
		}
		// Dial again when another dial failed an address in between
		// (backoff), or when the addresses given were put in the
		// peerstore for a short while and libp2p's identify, told late
		// that an earlier connection to that peer closed, expired them
		// before the dial read them.
		if !errors.Is(err, swarm.ErrDialBackoff) && !(errors.Is(err, swarm.ErrNoAddresses) && len(ai.Addrs) > 0) {
			break
		}
	}
	if err != nil {
		return dialerr.Errors{err}
	}
	return nil
}

// connectTries bounds Connect's dials: each one after the first needs
// another dial of the peer to fail an address, or identify to expire the
// addresses given, within the moment between two.
const connectTries = 3

// Run starts the node if it is not started and blocks until ctx ends or the
// local API asks for a shutdown; then it closes the node.
func (n *Node) Run(ctx context.Context) error {
	if err := n.Start(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-n.stop:
	case <-n.ctx.Done():
	}
	return n.Close()
}

// Stopped is closed when the local API asks the node to shut down.
func (n *Node) Stopped() <-chan struct{} { return n.stop }

func (n *Node) requestStop() { n.stopOnce.Do(func() { close(n.stop) }) }

// Close stops the node and releases the home. It is idempotent.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		var errs []error
		if n.reconnect != nil {
			// Where the peers it deals with are, for the next start (a
			// contact made a moment ago is not noted yet).
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := n.reconnect.Save(ctx); err != nil {
				n.log.Warn("peer addresses not saved", "err", err)
			}
			cancel()
		}
		if n.ui != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			errs = append(errs, n.ui.Shutdown(ctx))
			cancel()
		}
		if n.api != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			errs = append(errs, n.api.Shutdown(ctx))
			cancel()
		}
		if n.cancel != nil {
			n.cancel()
		}
		if n.mdns != nil {
			errs = append(errs, n.mdns.Close())
		}
		if n.agents != nil {
			errs = append(errs, n.agents.Close())
		}
		if n.org != nil {
			n.org.Close()
		}
		if n.contacts != nil {
			errs = append(errs, n.contacts.Close())
		}
		if n.rooms != nil {
			errs = append(errs, n.rooms.Close())
		}
		if n.dht != nil {
			errs = append(errs, n.dht.Close())
		}
		if n.relaySvc != nil {
			errs = append(errs, n.relaySvc.Close())
		}
		if n.host != nil {
			errs = append(errs, n.host.Close())
		}
		n.wg.Wait()
		if n.db != nil && n.rooms != nil {
			n.saveRecovery()
		}
		if n.db != nil {
			errs = append(errs, n.db.Close())
		}
		if n.api != nil {
			_ = os.Remove(SocketPath(n.cfg.Home))
		}
		n.lock.unlock()
		n.closeErr = errors.Join(errs...)
		n.log.Info("node stopped")
	})
	return n.closeErr
}

type mdnsNotifee struct {
	n    *Node
	busy chan struct{} // a slot per dial under way
}

func newMDNSNotifee(n *Node) mdnsNotifee {
	return mdnsNotifee{n: n, busy: make(chan struct{}, mdnsDials)}
}

// HandlePeerFound dials a peer found on the LAN, at most mdnsDials at
// once: a host flooding answers of fresh peer IDs would otherwise start a
// dial of 10 s each, taking the swarm's dial slots (the node's dials of
// its contacts wait behind them), each in a goroutine libp2p's mDNS
// starts per answer. Past that an answer is dropped (waiting would pile
// up those goroutines): the peer is found again when mDNS next hears it.
func (m mdnsNotifee) HandlePeerFound(ai peer.AddrInfo) {
	if ai.ID == m.n.id || m.n.host.Network().Connectedness(ai.ID) == network.Connected {
		return
	}
	select {
	case m.busy <- struct{}{}:
	default:
		return
	}
	go func() {
		defer func() { <-m.busy }()
		ctx, cancel := context.WithTimeout(m.n.ctx, 10*time.Second)
		defer cancel()
		if err := m.n.host.Connect(ctx, ai); err != nil {
			m.n.log.Debug("mdns dial failed", "remote", ai.ID.String(), "err", err)
		}
	}()
}

// noIPv6 reports whether listening on a failed because the machine has
// no IPv6 (only IPv6 wildcard addresses are skipped for that).
func noIPv6(a ma.Multiaddr, err error) bool {
	ip, e := a.ValueForProtocol(ma.P_IP6)
	if e != nil || (ip != "::" && ip != "::0") {
		return false
	}
	return errors.Is(err, syscall.EAFNOSUPPORT) || errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EPROTONOSUPPORT)
}

// CheckListenAddr refuses a listen address no transport of the node serves:
// the node listens on TCP (/ip4/A/tcp/N, /ip6/A/tcp/N) and QUIC
// (/ip4/A/udp/N/quic-v1, /ip6/…), nothing else. up checks it before it
// writes the home.
func CheckListenAddr(a ma.Multiaddr) error {
	var codes []int
	for _, p := range a.Protocols() {
		codes = append(codes, p.Code)
	}
	ip := len(codes) > 0 && (codes[0] == ma.P_IP4 || codes[0] == ma.P_IP6)
	switch {
	case ip && len(codes) == 2 && codes[1] == ma.P_TCP:
		return nil
	case ip && len(codes) == 3 && codes[1] == ma.P_UDP && codes[2] == ma.P_QUIC_V1:
		return nil
	}
	return fmt.Errorf("no transport of the node listens on %s: it serves TCP (/ip4/0.0.0.0/tcp/4190) and QUIC (/ip4/0.0.0.0/udp/4190/quic-v1), on /ip4 or /ip6", a)
}

// tcpPortFree checks that a TCP listen address's port is free, with a
// plain bind (no SO_REUSEPORT), closed at once: the TCP listener takes the
// port with SO_REUSEPORT, which lets a second socket of the same user share
// a port the first holds (the kernel then splits incoming connections
// between the two nodes); a plain bind fails on such a port. Port 0 and
// other transports pass.
func tcpPortFree(a ma.Multiaddr) error {
	port, err := a.ValueForProtocol(ma.P_TCP)
	if err != nil || port == "0" {
		return nil
	}
	l, err := manet.Listen(a)
	if err != nil {
		return err
	}
	return l.Close()
}

func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			break
		}
		err = u
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Err
	}
	return err
}

// gossipTracer adds t as a raw tracer of GossipSub, if set.
func gossipTracer(t pubsub.RawTracer) pubsub.Option {
	return func(ps *pubsub.PubSub) error {
		if t == nil {
			return nil
		}
		return pubsub.WithRawTracer(t)(ps)
	}
}

// GossipSubProtocols are the pubsub protocols a node speaks: GossipSub's
// versions, without the floodsub fallback GossipSub offers by default.
func GossipSubProtocols() []protocol.ID {
	return []protocol.ID{pubsub.GossipSubID_v13, pubsub.GossipSubID_v12, pubsub.GossipSubID_v11, pubsub.GossipSubID_v10}
}

// GossipSubParams are a node's GossipSub parameters: GossipSub's defaults
// with a mesh of 4 peers a topic (3 to 8) instead of 6 (5 to 12). Every
// mesh link carries a copy of each event that the receiver takes in,
// hashes and drops as a duplicate, and a room needs less of that
// redundancy than a bare topic does: what gossip misses, anti-entropy
// fetches. At 12 nodes on 2 cores (cmd-testnet -baseline) the smaller mesh
// costs 12 % less CPU a delivery and halves p99; with both cores busy
// with other work, delivery p50 went from 49–52 ms to 15–22 ms. A message
// takes one hop more in a room past a few dozen members.
func GossipSubParams() pubsub.GossipSubParams {
	p := pubsub.DefaultGossipSubParams()
	p.D, p.Dlo, p.Dhi = 4, 3, 8
	p.Dout = 1 // below Dlo and D/2
	return p
}
