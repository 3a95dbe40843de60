package localapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
)

// Backend is what the node offers to the local API.
type Backend interface {
	Info() Info
	Status() Status
	Peers() []Peer
	Connect(ctx context.Context, addr string) (Peer, error)
	// Shutdown asks the node to stop; it returns at once.
	Shutdown()
	// Metrics serves the node's Prometheus registry.
	Metrics() http.Handler
}

// NewServer builds the node's handlers; the node adds the others (HandleRooms,
// HandleAgents, HandleContacts, HandleEdge), then calls Serve.
//
//	GET  /v1/id        Info
//	GET  /v1/status    Status
//	GET  /v1/peers     [Peer]
//	POST /v1/connect   ConnectRequest → Peer
//	POST /v1/down      asks the node to shut down
//	GET  /metrics      Prometheus text
func NewServer(b Backend, log *slog.Logger) *Server {
	s := &Server{mux: http.NewServeMux(), log: log, done: make(chan struct{})}
	noBody(s, "GET /v1/id", func(*http.Request) (Info, error) { return b.Info(), nil })
	noBody(s, "GET /v1/status", func(*http.Request) (Status, error) { return b.Status(), nil })
	noBody(s, "GET /v1/peers", func(*http.Request) ([]Peer, error) { return orEmpty(b.Peers()), nil })
	withBody(s, "POST /v1/connect", false, func(r *http.Request, req ConnectRequest) (Peer, error) {
		return b.Connect(r.Context(), req.Addr)
	})
	s.mux.HandleFunc("POST /v1/down", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, map[string]string{"status": "shutting down"})
		b.Shutdown()
	})
	s.mux.Handle("GET /metrics", b.Metrics())
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, Errorf(http.StatusNotFound, CodeNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
	})
	s.srv = s.newHTTPServer()
	return s
}

// orEmpty returns s, or an empty slice for nil, so JSON shows [].
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// ID returns the node's identity.
func (c *Client) ID(ctx context.Context) (Info, error) {
	var v Info
	return v, c.do(ctx, "GET", "/v1/id", nil, &v)
}

// Status returns the node's status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var v Status
	return v, c.do(ctx, "GET", "/v1/status", nil, &v)
}

// Peers lists connected peers.
func (c *Client) Peers(ctx context.Context) ([]Peer, error) {
	var v []Peer
	return v, c.do(ctx, "GET", "/v1/peers", nil, &v)
}

// Connect dials a multiaddr (with /p2p/PEER_ID).
func (c *Client) Connect(ctx context.Context, addr string) (Peer, error) {
	var v Peer
	return v, c.do(ctx, "POST", "/v1/connect", ConnectRequest{Addr: addr}, &v)
}

// Down asks the node to shut down.
func (c *Client) Down(ctx context.Context) error {
	return c.do(ctx, "POST", "/v1/down", nil, nil)
}

// Metrics returns the node's metrics in the Prometheus text format.
func (c *Client) Metrics(ctx context.Context) (string, error) {
	resp, err := c.open(ctx, "GET", "/metrics", nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var b strings.Builder
	if _, err := io.Copy(&b, io.LimitReader(resp.Body, 16<<20)); err != nil {
		return "", fmt.Errorf("localapi: read metrics: %w", err)
	}
	return b.String(), nil
}
