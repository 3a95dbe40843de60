package localapi

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode"
)

// NameEntry is a node as people read it: its handle, and the name it shows
// as (the handle, handle~SUFFIX when two nodes share it).
type NameEntry struct {
	PeerID string `json:"peer_id"`
	Handle string `json:"handle"`
	Name   string `json:"name"`
	// LikeSelf is set for a node whose handle reads as this node's (or as
	// "here" or "you"): its name has its peer ID's tail.
	LikeSelf bool `json:"like_self,omitempty"`
	// Org is the organisation membership the node's card shows, checked
	// by this node (its organisation's signature, for this node, live, not
	// revoked); absent without one.
	Org *Membership `json:"org,omitempty"`
}

// Membership is a checked organisation membership certificate.
type Membership struct {
	OrgID string    `json:"org_id"` // the organisation key's peer ID
	Name  string    `json:"name"`   // the organisation's name
	Until time.Time `json:"until"`
}

// Names lists the nodes whose handle this node knows.
type Names interface {
	Names(ctx context.Context) []NameEntry
}

// HandleNames adds:
//
//	GET /v1/names  → [NameEntry] (this node's and every node whose handle it knows)
func (s *Server) HandleNames(n Names) {
	noBody(s, "GET /v1/names", func(r *http.Request) ([]NameEntry, error) { return orEmpty(n.Names(r.Context())), nil })
}

// Names lists the nodes whose handle the node knows, with the names they
// show as.
func (c *Client) Names(ctx context.Context) ([]NameEntry, error) {
	v := []NameEntry{}
	return v, c.do(ctx, "GET", "/v1/names", nil, &v)
}

// NameBook turns peer IDs into the names people read. The zero value
// knows no names.
type NameBook map[string]string

// NewNameBook indexes entries by peer ID.
func NewNameBook(es []NameEntry) NameBook {
	b := make(NameBook, len(es))
	for _, e := range es {
		b[e.PeerID] = e.Name
	}
	return b
}

// Node is how peer shows: its name, or … and the last 8 characters of its
// ID when its handle is not known.
func (b NameBook) Node(peer string) string {
	if n, ok := b[peer]; ok {
		return n
	}
	if len(peer) > 12 {
		return "…" + peer[len(peer)-8:]
	}
	return peer
}

// Agent is how an agent address NAME@PEER_ID shows: NAME@name-of-node.
// Anything else is returned as it is.
func (b NameBook) Agent(addr string) string {
	for i := 0; i < len(addr); i++ {
		if addr[i] == '@' {
			return addr[:i+1] + b.Node(addr[i+1:])
		}
	}
	return addr
}

// addrPeer is a peer ID after the @ of an agent address in a text.
var addrPeer = regexp.MustCompile(`@(12D3KooW[1-9A-HJ-NP-Za-km-z]{44})`)

// Text writes the agent addresses NAME@PEER_ID in s as people read them,
// NAME@name-of-node, where the node's name is known; the agent edge takes
// both back.
func (b NameBook) Text(s string) string {
	if len(b) == 0 {
		return s
	}
	return addrPeer.ReplaceAllStringFunc(s, func(m string) string {
		if n, ok := b[m[1:]]; ok && addressable(n) {
			return "@" + n
		}
		return m
	})
}

// addressable reports whether a node's name can stand in an agent address
// that is copied back (NAME@name): no space or '@' in it, and nothing that
// reads as a peer ID, which a handle may be made to look like.
func addressable(n string) bool {
	return n != "" && !strings.ContainsFunc(n, func(r rune) bool { return r == '@' || unicode.IsSpace(r) }) &&
		!strings.HasPrefix(n, "12D3Koo") && !strings.HasPrefix(n, "Qm")
}

// Peers returns the peer IDs after an @ in s.
func Peers(s string) []string {
	var out []string
	for _, m := range addrPeer.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}
