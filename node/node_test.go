package node_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	ma "github.com/multiformats/go-multiaddr"
	"go.uber.org/goleak"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/config"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/lookalike"
	"github.com/parley-mesh/parley/internal/termtext"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

func TestTwoNodesConnectThroughBootstrap(t *testing.T) {
	nt := nodetest.Start(t, 2)
	a, b := nt.Node(0), nt.Node(1)
	nt.WaitFor(10*time.Second, func() bool {
		return a.Host().Network().Connectedness(b.ID()) == network.Connected
	}, "node 1 to connect to its bootstrap node 0")

	// Both list each other through the local API, as `parley peers` does.
	for _, pair := range [][2]*node.Node{{a, b}, {b, a}} {
		c := localapi.NewClient(node.SocketPath(pair[0].Home()))
		defer c.Close()
		// (Each side lists the other once its own end of the connection
		// is set up, which may come a moment after the other's.)
		var peers []localapi.Peer
		var err error
		if !nodetest.Poll(10*time.Second, func() bool {
			peers, err = c.Peers(context.Background())
			return err == nil && len(peers) == 1 && peers[0].PeerID == pair[1].ID().String()
		}) {
			t.Fatalf("%s does not list only %s: it lists %+v, %v", pair[0].ID(), pair[1].ID(), peers, err)
		}
		info, err := c.ID(context.Background())
		if err != nil || info.PeerID != pair[0].ID().String() || len(info.Addrs) == 0 {
			t.Fatalf("id = %+v, %v", info, err)
		}
	}
}

func TestRestartKeepsPeerID(t *testing.T) {
	nt := nodetest.Start(t, 2)
	before := nt.ID(1)
	nt.Crash(1)
	n := nt.Restart(1)
	if n.ID() != before {
		t.Fatalf("peer id changed across restart: %s then %s", before, n.ID())
	}
	nt.WaitFor(10*time.Second, func() bool {
		return n.Host().Network().Connectedness(nt.ID(0)) == network.Connected
	}, "restarted node to reconnect")
}

func TestSecondNodeOnOneHomeRefused(t *testing.T) {
	nt := nodetest.Start(t, 1)
	_, err := node.New(node.Config{Home: nt.Home(0)})
	if !errors.Is(err, node.ErrHomeLocked) {
		t.Fatalf("second node on one home: err = %v, want ErrHomeLocked", err)
	}
	if !strings.Contains(err.Error(), "parley --home") {
		t.Fatalf("error does not say what to do: %v", err)
	}
	// The running node is unharmed.
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	if _, err := c.ID(context.Background()); err != nil {
		t.Fatalf("running node broken by the refused second start: %v", err)
	}
}

func TestLooseKeyPermissionsRefused(t *testing.T) {
	home := nodetest.TempHome(t)
	n, err := node.New(node.Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	key := filepath.Join(home, node.KeyFileName)
	if err := os.Chmod(key, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := node.New(node.Config{Home: home}); !errors.Is(err, identity.ErrKeyPermissions) {
		t.Fatalf("err = %v, want ErrKeyPermissions", err)
	}
	// The lock was released: with the mode fixed, the node opens.
	if err := os.Chmod(key, 0o600); err != nil {
		t.Fatal(err)
	}
	n, err = node.New(node.Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
}

func TestBusyPortRefused(t *testing.T) {
	nt := nodetest.Start(t, 1)
	var busy ma.Multiaddr
	for _, a := range nt.Node(0).Host().Network().ListenAddresses() {
		if _, err := a.ValueForProtocol(ma.P_TCP); err == nil {
			busy = a
		}
	}
	n, err := node.New(node.Config{Home: nodetest.TempHome(t), ListenAddrs: []ma.Multiaddr{busy}, NoLocalAPI: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	err = n.Start(context.Background())
	if !errors.Is(err, node.ErrListen) || !strings.Contains(err.Error(), "--listen") {
		t.Fatalf("busy port: err = %v", err)
	}
}

func TestTenNodesFindEachOtherThroughDHT(t *testing.T) {
	const n = 10
	nt := nodetest.Start(t, n) // mDNS is off unless a test turns it on
	for i := range n {
		nt.WaitFor(20*time.Second, func() bool { return nt.Node(i).DHT().RoutingTable().Size() > 0 },
			"node %d to fill its routing table", i)
	}
	for i := range n {
		for j := range n {
			if i == j {
				continue
			}
			// A peer just connected may not have sent its listen addresses
			// yet (identify runs after the handshake), so poll.
			var last error
			nt.WaitFor(20*time.Second, func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				ai, err := nt.Node(i).DHT().FindPeer(ctx, nt.ID(j))
				last = err
				return err == nil && ai.ID == nt.ID(j) && len(ai.Addrs) > 0
			}, "node %d to find node %d through the DHT (last error %v)", i, j, last)
		}
	}
}

func TestNoGoroutineLeftAfterClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		// Process-wide workers started once by dependencies, not per node.
		goleak.IgnoreAnyFunction("github.com/ipfs/go-log/v2/writer.(*MirrorWriter).logRoutine"),
		goleak.IgnoreAnyFunction("go.opencensus.io/stats/view.(*worker).start"),
	)
	nt := nodetest.Start(t, 3)
	nt.WaitFor(10*time.Second, func() bool { return len(nt.Node(2).Host().Network().Peers()) > 0 }, "node 2 to connect")
	nt.Close()
	nt.Close() // idempotent
}

func TestLocalAPIErrors(t *testing.T) {
	nt := nodetest.Start(t, 1)
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	_, err := c.Connect(context.Background(), "nonsense")
	var ae *localapi.Error
	if !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(ae.Message, "not a multiaddr") {
		t.Fatalf("bad multiaddr: %v", err)
	}
	_, err = c.Connect(context.Background(), "/ip4/127.0.0.1/tcp/1")
	if !errors.As(err, &ae) || !strings.Contains(ae.Message, "/p2p/") {
		t.Fatalf("multiaddr without peer: %v", err)
	}
	st, err := os.Stat(node.SocketPath(nt.Home(0)))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v", st, err)
	}
	none := localapi.NewClient(filepath.Join(t.TempDir(), "parley.sock"))
	if _, err := none.ID(context.Background()); !errors.Is(err, localapi.ErrNoNode) {
		t.Fatalf("no node: err = %v", err)
	}
}

// A home whose database folder and files others may read (restored from a
// backup, copied, or made under a permissive umask) is made private at
// start: data/ becomes 0700 (Badger makes its files with the umask, so the
// folder is what keeps them private) and the home's files lose their group
// and other bits; the key keeps its own rule (refused).
func TestHomeMadePrivateAtStart(t *testing.T) {
	nt := nodetest.Start(t, 1)
	home := nt.Home(0)
	nt.Crash(0)
	data := filepath.Join(home, node.DataDirName)
	loose := map[string]os.FileMode{data: 0o755, filepath.Join(home, node.LogFileName): 0o644,
		filepath.Join(home, node.RecoveryFileName): 0o666, filepath.Join(home, node.LockFileName): 0o644}
	if err := os.WriteFile(filepath.Join(home, node.LogFileName), []byte("a log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for p, m := range loose {
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
	}
	nt.Restart(0)
	for p := range loose {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := st.Mode().Perm(); m&0o077 != 0 {
			t.Errorf("%s has mode %04o after start, want no group or other bits", p, m)
		}
	}
	if st, err := os.Stat(data); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("data/ after start: %v %v, want 0700", st.Mode().Perm(), err)
	}

	// The database on another disk: data/ is a link, and the folder it
	// points to is made private.
	nt.Crash(0)
	elsewhere := filepath.Join(t.TempDir(), "bigdisk", "parley-data")
	if err := os.MkdirAll(filepath.Dir(elsewhere), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(data, elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, data); err != nil {
		t.Fatal(err)
	}
	nt.Restart(0)
	if st, err := os.Stat(elsewhere); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("the folder data/ links to, after start: %v %v, want 0700", st.Mode().Perm(), err)
	}
	if st, err := os.Lstat(data); err != nil || st.Mode().Type() != fs.ModeSymlink {
		t.Errorf("data/ is no longer the link: %v %v", st, err)
	}
}

// The confusables data is read when a handle's key is first made, not when
// the program starts: a command that names no node (status, id, a config
// check) does not pay for it. Run in a process of its own, so that no test
// before it has made a key.
func TestConfusablesReadOnlyWhenNeeded(t *testing.T) {
	if os.Getenv("PARLEY_TEST_LOOKALIKE_CHILD") != "" {
		if lookalike.Loaded() {
			t.Fatal("the confusables data was read at start")
		}
		_ = config.CheckHandle("bob")
		_ = termtext.Line("bob\u3164")
		if lookalike.Loaded() {
			t.Fatal("the confusables data was read to check a handle or print a line")
		}
		lookalike.Keys("bob")
		if !lookalike.Loaded() {
			t.Fatal("a key was made without the confusables data")
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestConfusablesReadOnlyWhenNeeded$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PARLEY_TEST_LOOKALIKE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("the test in a process of its own: %v\n%s", err, out)
	}
}
