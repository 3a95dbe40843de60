package discovery

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	dhtpb "github.com/libp2p/go-libp2p-kad-dht/pb"
	record "github.com/libp2p/go-libp2p-record"
	recpb "github.com/libp2p/go-libp2p-record/pb"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/parley-mesh/parley/identity"
)

func loopbackHost(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestValueRecordPaddingNotKept: a stranger PUT_VALUEs valid records (its
// own public key under /pk/, its own agent cards) whose protobuf carries
// a field the record does not have, a MiB of it. kad-dht keeps unknown
// fields through its Clone and Marshal, so the store kept each record at
// the size of the message: 64 cards of one fresh key held 64 MiB, and
// 8,192 records in all (fresh keys cost nothing) some 32 GiB, where the
// bounds were meant to hold the store near 40 MiB. Now each record is
// kept as its key, value and time alone.
func TestValueRecordPaddingNotKept(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := loopbackHost(t)
	st := NewValueStore(ValueStoreConfig{Self: srv.ID()})
	kad, err := dht.New(srv,
		dht.Mode(dht.ModeServer),
		dht.ProtocolPrefix("/parley"),
		dht.Validator(record.NamespacedValidator{"pk": record.PublicKeyValidator{}, Namespace: Validator{}}),
		dht.ValueDatastore(st),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer kad.Close()

	attacker := loopbackHost(t)
	if err := attacker.Connect(ctx, peer.AddrInfo{ID: srv.ID(), Addrs: srv.Addrs()}); err != nil {
		t.Fatal(err)
	}
	const pad = 1 << 20
	padding := protowire.AppendTag(nil, 99, protowire.BytesType)
	padding = protowire.AppendBytes(padding, make([]byte, pad))
	put := func(key string, value []byte) {
		t.Helper()
		raw, err := proto.Marshal(record.MakePutRecord(key, value))
		if err != nil {
			t.Fatal(err)
		}
		rec := new(recpb.Record)
		if err := proto.Unmarshal(append(raw, padding...), rec); err != nil {
			t.Fatal(err)
		}
		msg, err := proto.Marshal(&dhtpb.Message{Type: dhtpb.Message_PUT_VALUE, Key: []byte(key), Record: rec})
		if err != nil {
			t.Fatal(err)
		}
		s, err := attacker.NewStream(ctx, srv.ID(), "/parley/kad/1.0.0")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		_ = s.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := s.Write(append(binary.AppendUvarint(nil, uint64(len(msg))), msg...)); err != nil {
			t.Fatal(err)
		}
		// The answer (an echo of the message, or nothing when refused).
		br := bufio.NewReader(s)
		if n, err := binary.ReadUvarint(br); err == nil {
			_, _ = io.CopyN(io.Discard, br, int64(n))
		}
	}
	const fresh = 4
	sent := 0
	for range fresh {
		priv, pub, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := peer.IDFromPublicKey(pub)
		pk, err := crypto.MarshalPublicKey(pub)
		if err != nil {
			t.Fatal(err)
		}
		put("/pk/"+string(p), pk)
		sent++
		for i := range 2 {
			c := &Card{Peer: p, Agent: identity.AgentName(fmt.Sprintf("agent-%d", i)), Seq: 1, Expires: time.Now().Add(time.Hour).UnixMilli()}
			wire, err := SealCard(priv, c)
			if err != nil {
				t.Fatal(err)
			}
			put(c.Key(), wire)
			sent++
		}
	}
	records, _ := st.Stats()
	if records != sent {
		t.Fatalf("%d records kept of %d valid ones sent", records, sent)
	}
	if held, bound := st.heldBytes(), sent*(MaxCardWire+1024); held > bound {
		t.Fatalf("%d records of %d fresh keys hold %d bytes (bound %d): the padding of %d bytes each was kept", records, fresh, held, bound, pad)
	}
}
