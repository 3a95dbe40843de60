package discovery

import (
	"fmt"
	"strings"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/parley-mesh/parley/identity"
)

// Kinds of provider keys and queries.
const (
	// KindHandle looks up the cards of a user's handle.
	KindHandle = "handle"
	// KindAgent looks up the cards of an agent name.
	KindAgent = "agent"
	// KindCap looks up the cards of a capability.
	KindCap = "cap"
)

// kinds in the order ParseQuery returns them.
var kinds = [...]string{KindHandle, KindAgent, KindCap}

// maxHandleQuery is the longest normalized handle value: lower-casing may
// lengthen a MaxText-byte handle.
const maxHandleQuery = 4 * MaxText

// Query is one provider lookup: a kind and a normalized value.
type Query struct {
	Kind  string // KindHandle, KindAgent or KindCap
	Value string // normalized: trimmed and lower-case
}

// String returns the query as "kind:value".
func (q Query) String() string { return q.Kind + ":" + q.Value }

// Key returns ProviderKey(q.Kind, q.Value).
func (q Query) Key() (cid.Cid, error) { return ProviderKey(q.Kind, q.Value) }

// normalize returns value trimmed of surrounding white space and lower-cased.
func normalize(value string) string {
	return strings.ToLower(strings.TrimSpace(value))
}

// checkQuery checks a normalized value against kind.
func checkQuery(kind, v string) error {
	switch kind {
	case KindHandle:
		if v == "" {
			return fmt.Errorf("%w: empty handle", ErrBadQuery)
		}
		if err := checkLine(v, maxHandleQuery, "handle"); err != nil {
			return fmt.Errorf("%w: %w", ErrBadQuery, err)
		}
	case KindAgent:
		if _, err := identity.ParseAgentName(v); err != nil {
			return fmt.Errorf("%w: %w", ErrBadQuery, err)
		}
	case KindCap:
		if err := checkCapability(v); err != nil {
			return fmt.Errorf("%w: %w", ErrBadQuery, err)
		}
	default:
		return fmt.Errorf("%w: unknown kind %.40q", ErrBadQuery, kind)
	}
	return nil
}

// ProviderKey returns the provider-record key for kind (KindHandle,
// KindAgent or KindCap) and value: a CIDv1 with codec raw and the SHA2-256
// multihash of "parley:" + kind + ":" + normalized value, where the value
// is normalized by trimming white space and lower-casing. A node Provides
// the keys of its cards (Card.ProviderKeys) and others FindProviders them.
// It returns ErrBadQuery for an unknown kind or a value the kind does not
// allow (an agent name, a capability, a one-line handle).
func ProviderKey(kind, value string) (cid.Cid, error) {
	v := normalize(value)
	if err := checkQuery(kind, v); err != nil {
		return cid.Undef, fmt.Errorf("discovery: provider key: %w", err)
	}
	h, err := multihash.Sum([]byte("parley:"+kind+":"+v), multihash.SHA2_256, -1)
	if err != nil {
		return cid.Undef, fmt.Errorf("discovery: provider key: %w", err)
	}
	return cid.NewCidV1(cid.Raw, h), nil
}

// ProviderKeys returns the provider keys under which c is announced: its
// handle (if any), its agent name and each capability, in that order.
func (c *Card) ProviderKeys() ([]cid.Cid, error) {
	qs := make([]Query, 0, 2+len(c.Capabilities))
	if c.Handle != "" {
		qs = append(qs, Query{KindHandle, c.Handle})
	}
	qs = append(qs, Query{KindAgent, string(c.Agent)})
	for _, cp := range c.Capabilities {
		qs = append(qs, Query{KindCap, cp})
	}
	keys := make([]cid.Cid, len(qs))
	for i, q := range qs {
		k, err := q.Key()
		if err != nil {
			return nil, err
		}
		keys[i] = k
	}
	return keys, nil
}

// CheckQuery says why q can match nothing (nil: ParseQuery gives at least
// one lookup): a kind with an empty or invalid value ("cap:"), or a word
// that is no handle, agent name or capability.
func CheckQuery(q string) error {
	if len(ParseQuery(q)) > 0 {
		return nil
	}
	t := strings.TrimSpace(q)
	if k, v, ok := strings.Cut(t, ":"); ok {
		k = strings.ToLower(strings.TrimSpace(k))
		for _, kind := range kinds {
			if k == kind {
				v = normalize(v)
				if v == "" {
					return fmt.Errorf("%w: %q has no value: give one, as in %s:NAME", ErrBadQuery, kind+":", kind)
				}
				return checkQuery(kind, v)
			}
		}
	}
	if t == "" {
		return fmt.Errorf("%w: empty: give a handle, an agent name or a capability (cap:go, agent:NAME, handle:NAME)", ErrBadQuery)
	}
	return fmt.Errorf("%w: %.60q is no handle, agent name or capability", ErrBadQuery, t)
}

// ParseQuery turns a user's search into provider lookups. "handle:alice",
// "agent:claude-api" and "cap:go" (kind case-insensitive) give one lookup of
// that kind; anything else is a free query, looked up as a handle, an agent
// name and a capability. Values are normalized (trimmed, lower-case), and a
// kind the value is not valid for is left out, so "Alice Smith" is looked
// up only as a handle, and an invalid query gives none.
func ParseQuery(q string) []Query {
	q = strings.TrimSpace(q)
	if k, v, ok := strings.Cut(q, ":"); ok {
		k = strings.ToLower(strings.TrimSpace(k))
		for _, kind := range kinds {
			if k != kind {
				continue
			}
			v = normalize(v)
			if checkQuery(kind, v) != nil {
				return nil
			}
			return []Query{{kind, v}}
		}
	}
	v := normalize(q)
	var out []Query
	for _, kind := range kinds {
		if checkQuery(kind, v) == nil {
			out = append(out, Query{kind, v})
		}
	}
	return out
}
