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

// OrgStatus is the node's organisation as it knows it.
type OrgStatus struct {
	Org     string      `json:"org"`  // the organisation's key (a peer ID); empty: none
	Name    string      `json:"name"` // its name
	Handle  string      `json:"handle"`
	Expires time.Time   `json:"expires"` // of this node's membership
	Members []OrgMember `json:"members"`
	Trusts  []OrgTrust  `json:"trusts"`
	// Contacts made through organisation trust, by peer ID → organisation.
	Contacts map[string]string `json:"contacts"`
}

// Org is what the node's organisation service offers the local API.
type Org interface {
	Publish(ctx context.Context, req OrgRecordRequest) (OrgRecordResult, error)
	Status(ctx context.Context) OrgStatus
}

// HandleOrg adds the organisation endpoints:
//
//	GET  /v1/org          OrgStatus
//	POST /v1/org/records  OrgRecordRequest → OrgRecordResult
func (s *Server) HandleOrg(o Org) {
	noBody(s, "GET /v1/org", func(r *http.Request) (OrgStatus, error) { return o.Status(r.Context()), nil })
	withBody(s, "POST /v1/org/records", false, func(r *http.Request, req OrgRecordRequest) (OrgRecordResult, error) {
		return o.Publish(r.Context(), req)
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
