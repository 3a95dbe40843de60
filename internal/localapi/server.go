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
	"strconv"
	"time"
)

// MaxRequestBody caps every request body.
const MaxRequestBody = 1 << 20

// MaxWait bounds every blocking call (MCP clients time out at 60 s).
const MaxWait = 50 * time.Second

// Server serves the local API on a unix socket.
type Server struct {
	done chan struct{} // closed by Shutdown, ends long-lived streams
	mux  *http.ServeMux
	srv  *http.Server
	log  *slog.Logger
}

// Handle adds a handler (for parts of the node with endpoints of their own).
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
	if err := s.srv.Shutdown(ctx); err != nil {
		return s.srv.Close()
	}
	return nil
}

// WriteJSON writes v as a 200 response.
func WriteJSON(w http.ResponseWriter, v any) {
	raw, err := json.Marshal(v)
	if err != nil {
		WriteError(w, fmt.Errorf("encode answer: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	// A failed write means the client went away; there is no one to tell.
	w.Write(append(raw, '\n')) //nolint:errcheck
}

// WriteError writes err: an *Error keeps its status and code, a context
// error is a 504, anything else a 500.
func WriteError(w http.ResponseWriter, err error) {
	var e *Error
	switch {
	case errors.As(err, &e):
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		e = Errorf(http.StatusGatewayTimeout, CodeTimeout, "%v", err)
	default:
		e = Errorf(http.StatusInternalServerError, CodeInternal, "%v", err)
	}
	raw, merr := json.Marshal(e)
	if merr != nil {
		raw = []byte(`{"error":"unencodable error","code":"internal"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	w.Write(append(raw, '\n')) //nolint:errcheck // the client went away
}

// ReadJSON decodes a request body of one JSON object into v: unknown fields
// and trailing data are a 400, a body over MaxRequestBody a 413. On failure
// it writes the error and returns false.
func ReadJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := readJSON(w, r, v, false); err != nil {
		WriteError(w, err)
		return false
	}
	return true
}

func readJSON(w http.ResponseWriter, r *http.Request, v any, optional bool) error {
	body := http.MaxBytesReader(w, r.Body, MaxRequestBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	tooLarge := func(err error) bool {
		var mbe *http.MaxBytesError
		return errors.As(err, &mbe)
	}
	if err := dec.Decode(v); err != nil {
		switch {
		case tooLarge(err):
			return Errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "request body is over the limit of %d bytes", MaxRequestBody)
		case optional && errors.Is(err, io.EOF):
			return nil
		}
		return BadRequest("bad request body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if tooLarge(err) {
			return Errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "request body is over the limit of %d bytes", MaxRequestBody)
		}
		return BadRequest("bad request body: trailing data after the JSON object")
	}
	return nil
}

// waitOf reads ?seconds= (default MaxWait, at most MaxWait).
func waitOf(r *http.Request) (time.Duration, error) {
	v := r.URL.Query().Get("seconds")
	if v == "" {
		return MaxWait, nil
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || n < 0 || n > MaxWait.Seconds() {
		return 0, BadRequest("seconds must be 0 to %.0f", MaxWait.Seconds())
	}
	return time.Duration(n * float64(time.Second)), nil
}

// withBody registers a handler that decodes a JSON body into Req (empty is
// allowed when optional), calls f and writes its answer.
func withBody[Req, Resp any](s *Server, pattern string, optional bool, f func(r *http.Request, req Req) (Resp, error)) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := readJSON(w, r, &req, optional); err != nil {
			WriteError(w, err)
			return
		}
		resp, err := f(r, req)
		if err != nil {
			WriteError(w, err)
			return
		}
		WriteJSON(w, resp)
	})
}

// noBody registers a handler without a body.
func noBody[Resp any](s *Server, pattern string, f func(r *http.Request) (Resp, error)) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		resp, err := f(r)
		if err != nil {
			WriteError(w, err)
			return
		}
		WriteJSON(w, resp)
	})
}
