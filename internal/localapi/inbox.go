package localapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/inbox"
	"github.com/parley-mesh/parley/rooms"
)

// Inbox is what the node's agent inbox offers; *inbox.Inbox implements it.
type Inbox interface {
	Take(agent identity.AgentName) (inbox.Pending, error)
	Read(agent identity.AgentName, room identity.RoomID, limit int) ([]rooms.View, bool, error)
	Joined(agent identity.AgentName, room identity.RoomID) error
	Wait(ctx context.Context, agent identity.AgentName, wait time.Duration) (inbox.Pending, error)
	WaitReply(ctx context.Context, ask rooms.ID, wait time.Duration) (*rooms.View, error)
	Bind(session string, name, fallback identity.AgentName) (identity.AgentName, error)
}

var _ Inbox = (*inbox.Inbox)(nil)

// Finder finds an event in any room; *rooms.Manager implements it.
type Finder interface {
	Find(eid rooms.ID) (rooms.View, error)
}

// MaxWait bounds every blocking call (MCP clients time out at 60 s).
const MaxWait = 50 * time.Second

// BindRequest maps an agent session to an agent name.
type BindRequest struct {
	Session  string `json:"session"`
	Name     string `json:"name,omitempty"`     // rename the session's agent
	Fallback string `json:"fallback,omitempty"` // name for a new session
}

// BindResponse names the session's agent.
type BindResponse struct {
	Agent string `json:"agent"`
}

// ReadResponse is a page of unread events.
type ReadResponse struct {
	Messages []rooms.View `json:"messages"`
	More     bool         `json:"more"`
}

// JoinRequest marks an agent as taking part in a room.
type JoinRequest struct {
	Room string `json:"room"`
}

// ReplyResponse carries the reply to an ask, if one came in time.
type ReplyResponse struct {
	Reply *rooms.View `json:"reply"`
}

// HandleInbox adds the agent inbox endpoints:
//
//	POST /v1/sessions                  BindRequest → BindResponse
//	POST /v1/inbox/{agent}/take        → inbox.Pending (marks them delivered)
//	GET  /v1/inbox/{agent}/read        ?room=&limit= → ReadResponse
//	POST /v1/inbox/{agent}/join        JoinRequest
//	GET  /v1/inbox/{agent}/wait        ?seconds= → inbox.Pending (blocks)
//	GET  /v1/events/{id}               → rooms.View
//	GET  /v1/events/{id}/reply         ?seconds= → ReplyResponse (blocks)
func (s *Server) HandleInbox(ib Inbox, f Finder, rm Rooms) {
	agentOf := func(w http.ResponseWriter, r *http.Request) (identity.AgentName, bool) {
		a, err := identity.ParseAgentName(r.PathValue("agent"))
		if err != nil {
			WriteError(w, Errorf(http.StatusBadRequest, "bad_agent", "%v", err))
			return "", false
		}
		return a, true
	}
	waitOf := func(w http.ResponseWriter, r *http.Request) (time.Duration, bool) {
		v := r.URL.Query().Get("seconds")
		if v == "" {
			return MaxWait, true
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n < 0 || n > MaxWait.Seconds() {
			WriteError(w, Errorf(http.StatusBadRequest, "bad_wait", "seconds must be 0 to %.0f", MaxWait.Seconds()))
			return 0, false
		}
		return time.Duration(n * float64(time.Second)), true
	}
	s.mux.HandleFunc("POST /v1/sessions", func(w http.ResponseWriter, r *http.Request) {
		var req BindRequest
		if !ReadJSON(w, r, &req) {
			return
		}
		a, err := ib.Bind(req.Session, identity.AgentName(req.Name), identity.AgentName(req.Fallback))
		if err != nil {
			WriteError(w, Errorf(http.StatusBadRequest, "bad_session", "%v", err))
			return
		}
		WriteJSON(w, BindResponse{Agent: string(a)})
	})
	s.mux.HandleFunc("POST /v1/inbox/{agent}/take", func(w http.ResponseWriter, r *http.Request) {
		a, ok := agentOf(w, r)
		if !ok {
			return
		}
		p, err := ib.Take(a)
		if err != nil {
			WriteError(w, err)
			return
		}
		WriteJSON(w, p)
	})
	s.mux.HandleFunc("GET /v1/inbox/{agent}/read", func(w http.ResponseWriter, r *http.Request) {
		a, ok := agentOf(w, r)
		if !ok {
			return
		}
		var room identity.RoomID
		if v := r.URL.Query().Get("room"); v != "" {
			id, ok := resolveRoomName(w, v, rm)
			if !ok {
				return
			}
			room = id
		}
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		vs, more, err := ib.Read(a, room, limit)
		if err != nil {
			WriteError(w, roomsError(err))
			return
		}
		if vs == nil {
			vs = []rooms.View{}
		}
		WriteJSON(w, ReadResponse{Messages: vs, More: more})
	})
	s.mux.HandleFunc("POST /v1/inbox/{agent}/join", func(w http.ResponseWriter, r *http.Request) {
		a, ok := agentOf(w, r)
		var req JoinRequest
		if !ok || !ReadJSON(w, r, &req) {
			return
		}
		id, ok := resolveRoomName(w, req.Room, rm)
		if !ok {
			return
		}
		if err := ib.Joined(a, id); err != nil {
			WriteError(w, err)
			return
		}
		WriteJSON(w, struct{}{})
	})
	s.mux.HandleFunc("GET /v1/inbox/{agent}/wait", func(w http.ResponseWriter, r *http.Request) {
		a, ok := agentOf(w, r)
		if !ok {
			return
		}
		d, ok := waitOf(w, r)
		if !ok {
			return
		}
		p, err := ib.Wait(r.Context(), a, d)
		if err != nil {
			WriteError(w, roomsError(err))
			return
		}
		WriteJSON(w, p)
	})
	eventOf := func(w http.ResponseWriter, r *http.Request) (rooms.ID, bool) {
		id, err := rooms.ParseID(r.PathValue("id"))
		if err != nil {
			WriteError(w, Errorf(http.StatusBadRequest, "bad_id", "%q is not an event ID", r.PathValue("id")))
			return rooms.ID{}, false
		}
		return id, true
	}
	s.mux.HandleFunc("GET /v1/events/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := eventOf(w, r)
		if !ok {
			return
		}
		v, err := f.Find(id)
		if err != nil {
			WriteError(w, eventError(err))
			return
		}
		WriteJSON(w, v)
	})
	s.mux.HandleFunc("GET /v1/events/{id}/reply", func(w http.ResponseWriter, r *http.Request) {
		id, ok := eventOf(w, r)
		if !ok {
			return
		}
		d, ok := waitOf(w, r)
		if !ok {
			return
		}
		v, err := ib.WaitReply(r.Context(), id, d)
		if err != nil {
			WriteError(w, eventError(err))
			return
		}
		WriteJSON(w, ReplyResponse{Reply: v})
	})
}

func eventError(err error) error {
	if errors.Is(err, rooms.ErrUnknownEvent) {
		return Errorf(http.StatusNotFound, "unknown_event", "%v", err)
	}
	return roomsError(err)
}

// resolveRoomName is resolveRoom for a room named outside the path.
func resolveRoomName(w http.ResponseWriter, s string, rm Rooms) (identity.RoomID, bool) {
	r := &http.Request{}
	r.SetPathValue("room", s)
	return resolveRoom(w, r, rm)
}

// Client side.

// Bind maps a session to an agent.
func (c *Client) Bind(ctx context.Context, req BindRequest) (BindResponse, error) {
	var v BindResponse
	return v, c.Do(ctx, "POST", "/v1/sessions", req, &v)
}

// Take returns and marks an agent's pending items.
func (c *Client) Take(ctx context.Context, agent string) (inbox.Pending, error) {
	var v inbox.Pending
	return v, c.Do(ctx, "POST", "/v1/inbox/"+url.PathEscape(agent)+"/take", nil, &v)
}

// ReadInbox reads unread events.
func (c *Client) ReadInbox(ctx context.Context, agent, room string, limit int) (ReadResponse, error) {
	q := url.Values{}
	if room != "" {
		q.Set("room", room)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var v ReadResponse
	return v, c.Do(ctx, "GET", "/v1/inbox/"+url.PathEscape(agent)+"/read?"+q.Encode(), nil, &v)
}

// JoinInbox marks an agent as taking part in a room.
func (c *Client) JoinInbox(ctx context.Context, agent, room string) error {
	return c.Do(ctx, "POST", "/v1/inbox/"+url.PathEscape(agent)+"/join", JoinRequest{Room: room}, nil)
}

// WaitInbox blocks for an agent's next pending items.
func (c *Client) WaitInbox(ctx context.Context, agent string, wait time.Duration) (inbox.Pending, error) {
	var v inbox.Pending
	return v, c.Do(ctx, "GET", "/v1/inbox/"+url.PathEscape(agent)+"/wait?seconds="+strconv.FormatFloat(wait.Seconds(), 'f', 3, 64), nil, &v)
}

// Event finds an event by ID in any room.
func (c *Client) Event(ctx context.Context, id string) (rooms.View, error) {
	var v rooms.View
	return v, c.Do(ctx, "GET", "/v1/events/"+url.PathEscape(id), nil, &v)
}

// WaitReply blocks for the reply to an ask.
func (c *Client) WaitReply(ctx context.Context, ask string, wait time.Duration) (ReplyResponse, error) {
	var v ReplyResponse
	return v, c.Do(ctx, "GET", "/v1/events/"+url.PathEscape(ask)+"/reply?seconds="+strconv.FormatFloat(wait.Seconds(), 'f', 3, 64), nil, &v)
}
