package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
)

// keepAlive is how often an idle stream sends a comment line.
const keepAlive = 15 * time.Second

// coalesce is the least time between two reads of the rooms: a flood is sent
// in batches, not one event at a time.
const coalesce = 50 * time.Millisecond

// stream is one open page's stream.
type stream struct {
	s       *Server
	w       http.ResponseWriter
	rc      *http.ResponseController
	flush   func()
	ctx     context.Context
	cursors map[string]uint64 // room → arrival sent up to
	rooms   []byte            // the room list last sent
	panels  map[string][]byte // panel → JSON last sent
}

func (s *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		localapi.WriteError(w, fmt.Errorf("ui: streaming not supported"))
		return
	}
	// The stream lasts as long as its page: its write deadline moves before
	// each write (the server's would end it writeTimeout after it began),
	// so only a page that stops reading lets it go.
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		// The pattern "GET /ui/stream" takes HEAD too. A HEAD's body is
		// discarded, so no write would ever fail: streaming into it held the
		// connection for as long as it stayed open, and the client's next
		// request on it waited for ever. A HEAD gets the headers alone.
		return
	}
	st := &stream{s: s, w: w, rc: rc, flush: fl.Flush, ctx: r.Context(), cursors: map[string]uint64{}, panels: map[string][]byte{}}
	if err := st.run(); err != nil && r.Context().Err() == nil {
		s.logger.Debug("dashboard stream ended", "err", err)
	}
}

func (st *stream) send(event string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("ui: encode %s: %w", event, err)
	}
	return st.sendRaw(event, raw)
}

func (st *stream) sendRaw(event string, raw []byte) error {
	st.rc.SetWriteDeadline(time.Now().Add(writeTimeout)) //nolint:errcheck // unsupported: the server's deadline stays
	if _, err := fmt.Fprintf(st.w, "event: %s\ndata: %s\n\n", event, raw); err != nil {
		return err
	}
	st.flush()
	return nil
}

func (st *stream) run() error {
	s := st.s
	changes, stop := s.cfg.Feed.Changes()
	defer stop()
	// Take the change number first: whatever is stored after it is read
	// again below, so nothing falls between the first read and the loop.
	_, seen := s.cfg.Feed.ChangedSince(^uint64(0))
	if err := st.send("hello", map[string]any{"node": s.cfg.Node, "handle": s.cfg.Handle, "max_events": s.cfg.MaxEvents}); err != nil {
		return err
	}
	if err := st.sendRooms(); err != nil {
		return err
	}
	for _, in := range st.s.cfg.Feed.List(st.ctx) {
		if err := st.sendEvents(in.RoomID); err != nil {
			return err
		}
	}
	if err := st.sendPanels(); err != nil {
		return err
	}
	panels := time.NewTicker(s.cfg.PanelInterval)
	defer panels.Stop()
	alive := time.NewTicker(keepAlive)
	defer alive.Stop()
	for {
		select {
		case <-st.ctx.Done():
			return nil
		case <-s.done:
			return nil
		case <-alive.C:
			st.rc.SetWriteDeadline(time.Now().Add(writeTimeout)) //nolint:errcheck // as in sendRaw
			if _, err := fmt.Fprint(st.w, ": alive\n\n"); err != nil {
				return err
			}
			st.flush()
		case <-panels.C:
			if err := st.sendRooms(); err != nil {
				return err
			}
			if err := st.sendPanels(); err != nil {
				return err
			}
		case <-changes:
			var ids []string
			ids, seen = s.cfg.Feed.ChangedSince(seen)
			slices.Sort(ids)
			if err := st.sendRooms(); err != nil {
				return err
			}
			for _, id := range ids {
				if err := st.sendEvents(id); err != nil {
					return err
				}
			}
			t := time.NewTimer(coalesce)
			select {
			case <-st.ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
	}
}

// roomView is a room as the page's room list holds it: what the page
// shows of it (label, purpose, members), without the event and head counts
// that change with every event stored (new events come in `events`).
type roomView struct {
	RoomID    string    `json:"room_id"`
	Name      string    `json:"name"`
	Purpose   string    `json:"purpose"`
	Creator   string    `json:"creator"`
	Members   []string  `json:"members"`
	Agents    []string  `json:"agents"`
	InvitedBy string    `json:"invited_by,omitempty"`
	Opened    time.Time `json:"opened"`
}

// sendRooms sends the room list if what the page shows of it changed.
// Before, the list carried each room's event and head counts, so every
// event stored in any room sent every open page the whole list again (85 KB
// for 150 rooms); the page reads no count from it (its unread counts come
// from the `events` it gets).
func (st *stream) sendRooms() error {
	rs := st.s.cfg.Feed.List(st.ctx)
	vs := make([]roomView, len(rs))
	for i, r := range rs {
		vs[i] = roomView{RoomID: r.RoomID, Name: r.Name, Purpose: r.Purpose, Creator: r.Creator,
			Members: r.Members, Agents: r.Agents, InvitedBy: r.InvitedBy, Opened: r.Opened}
	}
	raw, err := json.Marshal(vs)
	if err != nil {
		return fmt.Errorf("ui: encode rooms: %w", err)
	}
	if bytes.Equal(raw, st.rooms) {
		return nil
	}
	st.rooms = raw
	return st.sendRaw("rooms", raw)
}

// sendEvents sends the room's events stored since the last sent: the last
// MaxEvents of them, with the count of those skipped.
func (st *stream) sendEvents(room string) error {
	max := st.s.cfg.MaxEvents
	in, err := st.s.cfg.Feed.Get(st.ctx, room)
	if err != nil {
		return nil // gone (left) since it changed
	}
	from := st.cursors[room]
	var skipped uint64
	if in.Events > from+uint64(max) {
		skipped = in.Events - uint64(max) - from
		from = in.Events - uint64(max)
	}
	evs, last, err := st.s.cfg.Feed.Since(room, from, max)
	if err != nil {
		return nil
	}
	st.cursors[room] = last
	if len(evs) == 0 && skipped == 0 {
		return nil
	}
	if err := st.send("events", map[string]any{"room": room, "events": evs, "skipped": skipped}); err != nil {
		return err
	}
	if len(evs) == max {
		return st.sendEvents(room) // more came meanwhile
	}
	return nil
}

// sendPanels sends the panels whose JSON changed.
func (st *stream) sendPanels() error {
	ps := st.s.cfg.Panels(st.ctx)
	names := make([]string, 0, len(ps))
	for name := range ps {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		raw, err := json.Marshal(ps[name])
		if err != nil {
			return fmt.Errorf("ui: encode panel %s: %w", name, err)
		}
		if bytes.Equal(raw, st.panels[name]) {
			continue
		}
		st.panels[name] = raw
		if err := st.send("panel", map[string]any{"name": name, "data": json.RawMessage(raw)}); err != nil {
			return err
		}
	}
	return nil
}
