package localapi

import (
	"context"
	"net/http"
	"strings"
)

// SessionHeader names the session key a call is made for (an MCP session,
// or one of its threads): the node refuses a call for an agent that
// another session holds (CodeNameTaken), so a session whose registration
// lapsed while another took its name does not act as that name.
const SessionHeader = "Parley-Session"

// ConnectionHeader names the connection (one run of an MCP server) a call
// is made by: the node unregisters an agent at the end of a connection
// only while the registration is still that connection's.
const ConnectionHeader = "Parley-Connection"

type sessionKey struct{}

type sessionOf struct{ session, conn string }

// WithSession returns ctx marked with a session key and a connection
// token: the Client sends them (SessionHeader, ConnectionHeader) with the
// calls made with it, and the Server marks the context of the requests
// that carry them.
func WithSession(ctx context.Context, session, conn string) context.Context {
	return context.WithValue(ctx, sessionKey{}, sessionOf{session, conn})
}

// SessionOf returns the session key and connection token of ctx
// (WithSession), "" for none.
func SessionOf(ctx context.Context) (session, conn string) {
	v, _ := ctx.Value(sessionKey{}).(sessionOf)
	return v.session, v.conn
}

// sessionRequest returns r with its context marked when it names a session.
func sessionRequest(r *http.Request) *http.Request {
	sess, conn := r.Header.Get(SessionHeader), r.Header.Get(ConnectionHeader)
	if sess == "" && conn == "" {
		return r
	}
	return r.WithContext(WithSession(r.Context(), sess, conn))
}

// AgentGuard checks that the session of ctx (SessionOf) may act as agent;
// an error refuses the request.
type AgentGuard func(ctx context.Context, agent string) error

// GuardAgents has every request for an agent (/v1/agents/{agent}…) that
// names a session checked by g before it is served.
func (s *Server) GuardAgents(g AgentGuard) { s.guard = g }

// guarded reports the guard's refusal of r, nil if it may be served.
func (s *Server) guarded(r *http.Request) error {
	if s.guard == nil {
		return nil
	}
	if sess, _ := SessionOf(r.Context()); sess == "" {
		return nil
	}
	// The unescaped path, as the mux matches it: /v1/%61gents/bob/say is
	// bob's say there, and so it is here (an agent's name holds no /).
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/agents/")
	if !ok {
		return nil
	}
	agent, _, _ := strings.Cut(rest, "/")
	if agent == "" {
		return nil
	}
	return s.guard(r.Context(), agent)
}
