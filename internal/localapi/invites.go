package localapi

import (
	"context"
	"net/http"
	"time"
)

// WaitingInvite is an invite from a node that is not a contact, waiting
// for the user's answer. ID is the room's ID.
type WaitingInvite struct {
	ID       string    `json:"id"`
	RoomName string    `json:"room_name"` // as the inviter gave it
	Inviter  string    `json:"inviter"`   // peer ID
	At       time.Time `json:"at"`
	Expires  time.Time `json:"expires"`
	// ToldBack: the inviter tells this node back a room it says this node
	// is in (this node's home was put back from an older copy), proven by
	// an event of this node's there. Accepting opens it provisionally,
	// until a member's catch-up shows this node in.
	ToldBack bool `json:"told_back,omitempty"`
}

// InviteRef names a waiting invite: the room ID, or a unique prefix of it.
type InviteRef struct {
	ID string `json:"id"`
}

// InviteAnswer is what accepting or declining an invite did.
type InviteAnswer struct {
	ID       string `json:"id"`
	Accepted bool   `json:"accepted"`
}

// Invites is what the node offers for invites that wait for the user.
type Invites interface {
	List(ctx context.Context) []WaitingInvite
	Accept(ctx context.Context, ref string) (InviteAnswer, error)
	Decline(ctx context.Context, ref string) (InviteAnswer, error)
}

// HandleInvites adds the endpoints of waiting invites:
//
//	GET  /v1/invites          [WaitingInvite]
//	POST /v1/invites/accept   InviteRef → InviteAnswer
//	POST /v1/invites/decline  InviteRef → InviteAnswer
func (s *Server) HandleInvites(is Invites) {
	noBody(s, "GET /v1/invites", func(r *http.Request) ([]WaitingInvite, error) { return orEmpty(is.List(r.Context())), nil })
	withBody(s, "POST /v1/invites/accept", false, func(r *http.Request, req InviteRef) (InviteAnswer, error) {
		return is.Accept(r.Context(), req.ID)
	})
	withBody(s, "POST /v1/invites/decline", false, func(r *http.Request, req InviteRef) (InviteAnswer, error) {
		return is.Decline(r.Context(), req.ID)
	})
}

// Invites lists the invites waiting for the user's answer.
func (c *Client) Invites(ctx context.Context) ([]WaitingInvite, error) {
	var v []WaitingInvite
	return v, c.do(ctx, "GET", "/v1/invites", nil, &v)
}

// InviteAccept accepts a waiting invite: the node joins the room.
func (c *Client) InviteAccept(ctx context.Context, id string) (InviteAnswer, error) {
	var v InviteAnswer
	return v, c.do(ctx, "POST", "/v1/invites/accept", InviteRef{ID: id}, &v)
}

// InviteDecline declines a waiting invite.
func (c *Client) InviteDecline(ctx context.Context, id string) (InviteAnswer, error) {
	var v InviteAnswer
	return v, c.do(ctx, "POST", "/v1/invites/decline", InviteRef{ID: id}, &v)
}
