package localapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxRequestBody caps every request body.
const MaxRequestBody = 1 << 20

// MaxWait bounds every blocking call (MCP clients time out at 60 s).
const MaxWait = 50 * time.Second

// Server serves the local API on a unix socket.
type Server struct {
	done chan struct{} // closed by Shutdown, ends long-lived streams
	// base is the context of every request: Shutdown cancels it (cause
	// ErrStopping), so a request that waits (a long poll) ends at once.
	base context.Context
	stop context.CancelCauseFunc
	mux  *http.ServeMux
	srv  *http.Server
	log  *slog.Logger
	// guard checks the requests for an agent that name a session
	// (GuardAgents); set before serving.
	guard AgentGuard
}

// newHTTPServer is the server of s: every request's context comes from
// s.base, and its writer tells WriteError when the node stops.
func (s *Server) newHTTPServer() *http.Server {
	s.base, s.stop = context.WithCancelCause(context.Background())
	return &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r = sessionRequest(twoStepRequest(r))
			if err := s.guarded(r); err != nil {
				WriteError(w, err)
				return
			}
			s.mux.ServeHTTP(stopWriter{w, s.base}, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return s.base },
	}
}

// stopWriter is a response writer that knows the server's base context:
// WriteError answers a request ended by the node stopping with
// CodeStopping, not as a timeout.
type stopWriter struct {
	http.ResponseWriter
	base context.Context
}

// Flush flushes a stream (a room's tail) as the writer it wraps does.
func (w stopWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer it wraps.
func (w stopWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// stopping reports whether w is the writer of a request the node's stop
// ended.
func stopping(w http.ResponseWriter) bool {
	sw, ok := w.(stopWriter)
	return ok && errors.Is(context.Cause(sw.base), ErrStopping)
}

// Handle adds a handler (for parts of the node with endpoints of their own).
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// MaxSocketPath is the longest socket path Listen takes: a unix socket's
// address holds about 104 bytes (macOS) to 108 (Linux), and Listen binds
// the socket beside path first, in a folder of a few bytes more.
const MaxSocketPath = 100

// CheckSocketPath refuses a socket path too long for a unix socket: a node
// can never listen there, nor a client reach it. up checks it before it
// writes the home.
func CheckSocketPath(path string) error {
	if len(path) > MaxSocketPath {
		return fmt.Errorf("socket path %s is too long for a unix socket (%d bytes, at most %d): use a shorter --home", path, len(path), MaxSocketPath)
	}
	return nil
}

// Listen opens the unix socket at path with mode 0600, replacing a stale
// socket file. The caller must hold the home's lock, so no live node owns it.
// The socket is bound in a fresh private folder (mode 0700) beside path,
// made 0600 there and then moved into place, so it is never open to other
// users, whatever the umask, not even for the moment between bind and
// chmod. Closing the listener leaves the socket file: the caller removes it.
func Listen(path string) (net.Listener, error) {
	if err := CheckSocketPath(path); err != nil {
		return nil, err
	}
	// Short names: the bound path must fit a unix socket address too.
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".s")
	if err != nil {
		return nil, fmt.Errorf("localapi: socket %s: %w", path, err)
	}
	defer os.RemoveAll(tmp)
	bound := filepath.Join(tmp, "s")
	ln, err := net.Listen("unix", bound)
	if err != nil {
		return nil, fmt.Errorf("localapi: listen %s: %w", bound, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(bound, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("localapi: chmod %s: %w", bound, err)
	}
	if err := os.Rename(bound, path); err != nil {
		ln.Close()
		return nil, fmt.Errorf("localapi: socket %s: %w", path, err)
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

// Shutdown stops the server: it ends the requests under way (their
// context is cancelled: a long poll answers at once that the node stops),
// waits for their answers until ctx ends, then closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stop(ErrStopping) // before done: a request it ends is told why
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

// WriteError writes err: an *Error keeps its status and code, a request
// the node's stop cancelled is a 503 (CodeStopping), another context error
// a 504, anything else a 500.
func WriteError(w http.ResponseWriter, err error) {
	var e *Error
	switch {
	case errors.As(err, &e):
	case (errors.Is(err, context.Canceled) || errors.Is(err, ErrStopping)) && stopping(w):
		e = Errorf(http.StatusServiceUnavailable, CodeStopping, "%v: it ended this request", ErrStopping)
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
// and trailing data are a 400, a body over MaxRequestBody a 413, and so are
// what encoding/json would take silently (checkJSON). On failure it writes
// the error and returns false.
func ReadJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := readJSON(w, r, v, false); err != nil {
		WriteError(w, err)
		return false
	}
	return true
}

func readJSON(w http.ResponseWriter, r *http.Request, v any, optional bool) error {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBody))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return Errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "request body is over the limit of %d bytes", MaxRequestBody)
		}
		return BadRequest("bad request body: %v", err)
	}
	if optional && len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if !utf8.Valid(raw) {
		i := invalidAt(raw)
		return BadRequest("bad request body: it is not UTF-8 (byte %#02x at offset %d): send JSON, and its texts, as UTF-8", raw[i], i)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return BadRequest("bad request body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return BadRequest("bad request body: trailing data after the JSON object")
	}
	if err := checkJSON(raw); err != nil {
		return BadRequest("bad request body: %v", err)
	}
	return nil
}

// invalidAt returns the offset of the first byte of b that is not UTF-8.
func invalidAt(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// checkJSON refuses in raw (one valid JSON value) what encoding/json
// would take without a word: a key given twice in one object (the last
// would win; keys that differ only in case count as the same, as the
// decoder matches either to a field), and a \u escape of half a UTF-16
// surrogate pair (it would read as U+FFFD).
func checkJSON(raw []byte) error {
	if err := checkSurrogates(raw); err != nil {
		return err
	}
	type object struct {
		keys    map[string]bool
		wantKey bool
	}
	var stack []*object // nil for an array
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var top *object
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, &object{keys: map[string]bool{}, wantKey: true})
				continue
			case '[':
				stack = append(stack, nil)
				continue
			}
			stack = stack[:len(stack)-1] // } or ]: a value of the enclosing object ends
			if len(stack) > 0 && stack[len(stack)-1] != nil {
				stack[len(stack)-1].wantKey = true
			}
			continue
		case string:
			if top != nil && top.wantKey {
				k := foldKey(t)
				if top.keys[k] {
					return fmt.Errorf("the key %q is given twice in one object (keys that differ only in case are the same key)", t)
				}
				top.keys[k], top.wantKey = true, false
				continue
			}
		}
		if top != nil {
			top.wantKey = true // a value ended
		}
	}
}

// foldKey returns s with each letter as the smallest of its case
// variants: two keys fold alike exactly when strings.EqualFold says they
// are equal, as encoding/json matches keys to fields.
func foldKey(s string) string {
	return strings.Map(func(r rune) rune {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		return m
	}, s)
}

// checkSurrogates refuses a \u escape in a string of raw (valid JSON) that
// is half of a UTF-16 surrogate pair.
func checkSurrogates(raw []byte) error {
	hex4 := func(b []byte) rune {
		n, err := strconv.ParseUint(string(b), 16, 32)
		if err != nil {
			return -1
		}
		return rune(n)
	}
	in := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case !in:
			in = c == '"'
		case c == '"':
			in = false
		case c == '\\' && i+5 < len(raw) && raw[i+1] == 'u':
			r := hex4(raw[i+2 : i+6])
			if r >= 0xd800 && r < 0xdc00 && i+11 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
				if r2 := hex4(raw[i+8 : i+12]); r2 >= 0xdc00 && r2 < 0xe000 {
					i += 11 // a whole pair
					continue
				}
			}
			if r >= 0xd800 && r < 0xe000 {
				return fmt.Errorf("%s at offset %d is half of a UTF-16 surrogate pair, not a character: send texts as valid Unicode", raw[i:i+6], i)
			}
			i += 5
		case c == '\\':
			i++ // the escaped character
		}
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
	if err != nil || !(n >= 0 && n <= MaxWait.Seconds()) { // NaN fails both
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
