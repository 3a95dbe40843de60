package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// SessionRequest binds a client's session to an agent and registers it.
// Nil fields keep what the session had; a new session starts from
// Fallback (made unique on this node) and empty fields.
type SessionRequest struct {
	Session      string
	Name         string // rename the session's agent
	Fallback     string
	Client       string
	ClientPID    int    // the client program's process on this machine, 0 if not known
	Connection   string // the binding connection's token (RegisterRequest.Connection)
	Role         *string
	WorkingOn    *string
	Capabilities *[]string
	TTLSeconds   int
}

// profile is what the node keeps of a session (schema.Session): its agent
// name and card, so a session that reconnects is the same agent again.
type profile struct {
	Name         string   `json:"name"`
	Role         string   `json:"role,omitempty"`
	WorkingOn    string   `json:"working_on,omitempty"`
	Capabilities []string `json:"capabilities,omitempty"`
	Client       string   `json:"client,omitempty"`
}

// Lookup is the read a Store may also offer; sessions need it.
type Lookup interface {
	Lookup(key []byte) ([]byte, bool, error)
}

// loadProfile reads a session's profile; ok is false for a new session.
// A value that is not JSON is an agent name alone (as older nodes wrote).
func (s *Service) loadProfile(session string) (profile, bool, error) {
	db, ok := s.cfg.Store.(Lookup)
	if !ok {
		s.mu.Lock()
		p, found := s.sessions[session]
		s.mu.Unlock()
		return p, found, nil
	}
	v, found, err := db.Lookup(schema.Session(session))
	if err != nil || !found {
		return profile{}, false, err
	}
	var p profile
	if len(v) > 0 && v[0] == '{' {
		if err := json.Unmarshal(v, &p); err != nil {
			return profile{}, false, fmt.Errorf("agents: session %.40q: %w", session, err)
		}
		return p, true, nil
	}
	return profile{Name: string(v)}, true, nil
}

func (s *Service) saveProfile(session string, p profile) error {
	if _, ok := s.cfg.Store.(Lookup); !ok {
		s.mu.Lock()
		if s.sessions == nil {
			s.sessions = make(map[string]profile)
		}
		s.sessions[session] = p
		s.mu.Unlock()
		return nil
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return s.cfg.Store.Apply([]schema.Op{{Key: schema.Session(session), Val: raw}}, false)
}

// Session binds req.Session to an agent and registers that agent with the
// session's card (updated by req's fields), so a session that reconnects
// gets its name, role, capabilities and what it works on back. Renaming
// (req.Name) unregisters the old name. A new session takes req.Fallback,
// with "-2", "-3", … added while another live session holds it.
func (s *Service) Session(ctx context.Context, req SessionRequest) (Info, error) {
	if err := s.alive(); err != nil {
		return Info{}, err
	}
	if req.Session == "" {
		return Info{}, fmt.Errorf("%w: a session key is needed", ErrBadInput)
	}
	if err := checkSession(req.Session); err != nil {
		return Info{}, err
	}
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	p, known, err := s.loadProfile(req.Session)
	if err != nil {
		return Info{}, err
	}
	old := identity.AgentName(p.Name)
	if n, err := identity.ParseAgentName(p.Name); err != nil || reserved(n) != nil { // bound before the name was reserved
		known, old = false, ""
	}
	if known && s.cfg.Admit != nil {
		// The session's agent was killed (Unbind keeps its sessions):
		// the session is refused, under any name, until it is revived.
		if err := s.cfg.Admit(old); err != nil {
			return Info{}, err
		}
	}
	if req.Client != "" {
		p.Client = req.Client
	}
	if req.Role != nil {
		p.Role = *req.Role
	}
	if req.WorkingOn != nil {
		p.WorkingOn = *req.WorkingOn
	}
	if req.Capabilities != nil {
		p.Capabilities = *req.Capabilities
	}
	reg := func(name string) (Info, error) {
		return s.Register(ctx, RegisterRequest{Name: name, Role: p.Role, WorkingOn: p.WorkingOn, Capabilities: p.Capabilities,
			Client: p.Client, Session: req.Session, ClientPID: req.ClientPID, TTLSeconds: req.TTLSeconds, Connection: req.Connection})
	}
	fallback := func() (Info, error) {
		base, err := ParseName(req.Fallback)
		if err != nil {
			return Info{}, fmt.Errorf("%w (fallback name)", err)
		}
		for i := 1; ; i++ {
			name := string(base)
			if i > 1 {
				suffix := "-" + strconv.Itoa(i)
				name = strings.TrimRight(name[:min(len(name), 64-len(suffix))], "-._") + suffix
			}
			info, err := reg(name)
			if err == nil {
				return info, nil
			}
			if !errors.Is(err, ErrNameTaken) && !errors.Is(err, ErrReservedName) || i >= 100 {
				return Info{}, err
			}
		}
	}
	var info Info
	switch {
	case req.Name != "":
		n, err := ParseName(req.Name)
		if err != nil {
			return Info{}, err
		}
		if known && old != "" && n != old && s.cfg.Rename != nil {
			if err := s.cfg.Rename(old); err != nil {
				return Info{}, err
			}
		}
		info, err = reg(string(n))
		if err != nil {
			return Info{}, err
		}
	case known:
		info, err = reg(string(old))
		if errors.Is(err, ErrNameTaken) && req.Fallback != "" {
			// Another session took the name while this one's
			// registration had lapsed: it holds it now, and this
			// session takes a name of its own.
			info, err = fallback()
		}
		if err != nil {
			return Info{}, err
		}
	default:
		info, err = fallback()
		if err != nil {
			return Info{}, err
		}
	}
	p.Name = info.Name
	if old != "" && string(old) != info.Name {
		s.mu.Lock()
		a := s.reg.agents[old]
		ours := a != nil && a.Session == req.Session
		s.mu.Unlock()
		if ours {
			if err := s.Unregister(ctx, string(old)); err != nil && !errors.Is(err, ErrUnknownAgent) { // swept since
				return Info{}, err
			}
		}
	}
	if err := s.saveProfile(req.Session, p); err != nil {
		return Info{}, fmt.Errorf("agents: keep session %.40q: %w", req.Session, err)
	}
	return info, nil
}

// SessionName returns the name the node binds a session key to: the one
// its agent took last (Session), whether or not it is registered now; ""
// for a session the node does not know.
func (s *Service) SessionName(session string) (string, error) {
	p, known, err := s.loadProfile(session)
	if err != nil || !known {
		return "", err
	}
	return p.Name, nil
}

// Unbind ends an agent (its kill): its registration (its card is
// withdrawn). The sessions bound to its name stay bound to it, so while
// the name is refused (Config.Admit: killed) Session refuses them too,
// under any name, and a reconnecting session does not come back under a
// name of its own; once admitted again (revived) they are the agent again.
// It returns how many sessions are bound to the name.
func (s *Service) Unbind(ctx context.Context, name string) (sessions int, err error) {
	n, err := ParseName(name)
	if err != nil {
		return 0, fmt.Errorf("agents: unbind: %w", err)
	}
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	if err := s.Unregister(ctx, string(n)); err != nil && !errors.Is(err, ErrUnknownAgent) { // sessions only
		return 0, err
	}
	if _, ok := s.cfg.Store.(Lookup); !ok {
		s.mu.Lock()
		for _, p := range s.sessions {
			if p.Name == string(n) {
				sessions++
			}
		}
		s.mu.Unlock()
		return sessions, nil
	}
	prefix := schema.Session("")
	err = s.cfg.Store.ScanFrom(prefix, nil, false, func(k, v []byte) bool {
		name := string(v)
		if len(v) > 0 && v[0] == '{' {
			var p profile
			if json.Unmarshal(v, &p) != nil {
				return true
			}
			name = p.Name
		}
		if name == string(n) {
			sessions++
		}
		return true
	})
	if err != nil {
		return 0, fmt.Errorf("agents: unbind %s: %w", n, err)
	}
	return sessions, nil
}
