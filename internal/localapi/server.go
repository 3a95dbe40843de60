package localapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"
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

// MaxRequestBody caps every request body.
const MaxRequestBody = 1 << 20

// Server serves the local API on a unix socket.
type Server struct {
	done chan struct{} // closed by Shutdown, ends long-lived streams
	mux  *http.ServeMux
	srv  *http.Server
	log  *slog.Logger
}

// NewServer builds the handlers; call Serve to start.
func NewServer(b Backend, log *slog.Logger) *Server {
	s := &Server{mux: http.NewServeMux(), log: log, done: make(chan struct{})}
	s.mux.HandleFunc("GET /v1/id", func(w http.ResponseWriter, r *http.Request) { WriteJSON(w, b.Info()) })
	s.mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) { WriteJSON(w, b.Status()) })
	s.mux.HandleFunc("GET /v1/peers", func(w http.ResponseWriter, r *http.Request) { WriteJSON(w, b.Peers()) })
	s.mux.HandleFunc("POST /v1/connect", func(w http.ResponseWriter, r *http.Request) {
		var req ConnectRequest
		if !ReadJSON(w, r, &req) {
			return
		}
		p, err := b.Connect(r.Context(), req.Addr)
		if err != nil {
			WriteError(w, err)
			return
		}
		WriteJSON(w, p)
	})
	s.mux.HandleFunc("POST /v1/down", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, map[string]string{"status": "shutting down"})
		b.Shutdown()
	})
	s.mux.Handle("GET /metrics", b.Metrics())
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, Errorf(http.StatusNotFound, "not_found", "no such endpoint: %s %s", r.Method, r.URL.Path))
	})
	s.srv = &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second}
	return s
}

// Handle adds a handler (used by the node for its other parts).
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Listen opens the unix socket at path with mode 0600, replacing a stale
// socket file. The caller must hold the home's lock, so no live node owns it.
func Listen(path string) (net.Listener, error) {
	if len(path) > 100 {
		return nil, fmt.Errorf("localapi: socket path %s is too long for a unix socket (use a shorter --home)", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("localapi: remove stale socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("localapi: listen %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("localapi: chmod %s: %w", path, err)
	}
	return ln, nil
}

// Serve serves until Shutdown; it returns nil after a clean shutdown.
func (s *Server) Serve(ln net.Listener) error {
	err := s.srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops the server, waiting for in-flight requests until ctx ends;
// then it closes what is left (long-lived streams).
func (s *Server) Shutdown(ctx context.Context) error {
	close(s.done)
	err := s.srv.Shutdown(ctx)
	if err != nil {
		return s.srv.Close()
	}
	return nil
}

// WriteJSON writes v as a 200 response.
func WriteJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}

// WriteError writes err; an *Error keeps its status and code, anything else
// is a 500.
func WriteError(w http.ResponseWriter, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Status: http.StatusInternalServerError, Code: "internal", Message: err.Error()}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(e)
}

// ReadJSON decodes a request body into v (size-capped, unknown fields
// refused); on failure it writes a 400 and returns false.
func ReadJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, MaxRequestBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		WriteError(w, Errorf(http.StatusBadRequest, "bad_request", "bad request body: %v", err))
		return false
	}
	return true
}
