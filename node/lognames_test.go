package node_test

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// records keeps every log record's attributes, those the logger was made
// with included, in order.
type records struct {
	mu   sync.Mutex
	got  [][]slog.Attr
	msgs []string
}

type recordHandler struct {
	r     *records
	attrs []slog.Attr
}

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) WithGroup(string) slog.Handler            { return h }
func (h recordHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return recordHandler{r: h.r, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}
func (h recordHandler) Handle(_ context.Context, rec slog.Record) error {
	all := append([]slog.Attr(nil), h.attrs...)
	rec.Attrs(func(a slog.Attr) bool { all = append(all, a); return true })
	h.r.mu.Lock()
	h.r.got = append(h.r.got, all)
	h.r.msgs = append(h.r.msgs, rec.Message)
	h.r.mu.Unlock()
	return nil
}

// A log line about another peer names it under "peer" alone: the node's own
// ID is under "node", so node.log never reads `peer=SELF peer=OTHER`.
func TestNodeLogNamesThePeerItSpeaksOfOnce(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // a bootstrap peer whose port no one listens on
	_, pub, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	gone, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	rs := &records{}
	nt := nodetest.Start(t, 1, nodetest.WithConfig(func(_ int, c *node.Config) {
		c.Logger = slog.New(recordHandler{r: rs})
		c.Bootstrap = []peer.AddrInfo{{ID: gone, Addrs: []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/tcp/" + strconv.Itoa(port))}}}
	}))
	defer nt.Close()
	var line []slog.Attr
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		for i, m := range rs.msgs {
			if m == "dial of a bootstrap peer or configured relay failed" {
				line = rs.got[i]
				return true
			}
		}
		return false
	}, "the node to log the failed bootstrap dial")
	var peers, nodes []string
	for _, a := range line {
		switch a.Key {
		case "peer":
			peers = append(peers, a.Value.String())
		case "node":
			nodes = append(nodes, a.Value.String())
		}
	}
	if len(peers) != 1 || peers[0] != gone.String() {
		t.Fatalf("the line names under peer %q, want the bootstrap peer %s alone", peers, gone)
	}
	if len(nodes) != 1 || nodes[0] != nt.ID(0).String() {
		t.Fatalf("the line names under node %q, want the node itself %s", nodes, nt.ID(0))
	}
}
