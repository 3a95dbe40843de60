package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/moderation"
	"github.com/parley-mesh/parley/rooms"
)

// newModeration builds the moderation service; it needs the store.
func (n *Node) newModeration() error {
	m, err := moderation.New(moderation.Config{
		Self:      n.id,
		Store:     n.db,
		PostLimit: n.cfg.AgentPostLimit,
		Registry:  n.reg,
		Audit:     n.Audit,
	})
	if err != nil {
		return err
	}
	n.mod = m
	return nil
}

// admitAgent refuses to register a killed agent's name.
func (n *Node) admitAgent(name identity.AgentName) error {
	if n.mod != nil && n.mod.Killed(name) {
		return localapi.Errorf(http.StatusForbidden, localapi.CodeKilled,
			"agent %s was killed by this node's user (parley agent kill): it cannot register or post until `parley agent revive %s`", name, name)
	}
	return nil
}

// renameAgent refuses a muted agent's session another name: under it, its
// posts would pass while the mute holds. So too for an agent over its post
// limit: a new name would start with a full one.
func (n *Node) renameAgent(name identity.AgentName) error {
	if n.mod == nil {
		return nil
	}
	if n.mod.Muted(name) {
		return localapi.Errorf(http.StatusForbidden, localapi.CodeMuted,
			"agent %s is muted by this node's user (parley agent mute): its session cannot take another name while the mute holds", name)
	}
	if err := n.mod.MayPost(name); errors.Is(err, moderation.ErrRateLimited) {
		return localapi.Errorf(http.StatusTooManyRequests, localapi.CodeTooMany,
			"%s; its session cannot take another name until then", trimPrefix(err.Error()))
	}
	return nil
}

// modEdge is moderation as the agent edge asks it.
type modEdge struct{ m *moderation.Service }

func (e modEdge) CheckPost(agent identity.AgentName) error { return modError(e.m.CheckPost(agent)) }

// MayPost is CheckPost without counting the post (Posted counts it once
// made).
func (e modEdge) MayPost(agent identity.AgentName) error { return modError(e.m.MayPost(agent)) }

// Posted counts a post MayPost let through.
func (e modEdge) Posted(agent identity.AgentName) { e.m.Posted(agent) }

func (e modEdge) Hidden(addr string) bool { return e.m.Hidden(addr) }

// modErrors give moderation errors an HTTP status and a code.
var modErrors = localapi.ErrorTable{Rows: []localapi.Mapping{
	{Status: http.StatusForbidden, Code: localapi.CodeKilled, Errs: []error{moderation.ErrKilled}},
	{Status: http.StatusForbidden, Code: localapi.CodeMuted, Errs: []error{moderation.ErrMuted}},
	{Status: http.StatusTooManyRequests, Code: localapi.CodeTooMany, Errs: []error{moderation.ErrRateLimited}},
	{Status: http.StatusBadRequest, Code: localapi.CodeBadRequest, Errs: []error{moderation.ErrBadInput}},
	{Status: http.StatusNotFound, Code: localapi.CodeUnknownAgent, Errs: []error{moderation.ErrNotFound}},
}, Message: func(err error) string { return trimPrefix(err.Error()) }}

func modError(err error) error { return modErrors.Wrap(err) }

func trimPrefix(s string) string {
	for _, e := range []error{moderation.ErrKilled, moderation.ErrMuted, moderation.ErrRateLimited, moderation.ErrBadInput, moderation.ErrNotFound} {
		if p := e.Error() + ": "; len(s) > len(p) && s[:len(p)] == p {
			return s[len(p):]
		}
	}
	return s
}

// modAPI serves moderation on the local API.
type modAPI struct{ n *Node }

var _ localapi.Moderation = modAPI{}

func rule(r moderation.Rule) localapi.ModerationRule {
	out := localapi.ModerationRule{Agent: r.Agent, Muted: r.Muted, Killed: r.Killed, By: r.By, At: r.At.UTC()}
	if !r.MutedUntil.IsZero() {
		t := r.MutedUntil.UTC()
		out.MutedUntil = &t
	}
	return out
}

func by(req localapi.ModerateRequest) string {
	if req.By == "" {
		return "human"
	}
	return req.By
}

// resolve turns NAME@HANDLE, as names show an agent, into NAME@PEER_ID;
// anything else is returned as it is, for the moderation service to read.
func (m modAPI) resolve(agent string) (string, error) {
	agent = strings.TrimSpace(agent)
	name, node, ok := strings.Cut(agent, "@")
	if !ok || m.n.names == nil {
		return agent, nil
	}
	if _, err := identity.ParseAgentAddr(agent); err == nil {
		return agent, nil
	}
	if _, err := peer.Decode(node); err == nil {
		return agent, nil // a peer ID with a bad name: the service says what is wrong
	}
	p, err := m.n.names.Resolve(node)
	if err != nil {
		return "", localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownAgent, "%q: %s (an agent's address is NAME@PEER_ID or NAME@HANDLE)",
			agent, strings.TrimPrefix(err.Error(), "names: "))
	}
	return name + "@" + p.String(), nil
}

// known checks that an agent can be muted here: one of this node's agents
// (registered, or a member of one of its rooms), or a member agent of one of
// this node's rooms.
func (m modAPI) known(ctx context.Context, agent string) (string, error) {
	agent, err := m.resolve(agent)
	if err != nil {
		return "", err
	}
	a, err := m.n.mod.Addr(agent)
	if err != nil {
		return "", modError(err)
	}
	addr := a.String()
	if a.Peer == m.n.id && slices.ContainsFunc(m.n.agents.List(), func(i agents.Info) bool { return i.Name == string(a.Name) }) {
		return addr, nil
	}
	for _, in := range m.n.rooms.List() {
		if slices.Contains(in.Agents, addr) {
			return addr, nil
		}
	}
	if _, ok := m.n.mod.Rule(addr); ok {
		return addr, nil // muted or killed before: it may be undone
	}
	if a.Peer == m.n.id {
		return "", localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownAgent,
			"no agent %s on this node and in none of its rooms (see `parley agent list`)", a.Name)
	}
	return "", localapi.Errorf(http.StatusNotFound, localapi.CodeUnknownAgent,
		"%s is not a member of any room of this node: you can mute another node's agent in your rooms only (see `parley room list`)", addr)
}

func (m modAPI) Mute(ctx context.Context, req localapi.ModerateRequest) (localapi.ModerationRule, error) {
	addr, err := m.known(ctx, req.Agent)
	if err != nil {
		return localapi.ModerationRule{}, err
	}
	if req.Seconds < 0 || req.Seconds > moderation.MaxMute.Seconds() {
		return localapi.ModerationRule{}, localapi.BadRequest("mute for %gs: give 1s to %s, or nothing for until unmuted", req.Seconds, moderation.MaxMute)
	}
	r, err := m.n.mod.Mute(addr, time.Duration(req.Seconds*float64(time.Second)), by(req))
	return rule(r), modError(err)
}

func (m modAPI) Unmute(ctx context.Context, req localapi.ModerateRequest) (localapi.ModerationRule, error) {
	agent, err := m.resolve(req.Agent)
	if err != nil {
		return localapi.ModerationRule{}, err
	}
	r, err := m.n.mod.Unmute(agent, by(req))
	return rule(r), modError(err)
}

func (m modAPI) Kill(ctx context.Context, req localapi.ModerateRequest) (localapi.ModerationRule, error) {
	agent, err := m.resolve(req.Agent)
	if err != nil {
		return localapi.ModerationRule{}, err
	}
	a, err := m.n.mod.Addr(agent)
	if err != nil {
		return localapi.ModerationRule{}, modError(err)
	}
	if a.Peer != m.n.id {
		return localapi.ModerationRule{}, localapi.BadRequest("%s is another node's agent: kill stops this node's agents (mute hides another's)", a)
	}
	if _, err := m.known(ctx, string(a.Name)); err != nil {
		return localapi.ModerationRule{}, err
	}
	r, err := m.n.mod.Kill(string(a.Name), by(req))
	if err != nil {
		return rule(r), modError(err)
	}
	if err := m.n.releaseAll(ctx, a.Name); err != nil {
		return rule(r), fmt.Errorf("agent %s is killed (its posts are refused), but its claims could not all be released: %w", a.Name, err)
	}
	if _, err := m.n.agents.Unbind(ctx, string(a.Name)); err != nil {
		return rule(r), fmt.Errorf("agent %s is killed (its posts are refused), but its registration could not be ended: %w", a.Name, err)
	}
	if err := m.n.forgetTerminal(ctx, string(a.Name)); err != nil {
		return rule(r), fmt.Errorf("agent %s is killed, but its terminal wake-up route could not be dropped: %w", a.Name, err)
	}
	return rule(r), nil
}

func (m modAPI) Revive(ctx context.Context, req localapi.ModerateRequest) (localapi.ModerationRule, error) {
	agent, err := m.resolve(req.Agent)
	if err != nil {
		return localapi.ModerationRule{}, err
	}
	r, err := m.n.mod.Revive(agent, by(req))
	return rule(r), modError(err)
}

func (m modAPI) Rules(context.Context) []localapi.ModerationRule {
	rs := m.n.mod.List()
	out := make([]localapi.ModerationRule, len(rs))
	for i, r := range rs {
		out[i] = rule(r)
	}
	return out
}

// refused reports whether the rooms' policy refuses p: a node this user cut
// off (a contact revoked, expired or denied), or one no member this node
// trusts vouched for (a stranger, or a node invited by a cut-off one). A
// room stores such a node's events only where others built on them, and
// the inbox keeps them from this node's agents.
func refused(policy rooms.Policy) func(peer.ID) bool {
	return func(p peer.ID) bool { return policy.Allowed(p) != nil }
}
