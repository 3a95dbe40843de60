package localapi

import (
	"context"
	"net/http"
	"time"
)

// NameEntry is a node as people read it: its handle, and the name it shows
// as (the handle, handle~SUFFIX when two nodes share it).
type NameEntry struct {
	PeerID string `json:"peer_id"`
	Handle string `json:"handle"`
	Name   string `json:"name"`
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
