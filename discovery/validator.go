package discovery

import (
	"bytes"
	"fmt"
	"math"
	"time"

	record "github.com/libp2p/go-libp2p-record"
)

// Validator is the DHT record validator of namespace "parley-agent" (see
// Namespace). Register it with
// dht.NamespacedValidator(discovery.Namespace, discovery.Validator{}).
// kad-dht passes it the whole key, "/parley-agent/<peer>/<agent>". The zero
// value is ready to use; it holds no state and is safe for concurrent use.
type Validator struct {
	// Now returns the current time, for expiry. Nil means time.Now.
	Now func() time.Time
}

var _ record.Validator = Validator{}

func (v Validator) now() time.Time {
	if v.Now == nil {
		return time.Now()
	}
	return v.Now()
}

// Validate checks that value is a card valid under key: the key parses
// (ParseCardKey), the card decodes (DecodeCard, so its signature is the
// key's peer's), its Peer and Agent are those of the key, and it expires
// after now but no later than now+MaxCardTTL+MaxClockSkew.
func (v Validator) Validate(key string, value []byte) error {
	c, s, err := check(key, value, v.now())
	if err == nil {
		err = verifyCard(c, s)
	}
	if err != nil {
		return fmt.Errorf("discovery: validate card %.120q: %w", key, err)
	}
	return nil
}

// Select returns the index of the best valid card among values: the one
// with the highest seq; among equal seqs the one that expires last; then
// the bytewise smallest, then the first. Invalid values are skipped (their
// signatures are checked only when they would win). It returns
// ErrNoValidCard if no value is valid under key.
func (v Validator) Select(key string, values [][]byte) (int, error) {
	now := v.now()
	best := -1
	var bc *Card
	for i, val := range values {
		c, s, err := check(key, val, now)
		if err != nil {
			continue
		}
		if best >= 0 && !better(c, val, bc, values[best]) {
			continue
		}
		if verifyCard(c, s) != nil {
			continue
		}
		best, bc = i, c
	}
	if best < 0 {
		return 0, fmt.Errorf("discovery: select card %.120q: %w among %d values", key, ErrNoValidCard, len(values))
	}
	return best, nil
}

// better reports whether card a (wire aw) beats card b (wire bw).
func better(a *Card, aw []byte, b *Card, bw []byte) bool {
	if a.Seq != b.Seq {
		return a.Seq > b.Seq
	}
	if a.Expires != b.Expires {
		return a.Expires > b.Expires
	}
	return bytes.Compare(aw, bw) < 0
}

// check runs every check of Validate but the signature, cheapest first.
func check(key string, value []byte, now time.Time) (*Card, *signedWire, error) {
	p, agent, err := parseCardKey(key)
	if err != nil {
		return nil, nil, err
	}
	c, s, err := decodeCard(value)
	if err != nil {
		return nil, nil, err
	}
	if c.Peer != p {
		return nil, nil, fmt.Errorf("%w: card of peer %s", ErrKeyMismatch, c.Peer)
	}
	if c.Agent != agent {
		return nil, nil, fmt.Errorf("%w: card of agent %q", ErrKeyMismatch, c.Agent)
	}
	ms := now.UnixMilli()
	if c.Expires <= ms {
		return nil, nil, fmt.Errorf("%w: at %s", ErrExpired, time.UnixMilli(c.Expires).UTC().Format(time.RFC3339))
	}
	if c.Expires > addSat(ms, (MaxCardTTL+MaxClockSkew).Milliseconds()) {
		return nil, nil, fmt.Errorf("%w: expires %s, limit %s from now", ErrLifetime,
			time.UnixMilli(c.Expires).UTC().Format(time.RFC3339), MaxCardTTL+MaxClockSkew)
	}
	return c, s, nil
}

// addSat returns a+d for d ≥ 0, saturating at math.MaxInt64.
func addSat(a, d int64) int64 {
	if a > math.MaxInt64-d {
		return math.MaxInt64
	}
	return a + d
}
