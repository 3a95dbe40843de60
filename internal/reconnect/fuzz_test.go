package reconnect

import (
	"testing"
	"time"

	ma "github.com/multiformats/go-multiaddr"
)

func FuzzDecodeRecord(f *testing.F) {
	good, err := encodeRecord(time.Unix(1700000000, 0), []ma.Multiaddr{
		ma.StringCast("/ip4/192.0.2.1/tcp/4190"),
		ma.StringCast("/ip6/::1/udp/4190/quic-v1"),
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{0xa2, 0x61, 0x74, 0x00, 0x61, 0x61, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		when, addrs, err := decodeRecord(b)
		if err != nil {
			return
		}
		again, err := encodeRecord(when, addrs)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		_, addrs2, err := decodeRecord(again)
		if err != nil || len(addrs2) != len(addrs) {
			t.Fatalf("round trip: %v, %d vs %d", err, len(addrs2), len(addrs))
		}
	})
}
