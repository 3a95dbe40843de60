package localapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/contacts"
)

// Contacts is what the node's contact service offers the local API;
// *contacts.Service implements it.
type Contacts interface {
	Request(ctx context.Context, target peer.AddrInfo, note string) (contacts.Result, error)
	Approve(ctx context.Context, ref string, validFor time.Duration) (contacts.Result, error)
	Deny(ctx context.Context, ref string) (contacts.Result, error)
	Revoke(ctx context.Context, ref string) (contacts.Result, error)
	List() []contacts.Entry
}

var _ Contacts = (*contacts.Service)(nil)

// ContactRequest asks a node to become a contact.
type ContactRequest struct {
	Target string `json:"target"` // peer ID, or multiaddr ending in /p2p/PEER_ID
	Note   string `json:"note,omitempty"`
}

// ContactApproveRequest approves a pending request.
type ContactApproveRequest struct {
	ID      string `json:"id"`                // request ID, or the requester's peer ID
	Expires string `json:"expires,omitempty"` // validity: "90d", "36h"; empty: a year
}

// ContactRef names a contact: a request ID or a peer ID.
type ContactRef struct {
	ID     string `json:"id,omitempty"`
	PeerID string `json:"peer_id,omitempty"`
}

func (r ContactRef) ref() string {
	if r.PeerID != "" {
		return r.PeerID
	}
	return r.ID
}

// HandleContacts adds the contact endpoints:
//
//	GET  /v1/contacts           [Entry]
//	POST /v1/contacts/request   {"target","note"} → Result
//	POST /v1/contacts/approve   {"id","expires"} → Result
//	POST /v1/contacts/deny      {"id"} → Result
//	POST /v1/contacts/revoke    {"peer_id"} (or {"id"}) → Result
func (s *Server) HandleContacts(cs Contacts) {
	s.mux.HandleFunc("GET /v1/contacts", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, cs.List())
	})
	s.mux.HandleFunc("POST /v1/contacts/request", func(w http.ResponseWriter, r *http.Request) {
		var req ContactRequest
		if !ReadJSON(w, r, &req) {
			return
		}
		ai, err := contacts.ParseTarget(req.Target)
		if err != nil {
			WriteError(w, contactsError(err))
			return
		}
		writeResult(w)(cs.Request(r.Context(), ai, req.Note))
	})
	s.mux.HandleFunc("POST /v1/contacts/approve", func(w http.ResponseWriter, r *http.Request) {
		var req ContactApproveRequest
		if !ReadJSON(w, r, &req) {
			return
		}
		d, err := contacts.ParseExpires(req.Expires)
		if err != nil {
			WriteError(w, contactsError(err))
			return
		}
		writeResult(w)(cs.Approve(r.Context(), req.ID, d))
	})
	s.mux.HandleFunc("POST /v1/contacts/deny", func(w http.ResponseWriter, r *http.Request) {
		var req ContactRef
		if !ReadJSON(w, r, &req) {
			return
		}
		writeResult(w)(cs.Deny(r.Context(), req.ref()))
	})
	s.mux.HandleFunc("POST /v1/contacts/revoke", func(w http.ResponseWriter, r *http.Request) {
		var req ContactRef
		if !ReadJSON(w, r, &req) {
			return
		}
		writeResult(w)(cs.Revoke(r.Context(), req.ref()))
	})
}

func writeResult(w http.ResponseWriter) func(contacts.Result, error) {
	return func(res contacts.Result, err error) {
		if err != nil {
			WriteError(w, contactsError(err))
			return
		}
		WriteJSON(w, res)
	}
}

// contactsError gives contact errors an HTTP status and a code.
func contactsError(err error) error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, consent.ErrRemote):
		return Errorf(http.StatusBadGateway, "peer_refused", "%v", err)
	case errors.Is(err, contacts.ErrUnreachable):
		return Errorf(http.StatusBadGateway, "unreachable", "%v", err)
	case errors.Is(err, contacts.ErrUnknown), errors.Is(err, consent.ErrNotFound), errors.Is(err, consent.ErrNoContact):
		return Errorf(http.StatusNotFound, "not_found", "%v", err)
	case errors.Is(err, consent.ErrTooLong):
		return Errorf(http.StatusBadRequest, "too_long", "%v", err)
	case errors.Is(err, contacts.ErrBadInput), errors.Is(err, consent.ErrMalformed), errors.Is(err, consent.ErrWrongPeers):
		return Errorf(http.StatusBadRequest, "bad_request", "%v", err)
	case errors.Is(err, consent.ErrAlreadyContact), errors.Is(err, consent.ErrState):
		return Errorf(http.StatusConflict, "conflict", "%v", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return Errorf(http.StatusGatewayTimeout, "timeout", "%v", err)
	}
	return err
}

// Client side.

// Contacts lists the node's contacts.
func (c *Client) Contacts(ctx context.Context) ([]contacts.Entry, error) {
	var v []contacts.Entry
	return v, c.Do(ctx, "GET", "/v1/contacts", nil, &v)
}

// ContactRequest asks target (a peer ID or a multiaddr) to become a contact.
func (c *Client) ContactRequest(ctx context.Context, target, note string) (contacts.Result, error) {
	var v contacts.Result
	return v, c.Do(ctx, "POST", "/v1/contacts/request", ContactRequest{Target: target, Note: note}, &v)
}

// ContactApprove approves a pending request (its ID or the requester's peer
// ID); expires is "90d", "36h" or empty for the default.
func (c *Client) ContactApprove(ctx context.Context, id, expires string) (contacts.Result, error) {
	var v contacts.Result
	return v, c.Do(ctx, "POST", "/v1/contacts/approve", ContactApproveRequest{ID: id, Expires: expires}, &v)
}

// ContactDeny denies a pending request.
func (c *Client) ContactDeny(ctx context.Context, id string) (contacts.Result, error) {
	var v contacts.Result
	return v, c.Do(ctx, "POST", "/v1/contacts/deny", ContactRef{ID: id}, &v)
}

// ContactRevoke revokes a contact (its peer ID, or a request ID).
func (c *Client) ContactRevoke(ctx context.Context, peerID string) (contacts.Result, error) {
	var v contacts.Result
	return v, c.Do(ctx, "POST", "/v1/contacts/revoke", ContactRef{PeerID: peerID}, &v)
}
