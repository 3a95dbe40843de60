package mcp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/parley-mesh/parley/internal/version"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/internal/localapi"
)

// Version is reported to MCP clients.
const Version = version.Version

// Config configures a Server.
type Config struct {
	// Client talks to the node. Required.
	Client *localapi.Client
	// Session is this MCP session's key. Required.
	Session string
	// ClientName names the agent's client program ("claude-code", "codex",
	// …); it is part of the default agent name and of the agent card.
	ClientName string
	// Project is the project folder; its base name is part of the default
	// agent name.
	Project string
	// Home is the node's home folder, named in the error that says the
	// node is not running; "" names none.
	Home string
	// UpCommand, when set, is the command that starts the home's node as
	// it last ran (up -d --loopback for a loopback home), for that error;
	// nil: parley --home HOME up -d. (The caller knows the home's files:
	// this package speaks the local API only.)
	UpCommand func() string
	// ClientPID is the client program's process on this machine (the MCP
	// server's parent), 0 if not known: the git guard finds the agent that
	// commits by it (the client runs the agent's shell commands too).
	ClientPID int
	// Logger; nil discards.
	Logger *slog.Logger
	// Channel declares Claude Code's claude/channel capability and pushes
	// the agent's owed items into the session as channel notifications
	// (the transport must be a Notifier).
	Channel bool
	// HeartbeatEvery is how often the agent's registration is renewed; zero
	// means 20 s (the node sweeps agents after 60 s without one).
	HeartbeatEvery time.Duration
	// ThreadIdle is how long a thread's agent (thread_id) stays registered
	// with no call for it; zero means DefaultThreadIdle.
	ThreadIdle time.Duration
}

// MaxThreads is how many thread agents (one per thread_id) one MCP session
// holds at once: the node's agents (discovery.MaxAgents) are shared by
// every session, and one program passing new thread_ids must not take
// them all. A thread idle for Config.ThreadIdle is let go, and frees its
// place.
const MaxThreads = 8

// DefaultThreadIdle is Config.ThreadIdle's default.
const DefaultThreadIdle = 10 * time.Minute

// threadAgent is the agent of one thread_id of the session.
type threadAgent struct {
	info localapi.AgentInfo
	used time.Time // when a call for it last ended (or began)
	busy int       // calls for it under way
}

// Server serves one agent session (and, for programs that pass thread_id,
// one agent per thread).
type Server struct {
	cfg Config
	api *localapi.Client
	log *slog.Logger
	// conn is this server's connection token: its binds carry it, and
	// the node unregisters an agent at this server's end only while the
	// registration is still this connection's (a client that reconnected
	// with the same session key keeps the agent its new server bound).
	conn string

	mu      sync.Mutex // protects agent, renamed, threads and binding
	agent   localapi.AgentInfo
	renamed chan struct{} // closed when the session's agent name changes
	threads map[string]*threadAgent
	binding int // new threads being bound, counted against MaxThreads

	namesMu sync.Mutex // protects book and bookAt
	book    localapi.NameBook
	bookAt  time.Time
}

// New returns a Server; Run binds the session and serves.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HeartbeatEvery == 0 {
		cfg.HeartbeatEvery = 20 * time.Second
	}
	if cfg.ThreadIdle == 0 {
		cfg.ThreadIdle = DefaultThreadIdle
	}
	return &Server{cfg: cfg, api: cfg.Client, log: cfg.Logger, conn: rand.Text(), threads: make(map[string]*threadAgent), renamed: make(chan struct{})}
}

var nameJunk = regexp.MustCompile(`[^a-z0-9._-]+`)

// DefaultAgentName is client and project folder, e.g. "claude-code-api".
func DefaultAgentName(client, project string) string {
	s := strings.ToLower(strings.Trim(client+"-"+filepath.Base(project), "-./"))
	s = strings.Trim(nameJunk.ReplaceAllString(s, "-"), "-._")
	if len(s) > 64 {
		s = strings.Trim(s[:64], "-._")
	}
	if s == "" {
		return "agent"
	}
	return s
}

// sessionOf is the node's session key of a call: the MCP session's, or
// one per thread of this MCP session. A thread's key holds the session's
// (hashed, to bound its length), so two sessions that pass the same
// thread_id ("main") are two agents, while a session that reconnects with
// its key finds its threads' agents, cards and all.
func (s *Server) sessionOf(thread string) string {
	if thread == "" {
		return s.cfg.Session
	}
	h := sha256.Sum256([]byte(s.cfg.Session))
	return "thread:" + hex.EncodeToString(h[:8]) + ":" + thread
}

// MaxThreadID bounds a thread_id: its session key ("thread:", 16 hex
// digits, ":" and the thread_id) must fit the node's bound on sessions.
const MaxThreadID = 200

// checkThread refuses a thread_id the node could not take as part of a
// session key, in words naming thread_id (not the session header's).
func checkThread(thread string) error {
	if len(thread) > MaxThreadID {
		return fmt.Errorf("thread_id is %d bytes, at most %d", len(thread), MaxThreadID)
	}
	if !utf8.ValidString(thread) || strings.ContainsFunc(thread, unicode.IsControl) {
		return fmt.Errorf("thread_id %.40q has control characters (a line break, say) or is not UTF-8: pass a printable one", thread)
	}
	return nil
}

// errTooManyThreads is the tool error of a new thread_id past MaxThreads.
var errTooManyThreads = fmt.Errorf("this Parley session already serves %d thread agents (one per thread_id), the most it holds at once; "+
	"pass a thread_id already in use, or none, or wait until a thread has had no call for a while (it is let go then)", MaxThreads)

// bind binds the session of thread (or the MCP session) on the node with
// req's changes, registering its agent, and remembers it.
func (s *Server) bind(ctx context.Context, thread string, req localapi.SessionRequest) (localapi.AgentInfo, error) {
	req.Session = s.sessionOf(thread)
	if thread != "" {
		s.mu.Lock()
		_, known := s.threads[thread]
		if !known && len(s.threads)+s.binding >= MaxThreads {
			s.mu.Unlock()
			return localapi.AgentInfo{}, errTooManyThreads
		}
		if !known {
			s.binding++
			defer func() {
				s.mu.Lock()
				s.binding--
				s.mu.Unlock()
			}()
		}
		s.mu.Unlock()
	}
	req.Client = s.cfg.ClientName
	req.ClientPID = s.cfg.ClientPID
	req.Connection = s.conn
	req.TTLSeconds = int(3 * s.cfg.HeartbeatEvery / time.Second)
	if thread == "" {
		req.Fallback = DefaultAgentName(s.cfg.ClientName, s.cfg.Project)
	} else {
		req.Fallback = DefaultAgentName(s.cfg.ClientName+"-"+thread, s.cfg.Project)
	}
	info, err := s.api.Session(ctx, req)
	if err != nil {
		return info, err
	}
	s.mu.Lock()
	if thread == "" {
		if info.Name != s.agent.Name {
			close(s.renamed)
			s.renamed = make(chan struct{})
		}
		s.agent = info
	} else if t := s.threads[thread]; t != nil {
		t.info = info
	} else {
		s.threads[thread] = &threadAgent{info: info, used: time.Now()}
	}
	s.mu.Unlock()
	return info, nil
}

// agentNow is the session's agent name, and a channel closed once it
// changes.
func (s *Server) agentNow() (string, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.agent.Name, s.renamed
}

// Agent is the session's agent name ("" before Run binds it).
func (s *Server) Agent() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.agent.Name
}

// agentFor returns the agent of a call: the session's, or the one bound to
// the call's thread_id (bound on first use). done ends the call: a thread
// is not let go while a call for it is under way.
func (s *Server) agentFor(ctx context.Context, thread string) (name string, done func(), err error) {
	done = func() {}
	if err := checkThread(thread); err != nil {
		return "", done, err
	}
	if thread == "" {
		s.mu.Lock()
		a := s.agent
		s.mu.Unlock()
		if a.Name != "" {
			return a.Name, done, nil
		}
		info, err := s.bind(ctx, thread, localapi.SessionRequest{})
		return info.Name, done, err
	}
	for {
		if name := s.useThread(thread); name != "" {
			return name, func() { s.endThread(thread) }, nil
		}
		if _, err := s.bind(ctx, thread, localapi.SessionRequest{}); err != nil {
			return "", done, err
		}
	}
}

// useThread marks a call for thread under way and returns its agent ("" if
// it was let go meanwhile).
func (s *Server) useThread(thread string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.threads[thread]
	if t == nil {
		return ""
	}
	t.busy++
	t.used = time.Now()
	return t.info.Name
}

// endThread marks a call for thread ended.
func (s *Server) endThread(thread string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.threads[thread]; t != nil {
		t.busy--
		t.used = time.Now()
	}
}

// lapse lets go of the threads with no call for ThreadIdle: they are no
// longer renewed but unregistered (the node keeps their names and cards
// for the thread's next call), so a long session does not hold the
// agents of threads it is done with.
func (s *Server) lapse(ctx context.Context) {
	idle := map[string]string{} // thread: name
	s.mu.Lock()
	for th, t := range s.threads {
		if t.busy == 0 && time.Since(t.used) >= s.cfg.ThreadIdle {
			idle[th] = t.info.Name
			delete(s.threads, th)
		}
	}
	s.mu.Unlock()
	for th, n := range idle {
		if err := s.unregister(ctx, th, n); err != nil && ctx.Err() == nil {
			s.log.Debug("unregister of an idle thread's agent failed; the node sweeps it", "agent", n, "err", err)
		}
	}
}

// unregister unregisters the agent name of thread (the session's: "")
// if its registration is still this connection's.
func (s *Server) unregister(ctx context.Context, thread, name string) error {
	return s.api.UnregisterAgent(localapi.WithSession(ctx, s.sessionOf(thread), s.conn), name)
}

// heartbeat renews every agent of this server, after letting idle threads
// go; one the node swept (the process slept, the node restarted) is bound
// again, card and all.
func (s *Server) heartbeat(ctx context.Context) {
	s.lapse(ctx)
	s.mu.Lock()
	todo := map[string]string{"": s.agent.Name}
	for th, t := range s.threads {
		todo[th] = t.info.Name
	}
	s.mu.Unlock()
	for thread, name := range todo {
		if name == "" {
			continue
		}
		_, err := s.api.Heartbeat(ctx, name, localapi.HeartbeatRequest{Session: s.sessionOf(thread)})
		if lost(err) {
			_, err = s.bind(ctx, thread, localapi.SessionRequest{})
		}
		if err != nil && ctx.Err() == nil {
			s.log.Debug("agent heartbeat failed", "agent", name, "err", err)
		}
	}
}

// lost reports whether err is the node's word that the session no longer
// holds its agent's registration: it lapsed (CodeUnknownAgent), or another
// session took the name meanwhile (CodeNameTaken).
func lost(err error) bool {
	return localapi.IsCode(err, localapi.CodeUnknownAgent) || localapi.IsCode(err, localapi.CodeNameTaken)
}

// rebound binds the agent of call c again when the node no longer holds
// its registration for this session (the process slept past its TTL, or
// the node swept it before the next heartbeat; another session may have
// taken the name meanwhile, and this session then gets a name of its
// own), so that a call the node refused as one of an agent it does not
// know, or of another session's, can be made again; c then names the
// agent bound. It reports false when the session's agent is registered
// (the refusal was of another agent: an addressee) or could not be bound;
// killed is the node's refusal when the session's agent was killed (parley
// agent kill): the session is not bound again, under any name, and the
// agent is told.
func (s *Server) rebound(ctx context.Context, thread string, c *call) (ok bool, killed error) {
	if c.agent == "" {
		return false, nil
	}
	if _, err := s.api.Heartbeat(ctx, c.agent, localapi.HeartbeatRequest{Session: s.sessionOf(thread)}); !lost(err) {
		return false, nil
	}
	info, err := s.bind(ctx, thread, localapi.SessionRequest{})
	if localapi.IsCode(err, localapi.CodeKilled) {
		return false, err
	}
	if err != nil || info.Name == "" {
		return false, nil
	}
	c.agent = info.Name
	return true, nil
}

// Run binds the session, keeps its registration alive and serves MCP on t
// until the client goes away or ctx ends; then it unregisters the agents
// (the node keeps their names and cards for the next connection), those
// still this connection's: not an agent a newer connection of the session
// bound meanwhile.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	if _, err := s.bind(ctx, "", localapi.SessionRequest{}); err != nil {
		return fmt.Errorf("mcp: bind session: %s", s.errorText(err))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(s.cfg.HeartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.heartbeat(ctx)
			}
		}
	}()
	srv := s.MCP()
	if n, ok := t.(Notifier); ok && s.cfg.Channel {
		var once sync.Once
		srv = s.mcpWith(func(context.Context) {
			// Called when the client is initialized (on the SDK's goroutine).
			once.Do(func() {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s.channel(ctx, n)
				}()
			})
		})
	}
	// Each tool result's hand-out is confirmed once the result is written
	// and the client did not cancel its call (hand.go); those held are
	// confirmed at the end, and the confirmations finish before it.
	acks := &acker{api: s.api, log: s.log}
	err := srv.Run(ctx, ackTransport{Transport: t, a: acks})
	cancel()
	wg.Wait()
	acks.end()
	acks.wait()
	uctx, ucancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer ucancel()
	s.mu.Lock()
	names := map[string]string{"": s.agent.Name} // thread: name
	for th, t := range s.threads {
		names[th] = t.info.Name
	}
	s.mu.Unlock()
	for th, n := range names {
		if uerr := s.unregister(uctx, th, n); uerr != nil {
			s.log.Debug("unregister failed; the node sweeps it", "agent", n, "err", uerr)
		}
	}
	return err
}

// errorText is what a model reads of an error.
func (s *Server) errorText(err error) string {
	t := s.errorWords(err)
	if len(t) > MaxErrorText {
		// An error that quotes a refused input whole (a file pasted into
		// the wrong field) would make a result no client takes.
		cut := MaxErrorText
		for cut > 0 && !utf8.RuneStart(t[cut]) {
			cut--
		}
		t = t[:cut] + " …(cut)"
	}
	return t
}

// MaxErrorText bounds the text of a tool's error.
const MaxErrorText = 4 << 10

func (s *Server) errorWords(err error) string {
	var ae *localapi.Error
	switch {
	case errors.As(err, &ae):
		return localapi.UserText(ae.Message)
	case errors.Is(err, localapi.ErrNoNode) && s.cfg.Home != "":
		up := fmt.Sprintf("parley --home %s up -d", s.cfg.Home)
		if s.cfg.UpCommand != nil {
			up = s.cfg.UpCommand()
		}
		return fmt.Sprintf("the Parley node is not running (start it with `%s`)", up)
	case errors.Is(err, localapi.ErrNoNode):
		return "the Parley node is not running (start it with `parley up -d`)"
	case errors.Is(err, context.DeadlineExceeded):
		return "the Parley node did not answer in time"
	}
	return localapi.UserText(err.Error())
}
