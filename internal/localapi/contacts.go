package localapi

import (
	"context"
	"net/http"
)

// Contacts is what the node's contact service offers the local API.
type Contacts interface {
	Request(ctx context.Context, req ContactRequest) (ContactResult, error)
	Approve(ctx context.Context, req ContactApproveRequest) (ContactResult, error)
	Deny(ctx context.Context, ref string) (ContactResult, error)
	Revoke(ctx context.Context, ref string) (ContactResult, error)
	List(ctx context.Context) []ContactEntry
}

// HandleContacts adds the contact endpoints:
//
//	GET  /v1/contacts           [ContactEntry]
//	POST /v1/contacts/request   ContactRequest → ContactResult
//	POST /v1/contacts/approve   ContactApproveRequest → ContactResult
//	POST /v1/contacts/deny      ContactRef → ContactResult
//	POST /v1/contacts/revoke    ContactRef (the peer ID) → ContactResult
func (s *Server) HandleContacts(cs Contacts) {
	noBody(s, "GET /v1/contacts", func(r *http.Request) ([]ContactEntry, error) { return orEmpty(cs.List(r.Context())), nil })
	withBody(s, "POST /v1/contacts/request", false, func(r *http.Request, req ContactRequest) (ContactResult, error) {
		return cs.Request(r.Context(), req)
	})
	withBody(s, "POST /v1/contacts/approve", false, func(r *http.Request, req ContactApproveRequest) (ContactResult, error) {
		return cs.Approve(r.Context(), req)
	})
	withBody(s, "POST /v1/contacts/deny", false, func(r *http.Request, req ContactRef) (ContactResult, error) {
		return cs.Deny(r.Context(), req.Ref())
	})
	withBody(s, "POST /v1/contacts/revoke", false, func(r *http.Request, req ContactRef) (ContactResult, error) {
		return cs.Revoke(r.Context(), req.Ref())
	})
}

// Contacts lists the node's contacts.
func (c *Client) Contacts(ctx context.Context) ([]ContactEntry, error) {
	var v []ContactEntry
	return v, c.do(ctx, "GET", "/v1/contacts", nil, &v)
}

// ContactRequest asks target (a peer ID or a multiaddr) to become a contact.
func (c *Client) ContactRequest(ctx context.Context, target, note string) (ContactResult, error) {
	var v ContactResult
	return v, c.do(ctx, "POST", "/v1/contacts/request", ContactRequest{Target: target, Note: note}, &v)
}

// ContactApprove approves a pending request (its ID or the requester's peer
// ID); expires is "90d", "36h" or empty for the default.
func (c *Client) ContactApprove(ctx context.Context, id, expires string) (ContactResult, error) {
	var v ContactResult
	return v, c.do(ctx, "POST", "/v1/contacts/approve", ContactApproveRequest{ID: id, Expires: expires}, &v)
}

// ContactDeny denies a pending request.
func (c *Client) ContactDeny(ctx context.Context, id string) (ContactResult, error) {
	var v ContactResult
	return v, c.do(ctx, "POST", "/v1/contacts/deny", ContactRef{ID: id}, &v)
}

// ContactRevoke revokes a contact (its peer ID, or a request ID).
func (c *Client) ContactRevoke(ctx context.Context, peerID string) (ContactResult, error) {
	var v ContactResult
	return v, c.do(ctx, "POST", "/v1/contacts/revoke", ContactRef{PeerID: peerID}, &v)
}
