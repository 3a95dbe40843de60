package node

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/rooms"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a node. It is a plain struct; the zero value of each
// field is documented and sensible, except Home, which is required.
type Config struct {
	// Home is the node's folder. It is created (mode 0700) if missing.
	Home string
	// Handle is the user's display name. Empty means "anonymous".
	Handle string
	// ListenAddrs are the addresses to listen on. Nil means
	// DefaultListenAddrs. Every address must be listened on, or Start fails.
	ListenAddrs []ma.Multiaddr
	// Bootstrap are peers dialled at start and whenever the node has no
	// connections; their addresses are kept for dials by peer ID alone.
	// Nil means none.
	Bootstrap []peer.AddrInfo
	// MDNS turns on LAN discovery. False means off.
	MDNS bool
	// Logger receives the node's logs. Nil discards them.
	Logger *slog.Logger
	// Registry receives the node's metrics. Nil means a new registry owned
	// by the node (served at /metrics on the local API either way).
	Registry *prometheus.Registry
	// Gater, if set, may refuse connections (tests use it for partitions).
	Gater connmgr.ConnectionGater
	// NoLocalAPI turns off the unix-socket API. False means it is served.
	NoLocalAPI bool
	// UIPort is the dashboard's port on 127.0.0.1 (and [::1]); zero means any free
	// port (`parley ui` says which). The dashboard needs the local API.
	UIPort int
	// NoUI turns the dashboard off.
	NoUI bool
	// RoomPolicy decides whom rooms deal with. Nil means the node's contact
	// service (consent): invites need a live contact certificate, and
	// revoked, expired or denied nodes are cut off (see internal/contacts).
	RoomPolicy rooms.Policy
	// SyncInterval is the rooms' anti-entropy period. Zero means 30 s.
	SyncInterval time.Duration
	// RoomTrace, when set, is told when room events pass the stages of
	// their way through the node (rooms.TraceFunc); for measurements.
	RoomTrace rooms.TraceFunc
	// RoomClock dates this node's room events; nil: time.Now. (Tests set a
	// clock that is wrong or steps back.)
	RoomClock func() time.Time
	// InboxClock is the inbox's clock (asks' lifetimes, hand-outs, the age
	// of a node invite); nil: time.Now. (Tests set one that runs ahead.)
	InboxClock func() time.Time
	// ContactClock is the contact book's clock (cool-downs, expiry, pending
	// requests' lifetimes); nil: time.Now. (Tests set one that runs ahead.)
	ContactClock func() time.Time
	// GossipTracer, when set, is given GossipSub's events (its raw
	// tracer, beside the node's own); for measurements.
	GossipTracer pubsub.RawTracer
	// OwnEventsWait bounds how long after the start a post waits for a
	// member to say what it holds of this node's own events (see
	// rooms.Config.OwnEventsWait). Zero means 10 s; negative: no wait.
	OwnEventsWait time.Duration
	// AgentTTL is how long a local agent session lives without a heartbeat
	// when it registers without a TTL of its own. Zero means 60 s.
	AgentTTL time.Duration
	// PresenceHeartbeat is how often the node re-sends its agents' presence
	// to its contacts; a contact heard from for none of three heartbeats
	// (or unreachable once its connection drops) shows as offline. Changes
	// go out at once, at most every 2 s (or a quarter heartbeat). Zero
	// means 5 minutes.
	PresenceHeartbeat time.Duration
	// CardTTL is the lifetime of the agent cards the node puts in the DHT;
	// they are re-published at half of it. Zero means 1 hour; otherwise 2
	// minutes to 24 hours.
	CardTTL time.Duration
	// AskTTL is how long an ask is owed by the agents it asks (and waited
	// for by its asker) unless answered. Zero means 1 hour.
	AskTTL time.Duration
	// HandWait is how long a two-step hand-out of an agent's items (a
	// local API call with the Parley-Hand header: the MCP server's, the
	// hooks') waits for its confirmation before the items are offered to
	// the agent again (internal/inbox). Zero means 30 s.
	HandWait time.Duration
	// WakeLimit is how long a wake-up route has to get an owed item read
	// before the next route tries, and, with none left, the human is told
	// (internal/wake). Zero means 60 s.
	WakeLimit time.Duration
	// AgentPostLimit is how many messages, asks and board claims each
	// local agent may post in a minute (all at once if it likes); over it a post is refused
	// with an error that says so. Zero means 120; negative, no limit.
	AgentPostLimit int
	// ConnLow and ConnHigh are the connection manager's watermarks. Zero
	// means 64 and 192.
	ConnLow, ConnHigh int
	// Recover starts a node whose database is missing, damaged or made for
	// another identity on a new database: the old one is kept aside
	// (data.broken-… or data.old-…), the room list and contacts come back
	// from the recovery file, and rooms are refetched from their members.
	// False means such a node refuses to start and says so. It changes
	// nothing for a sound database.
	Recover bool
	// NewIdentity makes a new key for a home whose identity.key is lost
	// while its database remains; the old database is kept aside
	// (data.old-…). False means such a home is refused. It is an error
	// while the key is present.
	NewIdentity bool
	// Relays are relays the node may reserve a slot on when it is not
	// reachable directly (behind a NAT); connected contacts and room
	// members that offer relaying are tried after them. They are dialled
	// at start and whenever the node has no connections, as Bootstrap is,
	// and their addresses are kept for dials by peer ID alone. Nil: only
	// contacts and room members.
	Relays []peer.AddrInfo
	// RelayInterval is how often the node looks at its relays
	// (reservations to learn again, configured relays to ask why they
	// refused) and the least time between autorelay's requests for relay
	// candidates. Zero means 5 s.
	RelayInterval time.Duration
	// RelayService offers relaying to the node's contacts, the peers it
	// asked and the member nodes of its rooms, with limits (2 minutes and
	// 1 MiB a relayed connection, 128 reservations, 8 from one IP address,
	// one a peer). It runs from the start, whatever AutoNAT finds (a
	// public node among NATed peers never learns from AutoNAT that it is
	// public). False means off.
	RelayService bool
	// RelayOpen opens the relay service to every peer. False means
	// contacts and room members only.
	RelayOpen bool
	// NATPortMap asks the router for a port mapping (UPnP, NAT-PMP). False
	// means off; `parley up` turns it on unless the config says otherwise.
	NATPortMap bool
	// Reachability overrides AutoNAT: "public" or "private". Empty means
	// AutoNAT finds out (the DHT serves others unless the node is found to
	// be behind a NAT).
	Reachability string
	// NewHost, if set, builds the node's libp2p host from the node's key
	// instead of the default host (TCP and QUIC, the connection and
	// resource managers, Gater, relays, AutoNAT, hole punching, port
	// mapping): a simulated network such as go-libp2p's mocknet, for
	// measurements. ListenAddrs are still listened on. Nil means the
	// default host.
	NewHost func(key crypto.PrivKey) (host.Host, error)
	// MinFreeDisk is the free space, in bytes, the database keeps on its
	// disk: below it writes fail with a clear error and reads go on. Zero
	// means store.DefaultMinFree (64 MiB); negative turns the floor off.
	MinFreeDisk int64
	// StoreMemTableSize is the database's memtable size (store.Config).
	// Zero means store.DefaultMemTableSize. Keep it for a home: a
	// memtable left unflushed by a crash is replayed into one of the new
	// size. The testnet gives its nodes different sizes, so that nodes
	// under the same load do not all rotate their memtables at once.
	StoreMemTableSize int64
}

// DefaultPort is Parley's TCP and UDP port.
const DefaultPort = 4190

// Values of Config.Reachability.
const (
	ReachabilityPublic  = "public"
	ReachabilityPrivate = "private"
)

// DefaultListenAddrs are used when Config.ListenAddrs is nil: TCP and QUIC
// on every IPv4 and IPv6 interface. On a machine without IPv6 the IPv6
// wildcard addresses are skipped.
func DefaultListenAddrs() []ma.Multiaddr {
	return []ma.Multiaddr{
		ma.StringCast(fmt.Sprintf("/ip4/0.0.0.0/tcp/%d", DefaultPort)),
		ma.StringCast(fmt.Sprintf("/ip4/0.0.0.0/udp/%d/quic-v1", DefaultPort)),
		ma.StringCast(fmt.Sprintf("/ip6/::/tcp/%d", DefaultPort)),
		ma.StringCast(fmt.Sprintf("/ip6/::/udp/%d/quic-v1", DefaultPort)),
	}
}

// Paths inside a home.
const (
	KeyFileName    = "identity.key"
	DataDirName    = "data"
	SocketFileName = "parley.sock"
	LockFileName   = "node.lock"
	LogFileName    = "node.log"
	// UIOpenFileName is the page `parley ui --open` hands the browser.
	UIOpenFileName = "ui-open.html"
	// LoopbackPortsFileName keeps the ports a --loopback node listened on.
	LoopbackPortsFileName = "loopback.ports"
)

// SocketPath returns the local API socket of a home.
func SocketPath(home string) string { return filepath.Join(home, SocketFileName) }

// LastRanLoopback reports whether the home's node last started with
// --loopback (127.0.0.1 only, no mDNS, no port mapping): its
// LoopbackPortsFileName is there. A start without --loopback removes it.
func LastRanLoopback(home string) bool {
	_, err := os.Stat(filepath.Join(home, LoopbackPortsFileName))
	return err == nil
}

// UpCommand is the command that starts the home's node as it last ran, for
// the hints that tell a person to start it: `parley --home HOME up -d
// --loopback` for a home whose node last ran with --loopback (a plain `up`
// would listen on every interface the config names, announce itself over
// mDNS and ask the router for a port mapping), else `parley --home HOME
// up`, or `up -d` when detach is set.
func UpCommand(home string, detach bool) string {
	switch {
	case LastRanLoopback(home):
		return fmt.Sprintf("parley --home %s up -d --loopback", home)
	case detach:
		return fmt.Sprintf("parley --home %s up -d", home)
	}
	return fmt.Sprintf("parley --home %s up", home)
}

func (c Config) withDefaults() (Config, error) {
	if c.Home == "" {
		return c, fmt.Errorf("%w: Home is empty", ErrBadConfig)
	}
	abs, err := filepath.Abs(c.Home)
	if err != nil {
		return c, fmt.Errorf("%w: home %q: %v", ErrBadConfig, c.Home, err)
	}
	c.Home = abs
	if c.Handle == "" {
		c.Handle = "anonymous"
	}
	if c.ListenAddrs == nil {
		c.ListenAddrs = DefaultListenAddrs()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.ConnLow == 0 {
		c.ConnLow = 64
	}
	if c.ConnHigh == 0 {
		c.ConnHigh = 192
	}
	if c.ConnHigh < c.ConnLow {
		return c, fmt.Errorf("%w: ConnHigh %d < ConnLow %d", ErrBadConfig, c.ConnHigh, c.ConnLow)
	}
	return c, nil
}
