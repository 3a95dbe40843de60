package localapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Edge is what the node offers its agents: each call is one agent's
// ({agent} in the path), and with Take set its answer also carries (and
// hands out) the agent's pending items, so a tool call is one round trip.
type Edge interface {
	OpenRoom(ctx context.Context, agent string, req OpenRoomRequest) (OpenRoomResult, error)
	Invite(ctx context.Context, agent string, req InviteRequest) (Posted, error)
	Say(ctx context.Context, agent string, req SayRequest) (Posted, error)
	Reply(ctx context.Context, agent string, req ReplyRequest) (Posted, error)
	// Ask posts an ask and waits up to req.WaitSeconds for its first reply.
	Ask(ctx context.Context, agent string, req AskRequest) (AskResult, error)
	// WaitReply waits up to wait for the first reply to the agent's ask.
	WaitReply(ctx context.Context, agent, ask string, wait time.Duration, take bool) (AskResult, error)
	Read(ctx context.Context, agent string, req ReadRequest) (ReadResult, error)
	Leave(ctx context.Context, agent string, req LeaveRequest) (LeaveResult, error)
	Dismiss(ctx context.Context, agent string, req DismissRequest) (Pending, error)
	// TakeInvitation takes the agent's invitations to one room from its
	// inbox, handing out nothing else.
	TakeInvitation(ctx context.Context, agent string, req InvitationRequest) (InvitationResult, error)
	Who(ctx context.Context, agent string, req AgentRequest) (WhoResult, error)
	// Take returns the agent's pending items and hands them out.
	Take(ctx context.Context, agent string) (Pending, error)
	// Peek returns what Take would, handing out nothing.
	Peek(ctx context.Context, agent string) (Pending, error)
	// Owed lists the asks the agent owes now (the wake-up adapters' view).
	Owed(ctx context.Context, agent string) ([]Item, error)
	// Wait blocks until something new is pending for the agent (or the
	// wait passes), then takes it, or only peeks (see WaitRequest).
	Wait(ctx context.Context, agent string, req WaitRequest) (Pending, error)
	// Ack confirms a two-step hand-out (Pending.Hand of a call made with
	// TwoStep): its items are not offered again.
	Ack(ctx context.Context, agent string, req AckRequest) (AckResult, error)
}

// HandleEdge adds the agent endpoints ({agent} is the agent's name on this
// node; "take" in a request, or ?take=1, adds its pending items to the
// answer):
//
//	POST /v1/agents/{agent}/rooms              OpenRoomRequest → OpenRoomResult
//	POST /v1/agents/{agent}/invite             InviteRequest → Posted
//	POST /v1/agents/{agent}/say                SayRequest → Posted
//	POST /v1/agents/{agent}/reply              ReplyRequest → Posted
//	POST /v1/agents/{agent}/ask                AskRequest → AskResult (blocks up to wait_seconds)
//	GET  /v1/agents/{agent}/asks/{id}/reply    ?seconds=&take= → AskResult (blocks)
//	POST /v1/agents/{agent}/read               ReadRequest → ReadResult
//	POST /v1/agents/{agent}/leave              LeaveRequest → LeaveResult
//	POST /v1/agents/{agent}/dismiss            DismissRequest → Pending
//	POST /v1/agents/{agent}/invitations/take   InvitationRequest → InvitationResult
//	POST /v1/agents/{agent}/who                AgentRequest → WhoResult
//	POST /v1/agents/{agent}/take               → Pending (handed out)
//	GET  /v1/agents/{agent}/pending            → Pending (nothing handed out)
//	GET  /v1/agents/{agent}/owed               → [Item] (the asks it owes)
//	GET  /v1/agents/{agent}/wait               ?seconds=&take=&after= → Pending (blocks until something new)
//	POST /v1/agents/{agent}/ack                AckRequest → AckResult (confirms a two-step hand-out, or the items of it shown)
//
// A request with the header HandHeader ("Parley-Hand: two-step") hands out
// in two steps: its answer's Pending.Hand is to be confirmed with ack once
// what was handed out reached the agent, else it is offered again.
func (s *Server) HandleEdge(e Edge) {
	agent := func(r *http.Request) string { return r.PathValue("agent") }
	take := func(r *http.Request) bool { v, _ := strconv.ParseBool(r.URL.Query().Get("take")); return v }
	withBody(s, "POST /v1/agents/{agent}/rooms", false, func(r *http.Request, req OpenRoomRequest) (OpenRoomResult, error) {
		return e.OpenRoom(r.Context(), agent(r), req)
	})
	withBody(s, "POST /v1/agents/{agent}/invite", false, func(r *http.Request, req InviteRequest) (Posted, error) {
		return e.Invite(r.Context(), agent(r), req)
	})
	withBody(s, "POST /v1/agents/{agent}/say", false, func(r *http.Request, req SayRequest) (Posted, error) {
		return e.Say(r.Context(), agent(r), req)
	})
	withBody(s, "POST /v1/agents/{agent}/reply", false, func(r *http.Request, req ReplyRequest) (Posted, error) {
		return e.Reply(r.Context(), agent(r), req)
	})
	withBody(s, "POST /v1/agents/{agent}/ask", false, func(r *http.Request, req AskRequest) (AskResult, error) {
		if req.WaitSeconds < 0 || req.WaitSeconds > MaxWait.Seconds() {
			return AskResult{}, BadRequest("wait_seconds must be 0 to %.0f", MaxWait.Seconds())
		}
		return e.Ask(r.Context(), agent(r), req)
	})
	noBody(s, "GET /v1/agents/{agent}/asks/{id}/reply", func(r *http.Request) (AskResult, error) {
		d, err := waitOf(r)
		if err != nil {
			return AskResult{}, err
		}
		return e.WaitReply(r.Context(), agent(r), r.PathValue("id"), d, take(r))
	})
	withBody(s, "POST /v1/agents/{agent}/read", true, func(r *http.Request, req ReadRequest) (ReadResult, error) {
		return e.Read(r.Context(), agent(r), req)
	})
	withBody(s, "POST /v1/agents/{agent}/leave", false, func(r *http.Request, req LeaveRequest) (LeaveResult, error) {
		return e.Leave(r.Context(), agent(r), req)
	})
	withBody(s, "POST /v1/agents/{agent}/dismiss", false, func(r *http.Request, req DismissRequest) (Pending, error) {
		return e.Dismiss(r.Context(), agent(r), req)
	})
	withBody(s, "POST /v1/agents/{agent}/invitations/take", false, func(r *http.Request, req InvitationRequest) (InvitationResult, error) {
		return e.TakeInvitation(r.Context(), agent(r), req)
	})
	withBody(s, "POST /v1/agents/{agent}/who", true, func(r *http.Request, req AgentRequest) (WhoResult, error) {
		return e.Who(r.Context(), agent(r), req)
	})
	withBody(s, "POST /v1/agents/{agent}/take", true, func(r *http.Request, _ AgentRequest) (Pending, error) {
		return e.Take(r.Context(), agent(r))
	})
	noBody(s, "GET /v1/agents/{agent}/pending", func(r *http.Request) (Pending, error) {
		return e.Peek(r.Context(), agent(r))
	})
	noBody(s, "GET /v1/agents/{agent}/owed", func(r *http.Request) ([]Item, error) {
		it, err := e.Owed(r.Context(), agent(r))
		return orEmpty(it), err
	})
	noBody(s, "GET /v1/agents/{agent}/wait", func(r *http.Request) (Pending, error) {
		d, err := waitOf(r)
		if err != nil {
			return Pending{}, err
		}
		return e.Wait(r.Context(), agent(r), WaitRequest{Seconds: d.Seconds(), Take: take(r), After: r.URL.Query().Get("after")})
	})
	withBody(s, "POST /v1/agents/{agent}/ack", false, func(r *http.Request, req AckRequest) (AckResult, error) {
		if req.Hand == "" {
			return AckResult{}, BadRequest("hand is empty: give the hand of the answer to confirm (its pending.hand)")
		}
		return e.Ack(r.Context(), agent(r), req)
	})
}

// blocking bounds a call that waits up to d on the node, for a caller
// whose ctx has no deadline: d and blockingMargin, so the node answers
// before the client gives up. A caller's own deadline is kept as it is,
// never cut short (the CLI's is --timeout plus its --wait).
func blocking(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d+blockingMargin)
}

// blockingMargin is what blocking gives a call past its wait on the node:
// a post right after the node started may first wait up to 10 s for the
// node's own events (node.Config.OwnEventsWait), then write and publish.
// Before it was 10 s, and a claim made then (the board room's other
// members offline) failed on the client as a timeout though it was made.
const blockingMargin = 30 * time.Second

func (c *Client) agentCall(ctx context.Context, method, agent, rest string, in, out any) error {
	p, err := agentPath(agent, rest)
	if err != nil {
		return err
	}
	return c.do(ctx, method, p, in, out)
}

// OpenRoom creates a room as agent and brings members in.
func (c *Client) OpenRoom(ctx context.Context, agent string, req OpenRoomRequest) (OpenRoomResult, error) {
	var v OpenRoomResult
	return v, c.agentCall(ctx, "POST", agent, "/rooms", req, &v)
}

// Invite brings a member (an agent, or a node) into a room, as agent.
func (c *Client) Invite(ctx context.Context, agent string, req InviteRequest) (Posted, error) {
	var v Posted
	return v, c.agentCall(ctx, "POST", agent, "/invite", req, &v)
}

// Say posts a message (or an ask, without waiting) as agent.
func (c *Client) Say(ctx context.Context, agent string, req SayRequest) (Posted, error) {
	var v Posted
	return v, c.agentCall(ctx, "POST", agent, "/say", req, &v)
}

// Reply answers a message or an ask, in its room, as agent.
func (c *Client) Reply(ctx context.Context, agent string, req ReplyRequest) (Posted, error) {
	var v Posted
	return v, c.agentCall(ctx, "POST", agent, "/reply", req, &v)
}

// Ask posts an ask as agent and waits up to req.WaitSeconds for its reply.
func (c *Client) Ask(ctx context.Context, agent string, req AskRequest) (AskResult, error) {
	var v AskResult
	ctx, cancel := blocking(ctx, time.Duration(req.WaitSeconds*float64(time.Second)))
	defer cancel()
	return v, c.agentCall(ctx, "POST", agent, "/ask", req, &v)
}

// WaitReply waits up to wait for the first reply to agent's ask.
func (c *Client) WaitReply(ctx context.Context, agent, ask string, wait time.Duration, take bool) (AskResult, error) {
	var v AskResult
	id, err := segment("the ask ID", ask)
	if err != nil {
		return v, err
	}
	ctx, cancel := blocking(ctx, wait)
	defer cancel()
	q := url.Values{"seconds": {strconv.FormatFloat(wait.Seconds(), 'f', 3, 64)}, "take": {strconv.FormatBool(take)}}
	return v, c.agentCall(ctx, "GET", agent, "/asks/"+id+"/reply?"+q.Encode(), nil, &v)
}

// Read reads what agent has not seen (or a room's last events).
func (c *Client) Read(ctx context.Context, agent string, req ReadRequest) (ReadResult, error) {
	var v ReadResult
	return v, c.agentCall(ctx, "POST", agent, "/read", req, &v)
}

// Leave takes agent (or with req.Node the node) out of a room.
func (c *Client) Leave(ctx context.Context, agent string, req LeaveRequest) (LeaveResult, error) {
	var v LeaveResult
	return v, c.agentCall(ctx, "POST", agent, "/leave", req, &v)
}

// Dismiss drops an ask agent owes.
func (c *Client) Dismiss(ctx context.Context, agent string, req DismissRequest) (Pending, error) {
	var v Pending
	return v, c.agentCall(ctx, "POST", agent, "/dismiss", req, &v)
}

// TakeInvitation takes agent's invitations to room from its inbox; it
// returns how many waited.
func (c *Client) TakeInvitation(ctx context.Context, agent, room string) (int, error) {
	var v InvitationResult
	return v.Taken, c.agentCall(ctx, "POST", agent, "/invitations/take", InvitationRequest{Room: room}, &v)
}

// AgentWho lists who agent can reach and the rooms it is in.
func (c *Client) AgentWho(ctx context.Context, agent string, req AgentRequest) (WhoResult, error) {
	var v WhoResult
	return v, c.agentCall(ctx, "POST", agent, "/who", req, &v)
}

// Take returns agent's pending items and hands them out.
func (c *Client) Take(ctx context.Context, agent string) (Pending, error) {
	var v Pending
	return v, c.agentCall(ctx, "POST", agent, "/take", nil, &v)
}

// Peek returns agent's pending items, handing out nothing.
func (c *Client) Peek(ctx context.Context, agent string) (Pending, error) {
	var v Pending
	return v, c.agentCall(ctx, "GET", agent, "/pending", nil, &v)
}

// Owed lists the asks agent owes now.
func (c *Client) Owed(ctx context.Context, agent string) ([]Item, error) {
	var v []Item
	return v, c.agentCall(ctx, "GET", agent, "/owed", nil, &v)
}

// Wait blocks until something new is pending for agent or the wait passes
// (see WaitRequest).
func (c *Client) Wait(ctx context.Context, agent string, req WaitRequest) (Pending, error) {
	var v Pending
	wait := time.Duration(req.Seconds * float64(time.Second))
	ctx, cancel := blocking(ctx, wait)
	defer cancel()
	q := url.Values{"seconds": {strconv.FormatFloat(req.Seconds, 'f', 3, 64)}, "take": {strconv.FormatBool(req.Take)}}
	if req.After != "" {
		q.Set("after", req.After)
	}
	return v, c.agentCall(ctx, "GET", agent, "/wait?"+q.Encode(), nil, &v)
}

// Ack confirms agent's two-step hand-out hand (Pending.Hand); it reports
// whether the hand-out was still open (see AckResult).
func (c *Client) Ack(ctx context.Context, agent, hand string) (bool, error) {
	return c.AckShown(ctx, agent, hand, nil)
}

// AckShown confirms the items of agent's two-step hand-out hand whose IDs
// are in shown; the node offers the others to the agent again at once
// (AckRequest.Shown). A nil shown confirms it all, as Ack does.
func (c *Client) AckShown(ctx context.Context, agent, hand string, shown []string) (bool, error) {
	var v AckResult
	err := c.agentCall(ctx, "POST", agent, "/ack", AckRequest{Hand: hand, Shown: shown}, &v)
	return v.Acked, err
}
