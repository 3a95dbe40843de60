package rooms

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// The fast path of Decode. Every event an honest node sends is the
// canonical CBOR encoding of a signedEvent holding the canonical encoding
// of an eventPayload. parseCanonical reads exactly those bytes, without
// reflection and without encoding the result again to compare; anything
// else (ok false) goes to the general decoder, which accepts or refuses it
// and says why. So the fast path changes which events are accepted in no
// way: FuzzDecode checks that both paths agree.

// cborHead reads the head of a CBOR data item at b[0]: its major type and
// argument, in the shortest form only (canonical), and the head's length.
func cborHead(b []byte) (major byte, arg uint64, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, 0, false
	}
	major, ai := b[0]>>5, b[0]&0x1f
	switch {
	case ai < 24:
		return major, uint64(ai), 1, true
	case ai == 24 && len(b) >= 2 && b[1] >= 24:
		return major, uint64(b[1]), 2, true
	case ai == 25 && len(b) >= 3:
		v := uint64(binary.BigEndian.Uint16(b[1:]))
		return major, v, 3, v > 0xff
	case ai == 26 && len(b) >= 5:
		v := uint64(binary.BigEndian.Uint32(b[1:]))
		return major, v, 5, v > 0xffff
	case ai == 27 && len(b) >= 9:
		v := binary.BigEndian.Uint64(b[1:])
		return major, v, 9, v > 0xffffffff
	}
	return 0, 0, 0, false // indefinite lengths, reserved values, short input
}

// CBOR major types.
const (
	cborUint  = 0
	cborBytes = 2
	cborText  = 3
	cborArray = 4
	cborMap   = 5
)

// cborString reads a byte string (major cborBytes) or text string
// (cborText, valid UTF-8) at b[0] and returns it (aliasing b) and the
// bytes it took.
func cborString(b []byte, major byte) ([]byte, int, bool) {
	m, l, n, ok := cborHead(b)
	if !ok || m != major || l > uint64(len(b)-n) {
		return nil, 0, false
	}
	s := b[n : n+int(l)]
	if major == cborText && !utf8.Valid(s) {
		return nil, 0, false
	}
	return s, n + int(l), true
}

// parseSigned reads the canonical encoding of a signedEvent: a map of two
// pairs, 1: the payload and 2: the signature, both byte strings. They
// alias wire.
func parseSigned(wire []byte) (payload, sig []byte, ok bool) {
	if len(wire) < 3 || wire[0] != 0xa2 || wire[1] != 0x01 {
		return nil, nil, false
	}
	payload, n, ok := cborString(wire[2:], cborBytes)
	if !ok {
		return nil, nil, false
	}
	rest := wire[2+n:]
	if len(rest) < 1 || rest[0] != 0x02 {
		return nil, nil, false
	}
	sig, n, ok = cborString(rest[1:], cborBytes)
	if !ok || 1+n != len(rest) {
		return nil, nil, false
	}
	return payload, sig, true
}

// parsePayload reads the canonical encoding of an eventPayload: a map
// whose keys are the field numbers in increasing order, each present field
// non-zero (zero values are left out), every integer and length in its
// shortest form. The byte strings of p but Body alias b. It refuses negative times
// and parents that are not 32 bytes (the general decoder reports them).
func parsePayload(b []byte) (p eventPayload, ok bool) {
	m, count, n, ok := cborHead(b)
	if !ok || m != cborMap || count > 12 {
		return p, false
	}
	b = b[n:]
	last := uint64(0)
	for range count {
		if len(b) == 0 || b[0] <= byte(last) || b[0] > 12 {
			return p, false // keys are 1…12 (one byte each), increasing
		}
		key := uint64(b[0])
		last = key
		b = b[1:]
		switch key {
		case 1, 5, 7, 8: // V, Seq, Depth, Time: non-zero unsigned integers
			m, v, n, ok := cborHead(b)
			if !ok || m != cborUint || v == 0 || (key == 8 && v > 1<<63-1) {
				return p, false
			}
			b = b[n:]
			switch key {
			case 1:
				p.V = v
			case 5:
				p.Seq = v
			case 7:
				p.Depth = v
			case 8:
				p.Time = int64(v)
			}
		case 2, 4, 9, 12: // Room, Agent, Kind, To: non-empty text
			s, n, ok := cborString(b, cborText)
			if !ok || len(s) == 0 {
				return p, false
			}
			b = b[n:]
			switch key {
			case 2:
				p.Room = string(s)
			case 4:
				p.Agent = string(s)
			case 9:
				p.Kind = internKind(s)
			case 12:
				p.To = string(s)
			}
		case 3, 10, 11: // Author, Body, ReplyTo: non-empty bytes
			s, n, ok := cborString(b, cborBytes)
			if !ok || len(s) == 0 {
				return p, false
			}
			b = b[n:]
			switch key {
			case 3:
				p.Author = s
			case 10:
				p.Body = bytes.Clone(s) // the event shares no memory with the wire
			case 11:
				p.ReplyTo = s
			}
		case 6: // Parents: a non-empty array of 32-byte strings
			m, l, n, ok := cborHead(b)
			if !ok || m != cborArray || l == 0 || l > MaxParents {
				return p, false
			}
			b = b[n:]
			p.Parents = make([][]byte, l)
			for i := range p.Parents {
				s, n, ok := cborString(b, cborBytes)
				if !ok || len(s) != len(ID{}) {
					return p, false
				}
				p.Parents[i] = s
				b = b[n:]
			}
		}
	}
	return p, len(b) == 0
}

// internKind returns a known kind's constant, so decoding it allocates
// nothing; any other kind as a new string.
func internKind(s []byte) string {
	switch string(s) {
	case string(KindMessage):
		return string(KindMessage)
	case string(KindAsk):
		return string(KindAsk)
	case string(KindJoin):
		return string(KindJoin)
	case string(KindLeave):
		return string(KindLeave)
	case string(KindInvite):
		return string(KindInvite)
	case string(KindCreate):
		return string(KindCreate)
	case string(KindClaim):
		return string(KindClaim)
	case string(KindRelease):
		return string(KindRelease)
	}
	return string(s)
}

// authorKeys remembers the public keys of recent authors: taking one out of
// a peer ID decodes a protobuf, and every event needs it twice.
var authorKeys peerCache[crypto.PubKey]

// authorKey returns the Ed25519 public key embedded in an author's peer
// ID, or an error wrapping ErrBadAuthor.
func authorKey(p peer.ID) (crypto.PubKey, error) {
	if pub, ok := authorKeys.get(p); ok {
		return pub, nil
	}
	pub, err := p.ExtractPublicKey()
	if err != nil || pub.Type() != crypto.Ed25519 {
		// Only Ed25519: its signatures cannot be re-shaped by a third party,
		// so the ID of an event is fixed once its author has signed it.
		return nil, fmt.Errorf("%w: %s is not an Ed25519 peer id", ErrBadAuthor, p)
	}
	authorKeys.put(p, pub)
	return pub, nil
}

// peerStrings remembers the text form of recent peers: base58 costs
// microseconds, and every stored event names its agent by it.
var peerStrings peerCache[string]

// peerString returns p.String().
func peerString(p peer.ID) string {
	if s, ok := peerStrings.get(p); ok {
		return s
	}
	s := p.String()
	peerStrings.put(p, s)
	return s
}

// peerCache is a small map of what is derived from a peer ID, for the few
// peers a node's rooms hear from; past maxPeerCache entries it starts again.
type peerCache[T any] struct {
	mu sync.RWMutex // protects m
	m  map[peer.ID]T
}

const maxPeerCache = 4096

func (c *peerCache[T]) get(p peer.ID) (T, bool) {
	c.mu.RLock()
	v, ok := c.m[p]
	c.mu.RUnlock()
	return v, ok
}

func (c *peerCache[T]) put(p peer.ID, v T) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxPeerCache {
		c.m = make(map[peer.ID]T)
	}
	c.m[p] = v
	c.mu.Unlock()
}
