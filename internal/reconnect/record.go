package reconnect

import (
	"fmt"
	"time"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/internal/canon"
)

// MaxAddrs is the most addresses kept for one peer.
const MaxAddrs = 16

// maxAddrLen bounds one stored address (a multiaddr is small; a relay
// address with two peer IDs is about 120 bytes).
const maxAddrLen = 512

// maxRecordWire bounds one stored record. It stays under the store's value
// threshold (internal/store.ValueThreshold, 1 KiB), so that the record
// lives in Badger's tables, where a record written over is compacted away:
// a value in the value log is never reclaimed, and a peer that reconnects
// with new addresses rewrites its record each time.
const maxRecordWire = 960

type record struct {
	Time  int64    `cbor:"t"`
	Addrs [][]byte `cbor:"a"`
}

var dec = canon.StrictDec(MaxAddrs)

// encodeRecord encodes the addresses of a peer learnt at t.
func encodeRecord(t time.Time, addrs []ma.Multiaddr) ([]byte, error) {
	r := record{Time: t.Unix()}
	for _, a := range addrs {
		if len(r.Addrs) == MaxAddrs {
			break
		}
		r.Addrs = append(r.Addrs, a.Bytes())
	}
	return canon.Enc.Marshal(r)
}

// decodeRecord decodes a stored record; every address must parse.
func decodeRecord(b []byte) (time.Time, []ma.Multiaddr, error) {
	var r record
	if err := dec.Unmarshal(b, &r); err != nil {
		return time.Time{}, nil, fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	if len(r.Addrs) > MaxAddrs {
		return time.Time{}, nil, fmt.Errorf("%w: %d addresses", ErrBadRecord, len(r.Addrs))
	}
	out := make([]ma.Multiaddr, 0, len(r.Addrs))
	for _, raw := range r.Addrs {
		if len(raw) > maxAddrLen {
			return time.Time{}, nil, fmt.Errorf("%w: address of %d bytes", ErrBadRecord, len(raw))
		}
		a, err := ma.NewMultiaddrBytes(raw)
		if err != nil {
			return time.Time{}, nil, fmt.Errorf("%w: %v", ErrBadRecord, err)
		}
		out = append(out, a)
	}
	return time.Unix(r.Time, 0), out, nil
}
