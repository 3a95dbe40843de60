package mcp

import (
	"context"
	"crypto/rand"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/manual"
)

// ChannelCapability is the experimental capability by which Claude Code
// takes pushed messages from an MCP server (started with
// --dangerously-load-development-channels server:NAME).
const ChannelCapability = "claude/channel"

// ChannelMethod is the notification that pushes a message into the session.
const ChannelMethod = "notifications/claude/channel"

// ChannelParams are a channel notification's parameters: the text, and
// meta keys of letters, digits and underscores.
type ChannelParams struct {
	Content string            `json:"content"`
	Meta    map[string]string `json:"meta"`
}

// Notifier sends a notification of any method to the client.
type Notifier interface {
	Notify(method string, params any) error
}

// channel is the session's channel route: it waits on the node for owed
// items to push and sends them one notification per wake, until ctx ends or a newer
// waiter of the session takes the route over. That also holds when the
// newer one comes between two of its waits (while it pushes, say): each
// wait after the first under a name names the previous answer's Seq
// (After), and the node ends the route at once if a newer waiter came
// since. The first wait under a new name names none: the node keeps what
// ends routes per agent name, so what came under the new name before did
// not end the route under the old one, and ends nothing. Each wait gives
// the route's key (Waiter), so a wait of its own that failed on its side
// (or was cancelled by a rename back to the same name) is no newer waiter
// to the node: the next wait names the same After and goes on, while a
// newer waiter that came meanwhile still ends it.
func (s *Server) channel(ctx context.Context, n Notifier) {
	backoff := time.Second
	var (
		after  uint64 // the Seq of the last answer to a wait under name (0: none)
		name   string
		waiter = rand.Text()
	)
	for ctx.Err() == nil {
		// A wait is for one name: a new one (parley_register) ends it, and
		// the next waits under the new name at once.
		agent, renamed := s.agentNow()
		if agent != name {
			after, name = 0, agent // renamed: the first wait under this name
		}
		wctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-renamed:
				cancel()
			case <-wctx.Done():
			}
		}()
		w, err := s.api.WakeWait(wctx, agent, localapi.WakeWaitRequest{Kind: localapi.WakeChannel, Session: s.cfg.Session, Seconds: localapi.MaxWait.Seconds(), After: after, Waiter: waiter})
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if wctx.Err() != nil {
				continue // renamed
			}
			s.log.Debug("channel wait failed", "agent", agent, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		backoff = time.Second
		if w.Superseded {
			return
		}
		after = w.Seq // also when it is handed nothing
		s.mu.Lock()
		you := s.agent.Address
		s.mu.Unlock()
		if len(w.Items) == 0 {
			continue
		}
		// One notification per wake, as a Stop hook's one text and a
		// terminal's one paste: the text (at most manual.MaxLen) shows the
		// first item in full, and counts what it leaves out. Before, each
		// item was a notification of its own, and a member's flood of asks
		// pushed some fifty messages into the session at once. The meta is
		// the first item's, the one shown in full.
		it := w.Items[0]
		if i := slices.IndexFunc(w.Items, func(it localapi.Item) bool { return it.Kind == "ask" }); i >= 0 {
			it = w.Items[i] // asks first (manual.Wake)
		}
		p := ChannelParams{Content: channelText(s.named(ctx, manual.Wake(w.Items, you, manual.Shell{}))),
			Meta: map[string]string{"kind": it.Kind, "item_id": it.ID, "room_id": it.Room, "from": it.From, "items": strconv.Itoa(len(w.Items))}}
		if err := n.Notify(ChannelMethod, p); err != nil {
			s.log.Debug("channel notification not sent", "agent", agent, "err", err)
			return
		}
	}
}

// channelEscaper writes &, < and > as XML's entities.
var channelEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// channelText is a notification's content as the client may show it:
// Claude Code gives its model a channel notification as
// <channel source="parley" k="v">CONTENT</channel>, and the content holds
// a peer's text, so a peer who writes "</channel><channel source=…>" would
// close Parley's element and open one of its own, with the source and
// attributes it chooses (an ask from the user's own human, say). With &, <
// and > written as entities, no text can close or open an element; the
// model reads the entities as the characters they stand for.
func channelText(s string) string { return channelEscaper.Replace(s) }
