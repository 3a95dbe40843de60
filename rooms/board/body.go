package board

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/parley-mesh/parley/internal/canon"
)

// Limits of claims. They are part of the protocol: a body out of them is
// ignored by every node.
const (
	// MaxPaths is the most paths of one claim or release.
	MaxPaths = 64
	// MaxNote is the longest note, in bytes.
	MaxNote = 500
	// MinTTL and MaxTTL bound a claim's time to live.
	MinTTL = time.Second
	MaxTTL = 8 * time.Hour
	// DefaultTTL is a claim's time to live when none is given.
	DefaultTTL = 30 * time.Minute

	// MaxNodeWeight bounds what one node (by its peer ID, whatever agent
	// names it posts under) has the board keep for it: the weights
	// (Weight) of its claims and releases dated within NodeWindow before
	// a claim or release of it, folded or lost, may add up to at most this
	// much with that one; past it, the claim or release is ignored, by
	// every node alike. A fold keeps every entry of the last MaxTTL and
	// more in memory, on every member node: before, a member posting
	// claims of 64 paths of 512 bytes had each kept (about 53 KiB with the
	// held claims) for as long, whatever the agent names. 4 MiB is about
	// 2,800 claims of 3 paths of 40 bytes and a note of 80 in 8 h (one
	// every 10 s, by all the node's agents together), or 200 claims of 64
	// such paths, where agents make a few claims an hour each.
	MaxNodeWeight = 4 << 20
	// MaxNodeReleaseWeight bounds a node's releases the same way, apart
	// from its claims: a node whose claims reached MaxNodeWeight (a
	// runaway agent, renewing on and on) can still release every claim
	// its agents hold. 1 MiB is about 1,700 releases of one path of 80
	// bytes in 8 h, or 60 of 64 such paths.
	MaxNodeReleaseWeight = 1 << 20
	// NodeWindow is how long a claim or release counts against its node's
	// MaxNodeWeight, whatever its ttl: as long as the board keeps it.
	NodeWindow = MaxTTL
	// entryWeight and pathWeight are about what the fold keeps in memory
	// for an entry (its record and IDs) and for each path it names beside
	// the path's bytes (the held claim and its index).
	entryWeight = 512
	pathWeight  = 256
)

// Weight is what a claim or release of paths and note counts against its
// node's MaxNodeWeight: about the bytes the board keeps in memory for it.
func Weight(paths []string, note string) int {
	n := entryWeight + len(note)
	for _, p := range paths {
		n += len(p) + pathWeight
	}
	return n
}

// ClaimBody is what a claim event carries.
type ClaimBody struct {
	Paths []string      // sorted, unique
	Note  string        // the agent's own words, one line
	TTL   time.Duration // whole milliseconds, MinTTL to MaxTTL
}

// ReleaseBody is what a release event carries.
type ReleaseBody struct {
	Paths []string // sorted, unique; none: every claim of the agent
}

type claimWire struct {
	Paths []string `cbor:"1,keyasint,omitempty"`
	Note  string   `cbor:"2,keyasint,omitempty"`
	TTL   uint64   `cbor:"3,keyasint,omitempty"`
}

type releaseWire struct {
	Paths []string `cbor:"1,keyasint,omitempty"`
}

var bodyDec = canon.StrictDec(MaxPaths)

// CheckNote checks a claim's note: one line of 1 to MaxNote bytes.
func CheckNote(note string) error {
	if strings.TrimSpace(note) == "" {
		return fmt.Errorf("%w: a claim needs a note (why you work on it, in your own words)", ErrBadInput)
	}
	if len(note) > MaxNote || !utf8.ValidString(note) {
		return fmt.Errorf("%w: the note must be text of at most %d bytes", ErrBadInput, MaxNote)
	}
	if strings.IndexFunc(note, unicode.IsControl) >= 0 {
		return fmt.Errorf("%w: the note must be one line without control characters", ErrBadInput)
	}
	return nil
}

// CheckTTL checks a claim's time to live.
func CheckTTL(ttl time.Duration) error {
	if ttl < MinTTL || ttl > MaxTTL || ttl%time.Millisecond != 0 {
		return fmt.Errorf("%w: ttl %v: must be from %v to %v", ErrBadInput, ttl, MinTTL, MaxTTL)
	}
	return nil
}

// CheckPaths checks a list of patterns and returns it sorted and unique.
func CheckPaths(paths []string, atLeastOne bool) ([]string, error) {
	if atLeastOne && len(paths) == 0 {
		return nil, fmt.Errorf("%w: no path to claim", ErrBadInput)
	}
	out := slices.Clone(paths)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxPaths {
		return nil, fmt.Errorf("%w: %d paths, at most %d at once", ErrBadInput, len(out), MaxPaths)
	}
	n := 0
	for _, p := range out {
		if err := CheckPattern(p); err != nil {
			return nil, err
		}
		n += Stars(p)
	}
	if n > MaxClaimStars {
		return nil, fmt.Errorf("%w: %d * and ** in the paths, at most %d at once", ErrBadInput, n, MaxClaimStars)
	}
	return out, nil
}

// EncodeClaim checks c and returns its body bytes.
func EncodeClaim(c ClaimBody) ([]byte, error) {
	paths, err := CheckPaths(c.Paths, true)
	if err != nil {
		return nil, err
	}
	if err := CheckNote(c.Note); err != nil {
		return nil, err
	}
	if err := CheckTTL(c.TTL); err != nil {
		return nil, err
	}
	return canon.Enc.Marshal(claimWire{Paths: paths, Note: c.Note, TTL: uint64(c.TTL / time.Millisecond)})
}

// DecodeClaim decodes and checks a claim's body. Only the encoding
// EncodeClaim gives is accepted.
func DecodeClaim(b []byte) (ClaimBody, error) {
	var w claimWire
	if err := bodyDec.Unmarshal(b, &w); err != nil {
		return ClaimBody{}, fmt.Errorf("%w: claim: %v", ErrMalformed, err)
	}
	if w.TTL > uint64(MaxTTL/time.Millisecond) {
		return ClaimBody{}, fmt.Errorf("%w: claim: ttl %d ms", ErrMalformed, w.TTL)
	}
	c := ClaimBody{Paths: w.Paths, Note: w.Note, TTL: time.Duration(w.TTL) * time.Millisecond}
	again, err := EncodeClaim(c)
	if err != nil {
		return ClaimBody{}, fmt.Errorf("%w: claim: %w", ErrMalformed, err)
	}
	if string(again) != string(b) {
		return ClaimBody{}, fmt.Errorf("%w: claim: not the canonical encoding", ErrMalformed)
	}
	return c, nil
}

// EncodeRelease checks r and returns its body bytes.
func EncodeRelease(r ReleaseBody) ([]byte, error) {
	paths, err := CheckPaths(r.Paths, false)
	if err != nil {
		return nil, err
	}
	return canon.Enc.Marshal(releaseWire{Paths: paths})
}

// DecodeRelease decodes and checks a release's body.
func DecodeRelease(b []byte) (ReleaseBody, error) {
	var w releaseWire
	if err := bodyDec.Unmarshal(b, &w); err != nil {
		return ReleaseBody{}, fmt.Errorf("%w: release: %v", ErrMalformed, err)
	}
	r := ReleaseBody{Paths: w.Paths}
	again, err := EncodeRelease(r)
	if err != nil {
		return ReleaseBody{}, fmt.Errorf("%w: release: %w", ErrMalformed, err)
	}
	if string(again) != string(b) {
		return ReleaseBody{}, fmt.Errorf("%w: release: not the canonical encoding", ErrMalformed)
	}
	return r, nil
}

// Describe says in one line what a claim or release body holds, for room
// logs ("" for another kind).
func Describe(kind string, body []byte) string {
	switch kind {
	case KindClaim:
		c, err := DecodeClaim(body)
		if err != nil {
			return "(a malformed claim, ignored)"
		}
		return fmt.Sprintf("claims %s for %s: %s", strings.Join(c.Paths, " "), c.TTL, c.Note)
	case KindRelease:
		r, err := DecodeRelease(body)
		if err != nil {
			return "(a malformed release, ignored)"
		}
		if len(r.Paths) == 0 {
			return "releases all its claims"
		}
		return "releases " + strings.Join(r.Paths, " ")
	}
	return ""
}
