package localapi

import (
	"context"
	"net/http"
	"time"
)

// OrgRecordRequest hands the node a record signed by an organisation's key
// (the command line signs it; the key never reaches the node).
type OrgRecordRequest struct {
	Record []byte `json:"record"` // the sealed record (base64 in JSON)
}

// OrgRecordResult says what the node did with a record.
type OrgRecordResult struct {
	Org       string `json:"org"`
	Kind      string `json:"kind"`
	Subject   string `json:"subject"`
	Delivered int    `json:"delivered"` // peers that took it
}

// OrgMember is one membership as `parley org status` shows it.
type OrgMember struct {
	PeerID  string    `json:"peer_id"`
	Handle  string    `json:"handle"`
	Expires time.Time `json:"expires"`
}

// OrgTrust is one trust of the node's organisation in another.
type OrgTrust struct {
	Org     string    `json:"org"`
	Name    string    `json:"name"`
	Trusted bool      `json:"trusted"` // false: withdrawn
	Scopes  []string  `json:"scopes"`
	Expires time.Time `json:"expires"`
}

// OrgOffer is a membership of this node that a contact pushed, waiting
// for the user: `parley org accept ORGKEY` or `parley org decline ORGKEY`.
type OrgOffer struct {
	Org     string    `json:"org"` // the organisation's key (a peer ID)
	Name    string    `json:"name"`
	Handle  string    `json:"handle"`
	From    string    `json:"from"` // the contact that pushed it
	Expires time.Time `json:"expires"`
	Trusts  []string  `json:"trusts"` // organisations it trusts, pushed with it
}

// OrgRequest names an organisation by its key.
type OrgRequest struct {
	Org string `json:"org"`
}

// OrgStatus is the node's organisation as it knows it.
type OrgStatus struct {
	Org     string      `json:"org"`  // the organisation's key (a peer ID); empty: none
	Name    string      `json:"name"` // its name
	Handle  string      `json:"handle"`
	Expires time.Time   `json:"expires,omitzero"` // of this node's membership (none: left out)
	Members []OrgMember `json:"members"`
	Trusts  []OrgTrust  `json:"trusts"`
	// Contacts made through organisation trust, by peer ID → organisation.
	Contacts map[string]string `json:"contacts"`
	// Memberships contacts pushed, waiting for the user.
	Offers []OrgOffer `json:"offers"`
}

// Org is what the node's organisation service offers the local API.
type Org interface {
	Publish(ctx context.Context, req OrgRecordRequest) (OrgRecordResult, error)
	Status(ctx context.Context) OrgStatus
	Accept(ctx context.Context, req OrgRequest) (OrgStatus, error)
	Decline(ctx context.Context, req OrgRequest) (OrgStatus, error)
}

// HandleOrg adds the organisation endpoints:
//
//	GET  /v1/org          OrgStatus
//	POST /v1/org/records  OrgRecordRequest → OrgRecordResult
//	POST /v1/org/accept   OrgRequest → OrgStatus (a pushed membership taken)
//	POST /v1/org/decline  OrgRequest → OrgStatus (a pushed membership dropped)
func (s *Server) HandleOrg(o Org) {
	noBody(s, "GET /v1/org", func(r *http.Request) (OrgStatus, error) { return o.Status(r.Context()), nil })
	withBody(s, "POST /v1/org/records", false, func(r *http.Request, req OrgRecordRequest) (OrgRecordResult, error) {
		return o.Publish(r.Context(), req)
	})
	withBody(s, "POST /v1/org/accept", false, func(r *http.Request, req OrgRequest) (OrgStatus, error) {
		return o.Accept(r.Context(), req)
	})
	withBody(s, "POST /v1/org/decline", false, func(r *http.Request, req OrgRequest) (OrgStatus, error) {
		return o.Decline(r.Context(), req)
	})
}

// OrgStatus returns the node's organisation.
func (c *Client) OrgStatus(ctx context.Context) (OrgStatus, error) {
	var v OrgStatus
	return v, c.do(ctx, "GET", "/v1/org", nil, &v)
}

// OrgPublish hands the node a signed organisation record.
func (c *Client) OrgPublish(ctx context.Context, record []byte) (OrgRecordResult, error) {
	var v OrgRecordResult
	return v, c.do(ctx, "POST", "/v1/org/records", OrgRecordRequest{Record: record}, &v)
}

// OrgAccept takes the membership of org a contact pushed.
func (c *Client) OrgAccept(ctx context.Context, org string) (OrgStatus, error) {
	var v OrgStatus
	return v, c.do(ctx, "POST", "/v1/org/accept", OrgRequest{Org: org}, &v)
}

// OrgDecline drops the membership of org a contact pushed.
func (c *Client) OrgDecline(ctx context.Context, org string) (OrgStatus, error) {
	var v OrgStatus
	return v, c.do(ctx, "POST", "/v1/org/decline", OrgRequest{Org: org}, &v)
}
