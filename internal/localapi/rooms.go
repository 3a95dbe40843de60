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
)

// Rooms is what the node offers the local API about its rooms. A room is
// named by its ID or by the name of exactly one room of the node.
type Rooms interface {
	List(ctx context.Context) []RoomInfo
	Get(ctx context.Context, room string) (RoomInfo, error)
	// Log returns up to limit events in display order: the last ones, or
	// the last ones before event before.
	Log(ctx context.Context, room string, limit int, before string) ([]Event, error)
	// Tail returns newly stored events of the room until stop is called;
	// the channel closes if the reader falls too far behind.
	Tail(ctx context.Context, room string) (events <-chan Event, stop func(), err error)
	// Remove takes a member node out of the room (the creator only).
	Remove(ctx context.Context, room string, req RemoveRequest) (EventID, error)
	// Event finds an event of any room by ID.
	Event(ctx context.Context, id string) (Event, error)
}

// HandleRooms adds the room endpoints:
//
//	GET  /v1/rooms                   [RoomInfo]
//	GET  /v1/rooms/{room}            RoomInfo
//	GET  /v1/rooms/{room}/log        ?limit=N&before=ID → [Event] in display order
//	GET  /v1/rooms/{room}/tail       server-sent events, one Event per "data:" line
//	POST /v1/rooms/{room}/remove     RemoveRequest → EventID
//	GET  /v1/events/{id}             Event
//
// Rooms are created, joined, spoken in and left by agents: see HandleEdge.
func (s *Server) HandleRooms(rm Rooms) {
	noBody(s, "GET /v1/rooms", func(r *http.Request) ([]RoomInfo, error) { return orEmpty(rm.List(r.Context())), nil })
	noBody(s, "GET /v1/rooms/{room}", func(r *http.Request) (RoomInfo, error) {
		return rm.Get(r.Context(), r.PathValue("room"))
	})
	noBody(s, "GET /v1/rooms/{room}/log", func(r *http.Request) ([]Event, error) {
		limit := 100
		if v := r.URL.Query().Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxLog {
				return nil, BadRequest("limit must be 1 to %d", MaxLog)
			}
			limit = n
		}
		vs, err := rm.Log(r.Context(), r.PathValue("room"), limit, r.URL.Query().Get("before"))
		return orEmpty(vs), err
	})
	withBody(s, "POST /v1/rooms/{room}/remove", false, func(r *http.Request, req RemoveRequest) (EventID, error) {
		return rm.Remove(r.Context(), r.PathValue("room"), req)
	})
	noBody(s, "GET /v1/events/{id}", func(r *http.Request) (Event, error) {
		return rm.Event(r.Context(), r.PathValue("id"))
	})
	s.mux.HandleFunc("GET /v1/rooms/{room}/tail", func(w http.ResponseWriter, r *http.Request) {
		ch, stop, err := rm.Tail(r.Context(), r.PathValue("room"))
		if err != nil {
			WriteError(w, err)
			return
		}
		defer stop()
		s.stream(w, r, ch)
	})
}

// stream writes events as server-sent events until the client goes, the
// server shuts down or ch closes (the reader fell behind: "lagged"). When
// the server shuts down the stream ends with a "stopped" event: a client
// tells by it the node stopping from the node crashing (an end without it).
func (s *Server) stream(w http.ResponseWriter, r *http.Request, ch <-chan Event) {
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	write := func(format string, a ...any) bool {
		if _, err := fmt.Fprintf(w, format, a...); err != nil {
			return false // the client went away
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	if !write(": parley room tail\n\n") {
		return
	}
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	for {
		select {
		case <-r.Context().Done():
			if errors.Is(context.Cause(s.base), ErrStopping) {
				write("event: stopped\ndata: {}\n\n")
			} // else the client went
			return
		case <-s.done:
			write("event: stopped\ndata: {}\n\n")
			return
		case <-keepalive.C:
			if !write(": keepalive\n\n") {
				return
			}
		case v, ok := <-ch:
			if !ok {
				write("event: lagged\ndata: {}\n\n")
				return
			}
			raw, err := json.Marshal(v)
			if err != nil || !write("data: %s\n\n", raw) {
				return
			}
		}
	}
}

func roomPath(room, rest string) (string, error) {
	r, err := segment("the room", room)
	return "/v1/rooms/" + r + rest, err
}

// Rooms lists the rooms this node is in.
func (c *Client) Rooms(ctx context.Context) ([]RoomInfo, error) {
	var v []RoomInfo
	return v, c.do(ctx, "GET", "/v1/rooms", nil, &v)
}

// Room describes one room.
func (c *Client) Room(ctx context.Context, room string) (RoomInfo, error) {
	var v RoomInfo
	p, err := roomPath(room, "")
	if err != nil {
		return v, err
	}
	return v, c.do(ctx, "GET", p, nil, &v)
}

// MaxLog is the most events one read of a room's log gives.
const MaxLog = 10000

// Log reads the last limit events (before an event, if before is set);
// limit 0 reads the node's default (100), and one below 0 is refused.
func (c *Client) Log(ctx context.Context, room string, limit int, before string) ([]Event, error) {
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if before != "" {
		q.Set("before", before)
	}
	p, err := roomPath(room, "/log?"+q.Encode())
	if err != nil {
		return nil, err
	}
	var v []Event
	return v, c.do(ctx, "GET", p, nil, &v)
}

// Remove takes a member node out of a room (the room's creator only).
func (c *Client) Remove(ctx context.Context, room string, req RemoveRequest) (EventID, error) {
	var v EventID
	p, err := roomPath(room, "/remove")
	if err != nil {
		return v, err
	}
	return v, c.do(ctx, "POST", p, req, &v)
}

// Event finds an event by ID in any room.
func (c *Client) Event(ctx context.Context, id string) (Event, error) {
	var v Event
	e, err := segment("the event ID", id)
	if err != nil {
		return v, err
	}
	return v, c.do(ctx, "GET", "/v1/events/"+e, nil, &v)
}

// Tail follows a room, calling fn for each new event until ctx ends (it
// returns nil), fn returns an error, or the node ends the stream: it fell
// behind (an error saying so), or the node stopped, or crashed (a *Stopped,
// with Stream set and Err ErrStreamStopped when the node said it stops).
func (c *Client) Tail(ctx context.Context, room string, fn func(Event) error) error {
	return c.TailWithin(ctx, room, 0, fn)
}

// errNoFirstAnswer cancels a tail whose node did not answer in time.
var errNoFirstAnswer = errors.New("localapi: no first answer in time")

// TailWithin is Tail, but gives the node at most within (0: no bound) to
// answer the request: a node that takes the connection and does not answer
// (hung, stopped) makes it fail with an error wrapping
// context.DeadlineExceeded. Once the node answered, the tail follows with no
// deadline.
func (c *Client) TailWithin(ctx context.Context, room string, within time.Duration, fn func(Event) error) error {
	p, err := roomPath(room, "/tail")
	if err != nil {
		return err
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var timer *time.Timer
	if within > 0 {
		timer = time.AfterFunc(within, func() { cancel(errNoFirstAnswer) })
	}
	resp, err := c.open(rctx, "GET", p, nil)
	if timer != nil && !timer.Stop() && ctx.Err() == nil {
		// The bound ran out, before the answer or just as it came.
		if err == nil {
			resp.Body.Close()
		}
		return fmt.Errorf("localapi: GET %s: %w", p, context.DeadlineExceeded)
	}
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
			if event == "stopped" {
				return &Stopped{Method: "GET", Path: p, Err: ErrStreamStopped, Stream: true}
			}
			var v Event
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
	// The node ends a tail only with an event that says why: an end
	// without one is the node gone.
	err = sc.Err()
	switch {
	case err == nil:
		return &Stopped{Method: "GET", Path: p, Err: ErrStreamCut, Stream: true}
	case stoppedErr(ctx, err):
		return &Stopped{Method: "GET", Path: p, Err: err, Stream: true}
	}
	return fmt.Errorf("localapi: tail: %w", err)
}
