package ui

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/netutil"

	"github.com/parley-mesh/parley/internal/localapi"
)

// TokenFileName is the token's file in the home.
const TokenFileName = "ui.token"

// DefaultMaxEvents is how many events of a room the page keeps.
const DefaultMaxEvents = 200

// Feed is what the page shows of rooms: their list and their events as they
// are stored (internal/inbox implements it).
type Feed interface {
	List(ctx context.Context) []localapi.RoomInfo
	Get(ctx context.Context, room string) (localapi.RoomInfo, error)
	// Changes wakes the reader whenever events are stored in any room.
	Changes() (<-chan struct{}, func())
	// ChangedSince returns the rooms changed after change number after and
	// the latest change number.
	ChangedSince(after uint64) ([]string, uint64)
	// Since returns up to limit events of room stored after the after-th,
	// and the place of the last one.
	Since(room string, after uint64, limit int) ([]localapi.Event, uint64, error)
}

// Config configures a Server. Zero values are documented.
type Config struct {
	Token string // required: see LoadToken
	Feed  Feed   // required
	// API is the local API; the routes in Actions are passed to it.
	API http.Handler
	// Actions are the local API routes the page may use ("POST
	// /v1/agents/human/say"), as http.ServeMux patterns.
	Actions []string
	// Panels returns the panels the page shows beside the rooms (agents,
	// contacts, audit, usage, …), each a JSON value under its name. It is
	// called every PanelInterval while a page is open; a panel is sent when
	// its JSON changed.
	Panels func(ctx context.Context) map[string]any
	// PanelInterval: zero means one second.
	PanelInterval time.Duration
	// MaxEvents is how many events of a room are sent at once and kept by
	// the page; zero means DefaultMaxEvents.
	MaxEvents int
	// Node and Handle name the node on the page.
	Node, Handle string
	Logger       *slog.Logger // nil discards
	// Now is the clock of the addresses' codes (TicketTTL); nil means
	// time.Now.
	Now func() time.Time
}

// Server serves the dashboard.
type Server struct {
	cfg    Config
	token  []byte
	mux    *http.ServeMux
	page   []byte
	csp    string
	srv    *http.Server
	done   chan struct{} // closed by Shutdown: ends the streams
	addr   string        // host:port served, set by Serve
	logger *slog.Logger

	ticketMu sync.Mutex
	tickets  []ticket // outstanding, oldest first
}

// ticket is a one-time code of an address the node gave out (TicketURL).
type ticket struct {
	code  []byte
	until time.Time
}

//go:embed assets/index.html
var indexHTML string

//go:embed assets/app.js
var appJS string

//go:embed assets/app.css
var appCSS string

// New builds the server. It starts nothing.
func New(cfg Config) (*Server, error) {
	if len(cfg.Token) < 32 || cfg.Feed == nil {
		return nil, fmt.Errorf("%w: a token of at least 32 characters and a Feed are required", ErrConfig)
	}
	if cfg.PanelInterval <= 0 {
		cfg.PanelInterval = time.Second
	}
	if cfg.MaxEvents <= 0 {
		cfg.MaxEvents = DefaultMaxEvents
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Panels == nil {
		cfg.Panels = func(context.Context) map[string]any { return nil }
	}
	s := &Server{cfg: cfg, token: []byte(cfg.Token), mux: http.NewServeMux(), done: make(chan struct{}), logger: cfg.Logger}
	hash := func(b string) string {
		sum := sha256.Sum256([]byte(b))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	s.csp = "default-src 'none'; script-src " + hash(appJS) + "; style-src " + hash(appCSS) +
		"; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	page := strings.Replace(indexHTML, "<style></style>", "<style>"+appCSS+"</style>", 1)
	page = strings.Replace(page, "<script></script>", "<script>"+appJS+"</script>", 1)
	page = strings.Replace(page, noTokenEl, strings.TrimSuffix(noTokenEl, "</pre>")+html.EscapeString(Unauthorized)+"</pre>", 1)
	s.page = []byte(page)

	s.mux.HandleFunc("GET /{$}", s.servePage)
	s.mux.HandleFunc("GET "+PagePath, s.servePage)
	s.mux.HandleFunc("GET /ui/stream", s.serveStream)
	s.mux.HandleFunc("GET /ui/state", func(w http.ResponseWriter, r *http.Request) {
		localapi.WriteJSON(w, s.cfg.Panels(r.Context()))
	})
	if cfg.API != nil {
		for _, p := range cfg.Actions {
			s.mux.Handle(p, cfg.API)
		}
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: readTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout}
	return s, nil
}

// MaxConns is how many connections the dashboard holds at once; more wait
// to be accepted until one ends. A page uses a few (its stream and its
// actions), so this is for many tabs, and it keeps programs without the
// token from taking the node's file descriptors.
const MaxConns = 64

// The server's deadlines: a request is read within readTimeout (a request
// without the token is answered once its headers are, its body unread),
// its answer written within writeTimeout (an action waits at most
// localapi.MaxWait), and a connection with no request is closed after
// idleTimeout. The stream, which lasts as long as its page, sets its own
// write deadline before each write. (Once a request is read, net/http
// lifts the read deadline: it does not cut a handler.)
const (
	readTimeout  = 10 * time.Second
	writeTimeout = localapi.MaxWait + 10*time.Second
	idleTimeout  = time.Minute
)

// PagePath is the page's address once it holds its token: the page, opened
// as /?t=TOKEN, keeps the token in its tab's sessionStorage and loads itself
// again at PagePath in its place (location.replace), so that the address
// bar and the tab's history hold no token. PagePath is served without the
// token (the page holds no data; all it shows comes through requests that
// carry the token), so that a reload of the tab works: the page reloaded
// finds the token in the tab's sessionStorage. A tab without it (PagePath opened in a
// new tab, a bookmark of the address bar) shows Unauthorized and sends
// nothing.
const PagePath = "/ui/page"

// noTokenEl is the page's element that holds Unauthorized, shown instead
// of the page when it has no token.
const noTokenEl = `<pre id="notoken" hidden></pre>`

// PageSize is the page's size in bytes (everything it loads).
func (s *Server) PageSize() int { return len(s.page) }

// ServeHTTP checks the token and the request's origin, then serves it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	if r.URL.Path == "/ui/proof" {
		s.serveProof(w, r)
		return
	}
	if r.URL.Path == TicketPath {
		s.serveTicket(w, r)
		return
	}
	if !s.authorized(r) && !pageReload(r) {
		// Its body is not read: the connection is closed instead, so that
		// nothing without the token holds it by sending slowly.
		h.Set("Connection", "close")
		if s.hostOK(r) {
			// The user's browser, with an old address or none: say how
			// to open the dashboard (another site's page, resolved to
			// 127.0.0.1, gets nothing to read).
			h.Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			text := Unauthorized
			if r.URL.Path == "/" && r.URL.Query().Has("c") {
				text = TicketSpent
			}
			io.WriteString(w, text) //nolint:errcheck // the browser went away
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if why := s.foreign(r); why != "" {
		http.Error(w, why, http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		// The media type parsed: "application/jsonx" or "application/json-seq"
		// is not JSON.
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			http.Error(w, "actions take JSON (Content-Type: application/json)", http.StatusUnsupportedMediaType)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// authorized reports whether r carries the token: in its Authorization
// header, or for the page itself in its query (t), or an outstanding
// one-time code (c) for the page, which it changes for the token.
func (s *Server) authorized(r *http.Request) bool {
	got := ""
	if a := r.Header.Get("Authorization"); strings.HasPrefix(a, "Bearer ") {
		got = strings.TrimPrefix(a, "Bearer ")
	} else if r.URL.Path == "/" && r.Method == http.MethodGet {
		q := r.URL.Query()
		if c := q.Get("c"); c != "" {
			return s.ticket(c, false)
		}
		got = q.Get("t")
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), s.token) == 1
}

// TicketTTL is how long an address TicketURL gives opens the dashboard:
// the time to click or paste the address `parley ui` prints.
const TicketTTL = 5 * time.Minute

// MaxTickets is how many addresses TicketURL gave may be outstanding at
// once; a new one past it makes the oldest fail.
const MaxTickets = 32

// TicketPath is where the page opened at /?c=CODE changes the code for
// the token: POST {"code":CODE}, answered {"token":TOKEN} once.
const TicketPath = "/ui/ticket"

// TicketURL returns an address of the page on addr (the listener's
// host:port) that opens it once, within TicketTTL: /?c=CODE, CODE a new
// random one-time code. The page changes the code for the token (at
// TicketPath) and keeps the token in its tab, so the address the browser's
// history records, and a bookmark made of it, opens nothing.
func (s *Server) TicketURL(addr string) (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("ui: a code for the address: %w", err)
	}
	code := hex.EncodeToString(b)
	now := s.cfg.Now()
	s.ticketMu.Lock()
	s.pruneTickets(now)
	if len(s.tickets) >= MaxTickets {
		s.tickets = slices.Delete(s.tickets, 0, len(s.tickets)-MaxTickets+1)
	}
	s.tickets = append(s.tickets, ticket{code: []byte(code), until: now.Add(TicketTTL)})
	s.ticketMu.Unlock()
	return "http://" + addr + "/?c=" + code, nil
}

// pruneTickets drops the codes past their time. The caller holds ticketMu.
func (s *Server) pruneTickets(now time.Time) {
	s.tickets = slices.DeleteFunc(s.tickets, func(t ticket) bool { return !now.Before(t.until) })
}

// ticket reports whether code is outstanding, and with spend uses it up.
func (s *Server) ticket(code string, spend bool) bool {
	s.ticketMu.Lock()
	defer s.ticketMu.Unlock()
	s.pruneTickets(s.cfg.Now())
	found := -1
	for i, t := range s.tickets {
		if subtle.ConstantTimeCompare([]byte(code), t.code) == 1 {
			found = i
		}
	}
	if found >= 0 && spend {
		s.tickets = slices.Delete(s.tickets, found, found+1)
	}
	return found >= 0
}

// TicketSpent is the text of a code that opens nothing (used, too old, or
// given out before the node started).
const TicketSpent = "Parley dashboard: this address opened the dashboard already, or is older than " +
	"5 minutes, or is from before the node last started.\n\n" +
	"Run `parley ui` for a new address (each opens the dashboard once), or `parley ui --open`.\n"

// serveTicket answers POST TicketPath {"code":CODE} with {"token":TOKEN}
// when CODE is outstanding, and uses it up; else 401 and TicketSpent. Like
// the page's other requests it must come from the page's origin; it needs
// no token (the code is what proves it).
func (s *Server) serveTicket(w http.ResponseWriter, r *http.Request) {
	if !s.openRoute(w, r, http.MethodPost, "POST "+TicketPath+` {"code":CODE}`) {
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "POST "+TicketPath+` takes JSON (Content-Type: application/json)`, http.StatusUnsupportedMediaType)
		return
	}
	var req struct {
		Code string `json:"code"`
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, 512))
	if err := dec.Decode(&req); err != nil || req.Code == "" {
		http.Error(w, "POST "+TicketPath+` {"code":CODE}`, http.StatusBadRequest)
		return
	}
	if !s.ticket(req.Code, true) {
		http.Error(w, TicketSpent, http.StatusUnauthorized)
		return
	}
	localapi.WriteJSON(w, map[string]string{"token": string(s.token)})
}

// pageReload reports whether r asks for the page at PagePath, which needs
// no token (its Host and origin are checked all the same).
func pageReload(r *http.Request) bool {
	return r.URL.Path == PagePath && (r.Method == http.MethodGet || r.Method == http.MethodHead)
}

// Unauthorized is the text of a request without the token, or with a
// wrong one, whose Host is the dashboard's: the browser of a user who
// opened an old address (the token changes when the port does) or one
// without it.
const Unauthorized = "Parley dashboard: this address has no token, or an old one.\n\n" +
	"Open the dashboard at a new address from `parley ui` (each opens it once),\n" +
	"or run `parley ui --open`.\n"

// hostOK reports whether r's Host is the loopback address and port the
// dashboard is served on.
func (s *Server) hostOK(r *http.Request) bool {
	host, port, err := net.SplitHostPort(r.Host)
	return err == nil && (host == "127.0.0.1" || host == "localhost") && (s.addr == "" || strings.HasSuffix(s.addr, ":"+port))
}

// foreign says why r does not come from the page itself (empty: it does).
func (s *Server) foreign(r *http.Request) string {
	if !s.hostOK(r) {
		return "wrong Host"
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
		return "requests from other origins are refused"
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" && !pageNavigation(r) {
		return "cross-site requests are refused"
	}
	return ""
}

// pageNavigation reports whether r is the browser opening the page itself
// as a top-level document: the address followed from a file: page (`parley
// ui --open`), a bookmark or another site is marked cross-site, and it must
// open. At / it carries the token in its query, which is what proves it
// (whoever has the token needs no browser); at PagePath (reached so by
// going back to the page from another site) it needs none, and the page
// gets it from its own tab's sessionStorage or not at all. It reads
// nothing and changes nothing, and the page it gets cannot be framed.
// Everything else the page does is a same-origin request that a cross-site
// one cannot pass for.
func pageNavigation(r *http.Request) bool {
	return r.Method == http.MethodGet && (r.URL.Path == "/" || r.URL.Path == PagePath) &&
		r.Header.Get("Sec-Fetch-Mode") == "navigate" && r.Header.Get("Sec-Fetch-Dest") == "document"
}

// ProofPrefix starts what a proof signs: ProofPrefix + port + "\n" + nonce.
const ProofPrefix = "parley-ui-proof\n"

// Proof is what the dashboard on port answers to nonce: hex of
// HMAC-SHA256(token, ProofPrefix + port + "\n" + nonce). The page asks for
// one before each request that carries the token, and sends the token only
// when it checks: a program that took the port while the node was down
// does not know the token, so it cannot answer, and gets nothing. The port
// is signed so that a program on another port cannot pass on the node's
// answer as its own.
func Proof(token, port, nonce string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(ProofPrefix + port + "\n" + nonce))
	return hex.EncodeToString(m.Sum(nil))
}

// openRoute starts the answer of a route served without the token
// (/ui/proof, /ui/ticket): its connection is closed after it, a foreign
// request is refused (403) and another method than method answered 405
// with usage. It reports whether to go on.
func (s *Server) openRoute(w http.ResponseWriter, r *http.Request, method, usage string) bool {
	w.Header().Set("Connection", "close")
	if why := s.foreign(r); why != "" {
		http.Error(w, why, http.StatusForbidden)
		return false
	}
	if r.Method != method {
		w.Header().Set("Allow", method)
		http.Error(w, usage, http.StatusMethodNotAllowed)
		return false
	}
	return true
}

// serveProof answers GET /ui/proof?n=NONCE (NONCE: 32 to 128 lowercase hex
// digits) with Proof, to anyone: it tells nothing of the token. Another
// method is answered 405.
func (s *Server) serveProof(w http.ResponseWriter, r *http.Request) {
	if !s.openRoute(w, r, http.MethodGet, "GET /ui/proof?n=NONCE") {
		return
	}
	n := r.URL.Query().Get("n")
	if len(n) < 32 || len(n) > 128 || strings.Trim(n, "0123456789abcdef") != "" {
		http.Error(w, "GET /ui/proof?n=NONCE, NONCE 32 to 128 lowercase hex digits", http.StatusBadRequest)
		return
	}
	_, port, _ := net.SplitHostPort(s.addr)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, Proof(string(s.token), port, n)) //nolint:errcheck // the browser went away
}

func (s *Server) servePage(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", s.csp)
	w.Write(s.page) //nolint:errcheck // the browser went away
}

// Serve serves on ln until Shutdown; it returns nil after a clean shutdown.
// Call it once.
func (s *Server) Serve(ln net.Listener) error {
	s.addr = ln.Addr().String()
	err := s.srv.Serve(netutil.LimitListener(ln, MaxConns))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown ends the streams and stops the server.
func (s *Server) Shutdown(ctx context.Context) error {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	if err := s.srv.Shutdown(ctx); err != nil {
		return s.srv.Close()
	}
	return nil
}

// LoadToken reads HOME/ui.token, making it (32 random bytes, hex, mode
// 0600) when it does not exist. A token file that other users may read or
// write (a mode beyond 0600) may have been read: it is replaced by a new
// one, and replaced says so.
func LoadToken(home string) (tok string, replaced bool, err error) {
	path := filepath.Join(home, TokenFileName)
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Remove(path); err != nil {
			return "", false, fmt.Errorf("ui: %s is open to other users (mode %04o) and cannot be replaced: %w", path, fi.Mode().Perm(), err)
		}
		tok, _, err := LoadToken(home)
		return tok, true, err
	}
	raw, err := os.ReadFile(path)
	if err == nil {
		tok := string(bytes.TrimSpace(raw))
		if len(tok) < 32 {
			return "", false, fmt.Errorf("ui: %s is too short; remove it and a new token is made", path)
		}
		return tok, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", false, fmt.Errorf("ui: read %s: %w", path, err)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", false, fmt.Errorf("ui: make a token: %w", err)
	}
	tok = hex.EncodeToString(b[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return LoadToken(home) // made meanwhile
	}
	if err != nil {
		return "", false, fmt.Errorf("ui: write %s: %w", path, err)
	}
	_, werr := f.WriteString(tok + "\n")
	if err := errors.Join(werr, f.Close()); err != nil {
		return "", false, fmt.Errorf("ui: write %s: %w", path, err)
	}
	return tok, false, nil
}
