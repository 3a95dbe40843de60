package localapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/rooms"
)

// Rooms is what the node's rooms service offers the local API;
// *rooms.Manager implements it.
type Rooms interface {
	Create(ctx context.Context, name string, agent identity.AgentName) (identity.RoomID, error)
	List() []rooms.Info
	Get(id identity.RoomID) (rooms.Info, error)
	Invite(ctx context.Context, id identity.RoomID, target peer.ID, agent identity.AgentName) (rooms.ID, error)
	Say(ctx context.Context, id identity.RoomID, a rooms.SayArgs) (rooms.ID, error)
	Leave(ctx context.Context, id identity.RoomID, agent identity.AgentName) (rooms.ID, error)
	Log(id identity.RoomID, limit int, before *rooms.ID) ([]rooms.View, error)
	Subscribe(id identity.RoomID, buf int) (<-chan rooms.View, func(), error)
}

var _ Rooms = (*rooms.Manager)(nil)

// CreateRoomRequest creates a room.
type CreateRoomRequest struct {
	Name  string `json:"name"`
	Agent string `json:"agent,omitempty"`
}

// CreateRoomResponse names the new room.
type CreateRoomResponse struct {
	RoomID string `json:"room_id"`
}

// InviteRequest invites a node into a room.
type InviteRequest struct {
	PeerID string `json:"peer_id"`
	Agent  string `json:"agent,omitempty"`
}

// SayRequest posts a message.
type SayRequest struct {
	Text    string `json:"text"`
	Agent   string `json:"agent,omitempty"`
	ReplyTo string `json:"reply_to,omitempty"`
	To      string `json:"to,omitempty"`
}

// LeaveRequest makes an agent leave a room.
type LeaveRequest struct {
	Agent string `json:"agent,omitempty"`
}

// EventID names a posted event.
type EventID struct {
	ID string `json:"id"`
}

// HandleRooms adds the room endpoints:
//
//	POST /v1/rooms                   {"name"} → {"room_id"}
//	GET  /v1/rooms                   [Info]
//	GET  /v1/rooms/{room}            Info
//	POST /v1/rooms/{room}/invite     {"peer_id"} → {"id"}
//	POST /v1/rooms/{room}/say        {"text","agent","reply_to","to"} → {"id"}
//	POST /v1/rooms/{room}/leave      {"agent"} → {"id"}
//	GET  /v1/rooms/{room}/log        ?limit=N&before=ID → [View] in display order
//	GET  /v1/rooms/{room}/tail       server-sent events, one View per "data:" line
//
// {room} is a room ID or the name of exactly one room.
func (s *Server) HandleRooms(rm Rooms) {
	s.mux.HandleFunc("POST /v1/rooms", func(w http.ResponseWriter, r *http.Request) {
		var req CreateRoomRequest
		if !ReadJSON(w, r, &req) {
			return
		}
		agent, err := agentOrHuman(req.Agent)
		if err != nil {
			WriteError(w, err)
			return
		}
		if strings.TrimSpace(req.Name) == "" {
			WriteError(w, Errorf(http.StatusBadRequest, "bad_request", "a room needs a name"))
			return
		}
		id, err := rm.Create(r.Context(), req.Name, agent)
		if err != nil {
			WriteError(w, roomsError(err))
			return
		}
		WriteJSON(w, CreateRoomResponse{RoomID: string(id)})
	})
	s.mux.HandleFunc("GET /v1/rooms", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, rm.List())
	})
	s.mux.HandleFunc("GET /v1/rooms/{room}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := resolveRoom(w, r, rm)
		if !ok {
			return
		}
		info, err := rm.Get(id)
		if err != nil {
			WriteError(w, roomsError(err))
			return
		}
		WriteJSON(w, info)
	})
	s.mux.HandleFunc("POST /v1/rooms/{room}/invite", func(w http.ResponseWriter, r *http.Request) {
		var req InviteRequest
		id, ok := resolveRoom(w, r, rm)
		if !ok || !ReadJSON(w, r, &req) {
			return
		}
		target, err := peer.Decode(req.PeerID)
		if err != nil {
			WriteError(w, Errorf(http.StatusBadRequest, "bad_peer", "%q is not a peer ID: %v", req.PeerID, err))
			return
		}
		agent, err := agentOrHuman(req.Agent)
		if err != nil {
			WriteError(w, err)
			return
		}
		eid, err := rm.Invite(r.Context(), id, target, agent)
		if err != nil {
			WriteError(w, roomsError(err))
			return
		}
		WriteJSON(w, EventID{ID: eid.String()})
	})
	s.mux.HandleFunc("POST /v1/rooms/{room}/say", func(w http.ResponseWriter, r *http.Request) {
		var req SayRequest
		id, ok := resolveRoom(w, r, rm)
		if !ok || !ReadJSON(w, r, &req) {
			return
		}
		agent, err := agentOrHuman(req.Agent)
		if err != nil {
			WriteError(w, err)
			return
		}
		args := rooms.SayArgs{Agent: agent, Text: req.Text, To: req.To}
		if req.ReplyTo != "" {
			rid, err := rooms.ParseID(req.ReplyTo)
			if err != nil {
				WriteError(w, Errorf(http.StatusBadRequest, "bad_reply_to", "reply_to %q is not an event ID", req.ReplyTo))
				return
			}
			args.ReplyTo = &rid
		}
		if req.To != "" {
			a, err := identity.ParseAgentAddr(req.To)
			if err != nil {
				WriteError(w, Errorf(http.StatusBadRequest, "bad_to", "to: %v (use NAME or NAME@PEER_ID)", err))
				return
			}
			args.To = a.String()
		}
		eid, err := rm.Say(r.Context(), id, args)
		if err != nil {
			WriteError(w, roomsError(err))
			return
		}
		WriteJSON(w, EventID{ID: eid.String()})
	})
	s.mux.HandleFunc("POST /v1/rooms/{room}/leave", func(w http.ResponseWriter, r *http.Request) {
		var req LeaveRequest
		id, ok := resolveRoom(w, r, rm)
		if !ok || !ReadJSON(w, r, &req) {
			return
		}
		agent, err := agentOrHuman(req.Agent)
		if err != nil {
			WriteError(w, err)
			return
		}
		eid, err := rm.Leave(r.Context(), id, agent)
		if err != nil {
			WriteError(w, roomsError(err))
			return
		}
		WriteJSON(w, EventID{ID: eid.String()})
	})
	s.mux.HandleFunc("GET /v1/rooms/{room}/log", func(w http.ResponseWriter, r *http.Request) {
		id, ok := resolveRoom(w, r, rm)
		if !ok {
			return
		}
		limit := 100
		if v := r.URL.Query().Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 10000 {
				WriteError(w, Errorf(http.StatusBadRequest, "bad_limit", "limit must be 1 to 10000"))
				return
			}
			limit = n
		}
		var before *rooms.ID
		if v := r.URL.Query().Get("before"); v != "" {
			b, err := rooms.ParseID(v)
			if err != nil {
				WriteError(w, Errorf(http.StatusBadRequest, "bad_before", "before %q is not an event ID", v))
				return
			}
			before = &b
		}
		vs, err := rm.Log(id, limit, before)
		if err != nil {
			WriteError(w, roomsError(err))
			return
		}
		WriteJSON(w, vs)
	})
	s.mux.HandleFunc("GET /v1/rooms/{room}/tail", func(w http.ResponseWriter, r *http.Request) {
		id, ok := resolveRoom(w, r, rm)
		if !ok {
			return
		}
		ch, stop, err := rm.Subscribe(id, 4096)
		if err != nil {
			WriteError(w, roomsError(err))
			return
		}
		defer stop()
		fl, _ := w.(http.Flusher)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, ": parley room tail\n\n")
		if fl != nil {
			fl.Flush()
		}
		keepalive := time.NewTicker(15 * time.Second)
		defer keepalive.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-s.done:
				return
			case <-keepalive.C:
				fmt.Fprint(w, ": keepalive\n\n")
			case v, ok := <-ch:
				if !ok {
					fmt.Fprint(w, "event: lagged\ndata: {}\n\n")
					return
				}
				raw, _ := json.Marshal(v)
				fmt.Fprintf(w, "data: %s\n\n", raw)
			}
			if fl != nil {
				fl.Flush()
			}
		}
	})
}

func agentOrHuman(s string) (identity.AgentName, error) {
	if s == "" {
		return identity.HumanAgent, nil
	}
	a, err := identity.ParseAgentName(s)
	if err != nil {
		return "", Errorf(http.StatusBadRequest, "bad_agent", "%v", err)
	}
	return a, nil
}

// resolveRoom reads {room}: a room ID, or the name of exactly one room.
func resolveRoom(w http.ResponseWriter, r *http.Request, rm Rooms) (identity.RoomID, bool) {
	s := r.PathValue("room")
	if id, err := identity.ParseRoomID(s); err == nil {
		return id, true
	}
	var found []identity.RoomID
	for _, in := range rm.List() {
		if in.Name == s {
			found = append(found, in.ID)
		}
	}
	switch len(found) {
	case 1:
		return found[0], true
	case 0:
		WriteError(w, Errorf(http.StatusNotFound, "unknown_room", "no room %q on this node (see `parley room list`)", s))
	default:
		WriteError(w, Errorf(http.StatusConflict, "ambiguous_room", "%d rooms are named %q; use the room ID (see `parley room list`)", len(found), s))
	}
	return "", false
}

func roomsError(err error) error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, rooms.ErrUnknownRoom):
		return Errorf(http.StatusNotFound, "unknown_room", "%v", err)
	case errors.Is(err, rooms.ErrNotMember):
		return Errorf(http.StatusForbidden, "not_member", "%v", err)
	case errors.Is(err, rooms.ErrTextTooLong), errors.Is(err, rooms.ErrTooLarge):
		return Errorf(http.StatusRequestEntityTooLarge, "too_large", "%v", err)
	case errors.Is(err, rooms.ErrInviteRefused):
		return Errorf(http.StatusForbidden, "invite_refused", "%v", err)
	case errors.Is(err, rooms.ErrMalformed):
		return Errorf(http.StatusBadRequest, "bad_request", "%v", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return Errorf(http.StatusGatewayTimeout, "timeout", "%v", err)
	}
	return err
}

// Client side.

func roomPath(room string, rest string) string {
	return "/v1/rooms/" + url.PathEscape(room) + rest
}

// CreateRoom creates a room.
func (c *Client) CreateRoom(ctx context.Context, name, agent string) (CreateRoomResponse, error) {
	var v CreateRoomResponse
	return v, c.Do(ctx, "POST", "/v1/rooms", CreateRoomRequest{Name: name, Agent: agent}, &v)
}

// Rooms lists rooms.
func (c *Client) Rooms(ctx context.Context) ([]rooms.Info, error) {
	var v []rooms.Info
	return v, c.Do(ctx, "GET", "/v1/rooms", nil, &v)
}

// Room describes one room.
func (c *Client) Room(ctx context.Context, room string) (rooms.Info, error) {
	var v rooms.Info
	return v, c.Do(ctx, "GET", roomPath(room, ""), nil, &v)
}

// Invite invites a node.
func (c *Client) Invite(ctx context.Context, room, peerID, agent string) (EventID, error) {
	var v EventID
	return v, c.Do(ctx, "POST", roomPath(room, "/invite"), InviteRequest{PeerID: peerID, Agent: agent}, &v)
}

// Say posts a message.
func (c *Client) Say(ctx context.Context, room string, req SayRequest) (EventID, error) {
	var v EventID
	return v, c.Do(ctx, "POST", roomPath(room, "/say"), req, &v)
}

// Leave makes an agent leave.
func (c *Client) Leave(ctx context.Context, room, agent string) (EventID, error) {
	var v EventID
	return v, c.Do(ctx, "POST", roomPath(room, "/leave"), LeaveRequest{Agent: agent}, &v)
}

// Log reads the last limit events (before an event, if before is set).
func (c *Client) Log(ctx context.Context, room string, limit int, before string) ([]rooms.View, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if before != "" {
		q.Set("before", before)
	}
	var v []rooms.View
	return v, c.Do(ctx, "GET", roomPath(room, "/log?"+q.Encode()), nil, &v)
}

// Tail follows a room, calling fn for each new event until ctx ends, fn
// returns an error, or the node ends the stream.
func (c *Client) Tail(ctx context.Context, room string, fn func(rooms.View) error) error {
	resp, err := c.Open(ctx, "GET", roomPath(room, "/tail"), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if event == "lagged" {
				return errors.New("localapi: tail fell behind; run it again (the log has everything)")
			}
			var v rooms.View
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &v); err != nil {
				return fmt.Errorf("localapi: tail: %w", err)
			}
			if err := fn(v); err != nil {
				return err
			}
		case line == "":
			event = ""
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return sc.Err()
}
