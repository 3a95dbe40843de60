package reconnect

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/internal/store/schema"
)

type noHost struct{ host.Host }

type noStore struct{}

func (noStore) ScanFrom([]byte, []byte, bool, func(key, val []byte) bool) error { return nil }
func (noStore) Apply([]schema.Op, bool) error                                   { return nil }

// Save on a service whose Run never started (the node's start failed)
// returns at once instead of waiting out its context.
func TestSaveWithoutRunReturnsAtOnce(t *testing.T) {
	s, err := New(Config{Host: noHost{}, Store: noStore{}, Peers: func() []peer.ID { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	if err := s.Save(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Save without Run took %s", took)
	}
}
