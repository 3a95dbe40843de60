package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/contacts"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/names"
	"github.com/parley-mesh/parley/rooms"
)

// The node's services in the local API's terms (localapi.Agents and
// localapi.Contacts): conversions to the API's types, and each service's
// errors given a status and a code.

// agentsAPI serves the agent service.
type agentsAPI struct{ n *Node }

var _ localapi.Agents = agentsAPI{}

func (a agentsAPI) addr(name string) string { return name + "@" + a.n.id.String() }

func (a agentsAPI) info(i agents.Info) localapi.AgentInfo {
	return localapi.AgentInfo{Name: i.Name, Address: a.addr(i.Name), Role: i.Role, WorkingOn: i.WorkingOn,
		Capabilities: orEmpty(i.Capabilities), Client: i.Client, Session: i.Session, ClientPID: i.ClientPID, State: i.State, LastSeen: i.LastSeen, Expires: i.Expires}
}

func (a agentsAPI) Register(ctx context.Context, req localapi.RegisterAgentRequest) (localapi.AgentInfo, error) {
	i, err := a.n.agents.Register(ctx, agents.RegisterRequest{Name: req.Name, Role: req.Role, WorkingOn: req.WorkingOn,
		Capabilities: req.Capabilities, Client: req.Client, Session: req.Session, TTLSeconds: req.TTLSeconds})
	return a.info(i), agentsError(err)
}

func (a agentsAPI) Heartbeat(ctx context.Context, name string, req localapi.HeartbeatRequest) (localapi.AgentInfo, error) {
	i, err := a.n.agents.Heartbeat(ctx, name, agents.HeartbeatRequest{State: req.State, WorkingOn: req.WorkingOn, Session: req.Session})
	return a.info(i), agentsError(err)
}

// guard refuses a call for an agent made by a session (SessionHeader)
// other than the one that holds the agent's name now: a session whose
// registration lapsed while another took the name does not act as it.
func (a agentsAPI) guard(ctx context.Context, agent string) error {
	session, _ := localapi.SessionOf(ctx)
	return agentsError(a.n.agents.Held(agent, session))
}

func (a agentsAPI) Unregister(ctx context.Context, name string) error {
	// The user lets the agent go: its pane (`parley run`) is not pasted
	// into, nor taken up again at the next start. The route goes first: a
	// route that found its agent unregistered would bind it again.
	//
	// An unregister that names a session and connection (the end of a
	// `parley mcp` connection) is made only while the registration is
	// still that connection's: a client that reconnected with the same
	// session key keeps the agent its new connection bound.
	session, conn := localapi.SessionOf(ctx)
	if err := a.n.agents.Ours(name, session, conn); err != nil {
		return agentsError(err)
	}
	if err := a.n.forgetTerminal(ctx, name); err != nil {
		return err
	}
	return agentsError(a.n.agents.UnregisterOf(ctx, name, session, conn))
}

func (a agentsAPI) List(context.Context) []localapi.AgentInfo {
	is := a.n.agents.List()
	out := make([]localapi.AgentInfo, len(is))
	for i, v := range is {
		out[i] = a.info(v)
	}
	return out
}

func (a agentsAPI) Who(ctx context.Context) []localapi.WhoEntry {
	ws := a.n.agents.Who(ctx)
	un := a.n.unreached(ctx)
	out := make([]localapi.WhoEntry, len(ws))
	for i, w := range ws {
		out[i] = localapi.WhoEntry{PeerID: w.PeerID, Handle: w.Handle, Agent: w.Agent, Address: w.Agent + "@" + w.PeerID,
			State: w.State, WorkingOn: w.WorkingOn, LastSeen: w.LastSeen, Local: w.Local, Role: w.Role, Capabilities: orEmpty(w.Capabilities)}
		if w.Local {
			out[i].Unreached = un[w.Agent]
		}
		if p, err := peer.Decode(w.PeerID); err == nil && a.n.names != nil {
			out[i].Name = a.n.names.Name(p)
		}
	}
	a.n.withClaims(out)
	return out
}

// Heard reports whether the node holds live presence of contact p (the
// inbox tells an agent that does not exist from one it cannot see).
func (a agentsAPI) Heard(_ context.Context, p peer.ID) bool { return a.n.agents.Heard(p) }

func (a agentsAPI) Find(ctx context.Context, q string) (localapi.FindResult, error) {
	res, err := a.n.agents.Search(ctx, q)
	cs := res.Cards
	out := make([]localapi.CardView, len(cs))
	for i, c := range cs {
		out[i] = localapi.CardView{PeerID: c.PeerID, Handle: c.Handle, Agent: c.Agent, Address: c.Agent + "@" + c.PeerID,
			Capabilities: orEmpty(c.Capabilities), Client: c.Client, Expires: c.Expires}
		p, err := peer.Decode(c.PeerID)
		if err != nil {
			continue
		}
		if a.n.names != nil {
			out[i].Name = a.n.names.NameOf(p, c.Handle)
		}
		out[i].Contact = p == a.n.ID() || (a.n.contacts != nil && orgContacts{a.n}.Active(p))
		if len(c.Member) > 0 && a.n.org != nil {
			if r, err := a.n.org.CheckCard(p, c.Member); err == nil {
				out[i].Org = &localapi.Membership{OrgID: r.Org.String(), Name: r.Name, Until: r.NotAfter}
			}
		}
	}
	return localapi.FindResult{Cards: out, LeftOutPerNode: res.LeftOutPerNode, LeftOutInAll: res.LeftOutInAll}, agentsError(err)
}

func (a agentsAPI) Session(ctx context.Context, req localapi.SessionRequest) (localapi.AgentInfo, error) {
	i, err := a.n.agents.Session(ctx, agents.SessionRequest{Session: req.Session, Name: req.Name, Fallback: req.Fallback, Connection: req.Connection,
		Client: req.Client, ClientPID: req.ClientPID, Role: req.Role, WorkingOn: req.WorkingOn, Capabilities: req.Capabilities,
		TTLSeconds: req.TTLSeconds})
	return a.info(i), agentsError(err)
}

func (a agentsAPI) ByProcess(_ context.Context, req localapi.ProcessRequest) (localapi.ProcessAgents, error) {
	pid, names := a.n.agents.ByProcess(req.PIDs)
	return localapi.ProcessAgents{PID: pid, Agents: orEmpty(names)}, nil
}

// agentsErrors give agent errors an HTTP status and a code.
var agentsErrors = localapi.ErrorTable{Rows: []localapi.Mapping{
	{Status: http.StatusBadRequest, Code: localapi.CodeBadRequest, Errs: []error{agents.ErrBadInput}},
	{Status: http.StatusNotFound, Code: localapi.CodeUnknownAgent, Errs: []error{agents.ErrUnknownAgent}},
	{Status: http.StatusConflict, Code: localapi.CodeNameTaken, Errs: []error{agents.ErrNameTaken}},
	{Status: http.StatusTooManyRequests, Code: localapi.CodeTooMany, Errs: []error{agents.ErrTooManyAgents}},
	{Status: http.StatusServiceUnavailable, Code: localapi.CodeClosed, Errs: []error{agents.ErrClosed}},
}}

func agentsError(err error) error { return agentsErrors.Wrap(err) }

// contactsAPI serves the contact service.
// contactsAPI is the local API's contacts; org, if set, names the
// organisation a contact was made through ("" if none).
type contactsAPI struct {
	cs  *contacts.Service
	org func(peer.ID) peer.ID
	// name is how a node reads (the names service's name: …SUFFIX while
	// its handle is not known, or when the handle it told is not shown);
	// nil: none.
	name func(peer.ID) string
	// fresh, if set, brings the names in line with the contact book before
	// a call's answer names the contact it changed.
	fresh func()
	// revoked, if set, is called after the user revoked a contact.
	revoked func()
	// resolve, if set, turns a name as the node shows it (handle, or
	// handle~SUFFIX) into the node's peer ID (names.Service.Resolve).
	resolve func(string) (peer.ID, error)
}

var _ localapi.Contacts = contactsAPI{}

func (c contactsAPI) entry(e contacts.Entry) localapi.ContactEntry {
	out := localapi.ContactEntry{ID: e.ID, PeerID: e.PeerID.String(), Handle: e.Handle, State: string(e.State), Note: e.Note, Expires: e.Expires, Scopes: e.Scopes}
	if c.name != nil {
		out.Name = c.name(e.PeerID)
	}
	return out
}

func (c contactsAPI) result(r contacts.Result, err error) (localapi.ContactResult, error) {
	if err != nil {
		return localapi.ContactResult{}, contactsError(err)
	}
	if c.fresh != nil {
		c.fresh() // an approved contact reads as its handle in the answer, not handle~SUFFIX
	}
	return localapi.ContactResult{ContactEntry: c.entry(r.Entry), Delivered: r.Delivered, Detail: r.Detail}, nil
}

func (c contactsAPI) Request(ctx context.Context, req localapi.ContactRequest) (localapi.ContactResult, error) {
	ai, err := contacts.ParseTarget(req.Target)
	if err != nil {
		return localapi.ContactResult{}, contactsError(err)
	}
	return c.result(c.cs.Request(ctx, ai, req.Note))
}

func (c contactsAPI) Approve(ctx context.Context, req localapi.ContactApproveRequest) (localapi.ContactResult, error) {
	d, err := contacts.ParseExpires(req.Expires)
	if err != nil {
		return localapi.ContactResult{}, contactsError(err)
	}
	ref, err := c.ref(req.ID)
	if err != nil {
		return localapi.ContactResult{}, err
	}
	return c.result(c.cs.Approve(ctx, ref, d))
}

func (c contactsAPI) Deny(ctx context.Context, ref string) (localapi.ContactResult, error) {
	ref, err := c.ref(ref)
	if err != nil {
		return localapi.ContactResult{}, err
	}
	return c.result(c.cs.Deny(ctx, ref))
}

// ref turns a contact's or requester's name as the node shows it (`parley
// contact list`'s NAME: its handle, or handle~SUFFIX where handles read
// alike) into its peer ID; a request ID, a peer ID or a name no node has
// goes on as it is, for the contacts service to take or refuse. A name
// that reads like several nodes' is refused, naming each.
func (c contactsAPI) ref(ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	if c.resolve == nil || ref == "" {
		return ref, nil
	}
	if _, err := peer.Decode(ref); err == nil {
		return ref, nil
	}
	for _, e := range c.cs.List() {
		if e.ID == ref {
			return ref, nil
		}
	}
	p, err := c.resolve(ref)
	switch {
	case err == nil:
		return p.String(), nil
	case errors.Is(err, names.ErrAmbiguous):
		return "", contactsError(fmt.Errorf("%w: %s", contacts.ErrBadInput, strings.TrimPrefix(err.Error(), "names: ")))
	}
	return ref, nil
}

func (c contactsAPI) Revoke(ctx context.Context, ref string) (localapi.ContactResult, error) {
	ref, err := c.ref(ref)
	if err != nil {
		return localapi.ContactResult{}, err
	}
	res, err := c.cs.Revoke(ctx, ref)
	if err == nil && c.revoked != nil {
		// After the revocation went out: closing the peer's connections
		// before would leave it untold until it connects again.
		c.revoked()
	}
	return c.result(res, err)
}

func (c contactsAPI) List(context.Context) []localapi.ContactEntry {
	es := c.cs.List()
	out := make([]localapi.ContactEntry, len(es))
	for i, e := range es {
		out[i] = c.entry(e)
		if c.org != nil && e.State == consent.StateActive {
			if o := c.org(e.PeerID); o != "" {
				out[i].Org = o.String()
			}
		}
	}
	return out
}

// contactsErrors give contact errors an HTTP status and a code.
var contactsErrors = localapi.ErrorTable{Rows: []localapi.Mapping{
	{Status: http.StatusBadGateway, Code: localapi.CodePeerRefused, Errs: []error{consent.ErrRemote}},
	{Status: http.StatusBadGateway, Code: localapi.CodeUnreachable, Errs: []error{contacts.ErrUnreachable}},
	{Status: http.StatusNotFound, Code: localapi.CodeNotFound, Errs: []error{contacts.ErrUnknown, consent.ErrNotFound, consent.ErrNoContact}},
	{Status: http.StatusBadRequest, Code: localapi.CodeTooLarge, Errs: []error{consent.ErrTooLong}},
	{Status: http.StatusBadRequest, Code: localapi.CodeBadRequest, Errs: []error{contacts.ErrBadInput, consent.ErrMalformed, consent.ErrWrongPeers}},
	{Status: http.StatusConflict, Code: localapi.CodeConflict, Errs: []error{consent.ErrAlreadyContact, consent.ErrState}},
}}

func contactsError(err error) error { return contactsErrors.Wrap(err) }

// orEmpty returns s, or an empty slice for nil, so JSON shows [].
func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// invitesAPI serves the invites that wait for the user (rooms).
type invitesAPI struct{ n *Node }

var _ localapi.Invites = invitesAPI{}

func (a invitesAPI) List(context.Context) []localapi.WaitingInvite {
	ws := a.n.rooms.Invites()
	out := make([]localapi.WaitingInvite, len(ws))
	for i, w := range ws {
		out[i] = localapi.WaitingInvite{ID: string(w.Room), RoomName: w.Name, Inviter: w.Inviter.String(), At: w.At, Expires: w.Expires, ToldBack: w.ToldBack}
	}
	return out
}

func (a invitesAPI) Accept(_ context.Context, ref string) (localapi.InviteAnswer, error) {
	by := a.inviter(ref)
	id, err := a.n.rooms.AcceptInvite(ref)
	if err == nil {
		a.n.Audit(audit.Record{Actor: string(identity.HumanAgent), Action: audit.RoomAccept, Subject: string(id), Detail: by})
	}
	return localapi.InviteAnswer{ID: string(id), Accepted: true}, invitesError(err)
}

func (a invitesAPI) Decline(_ context.Context, ref string) (localapi.InviteAnswer, error) {
	by := a.inviter(ref)
	id, err := a.n.rooms.DeclineInvite(ref)
	if err == nil {
		a.n.Audit(audit.Record{Actor: string(identity.HumanAgent), Action: audit.RoomDecline, Subject: string(id), Detail: by})
	}
	return localapi.InviteAnswer{ID: string(id)}, invitesError(err)
}

// inviter is the audit detail of the waiting invite ref names.
func (a invitesAPI) inviter(ref string) map[string]string {
	for _, w := range a.n.rooms.Invites() {
		if ref != "" && strings.HasPrefix(string(w.Room), ref) {
			return map[string]string{"inviter": w.Inviter.String(), "name": w.Name}
		}
	}
	return nil
}

// invitesErrors give errors about waiting invites an HTTP status and a code.
var invitesErrors = localapi.ErrorTable{Rows: []localapi.Mapping{
	{Status: http.StatusNotFound, Code: localapi.CodeUnknownRoom, Errs: []error{rooms.ErrUnknownRoom}},
	{Status: http.StatusConflict, Code: localapi.CodeAmbiguous, Errs: []error{rooms.ErrMalformed}},
	{Status: http.StatusServiceUnavailable, Code: localapi.CodeClosed, Errs: []error{rooms.ErrClosed}},
}}

func invitesError(err error) error { return invitesErrors.Wrap(err) }
