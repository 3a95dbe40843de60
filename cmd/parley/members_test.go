package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-mesh/parley/internal/mcp"
	"github.com/parley-mesh/parley/node/nodetest"
)

// user is one person's node, with its home and peer ID.
type user struct {
	home, id string
	d        *daemon
}

// threeUsers starts A, B and C; B and C are A's contacts.
func threeUsers(t *testing.T) (a, b, c user) {
	t.Helper()
	base := t.TempDir()
	a.home, b.home, c.home = filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "c")
	a.d = up(t, a.home, "--listen", loopback)
	b.d = up(t, b.home, "--listen", loopback, "--bootstrap", a.d.addr())
	c.d = up(t, c.home, "--listen", loopback, "--bootstrap", a.d.addr())
	for _, u := range []*user{&a, &b, &c} {
		u.id = peerID(t, u.home)
	}
	befriend(t, a.home, b.home, b.id)
	befriend(t, a.home, c.home, c.id)
	return a, b, c
}

// mcpSession is a `parley mcp` process and the session's client on it.
type mcpSession struct {
	cs  *sdk.ClientSession
	cmd *exec.Cmd
}

func startMCP(t *testing.T, home, session string) *mcpSession {
	t.Helper()
	cmd := exec.Command(parleyBin, "--home", home, "mcp", "--no-start", "--session", session, "--client", "test", "--project", "/src/"+session)
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "parley-test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to parley mcp: %v", err)
	}
	s := &mcpSession{cs: cs, cmd: cmd}
	t.Cleanup(func() { cs.Close() })
	return s
}

func (s *mcpSession) call(t *testing.T, name string, args map[string]any) toolResult {
	t.Helper()
	return callTool(t, s.cs, name, args)
}

func (r toolResult) kinds() []string {
	var out []string
	for _, p := range r.pending() {
		out = append(out, p["kind"].(string))
	}
	return out
}

func (r toolResult) item(kind string) map[string]any {
	for _, p := range r.pending() {
		if p["kind"] == kind {
			return p
		}
	}
	return nil
}

func logTexts(t *testing.T, home, room string) []string {
	t.Helper()
	out, _, code := run(t, "--home", home, "room", "log", room, "--json", "--limit", "10000")
	if code != 0 {
		return nil
	}
	var l []logEntry
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, e := range l {
		texts = append(texts, e.Text)
	}
	return texts
}

// diagnoseRoom logs what each node holds of a room (its events, members
// and agents), what its agent has pending (peeked, not taken), and the end
// of the node's log.
func diagnoseRoom(t *testing.T, room string, users map[string]user, agents map[string]string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(users)) {
		u := users[k]
		var b strings.Builder
		if out, errs, code := run(t, "--home", u.home, "room", "log", room, "--json", "--limit", "100"); code != 0 {
			fmt.Fprintf(&b, "room log: exit %d: %s\n", code, errs)
		} else {
			var l []logEntry
			_ = json.Unmarshal([]byte(out), &l)
			for _, e := range l {
				fmt.Fprintf(&b, "  %.8s depth %d %s@%s %s %q\n", e.ID, e.Depth, e.Agent, tail(e.Author), e.Kind, e.Text)
			}
		}
		out, errs, _ := run(t, "--home", u.home, "room", "list", "--json")
		fmt.Fprintf(&b, "room list: %s%s\n", out, errs)
		out, errs, _ = run(t, "--home", u.home, "inbox", "--as", agents[k], "--json")
		fmt.Fprintf(&b, "%s's pending: %s%s\n", agents[k], out, errs)
		log := u.d.stderr.String()
		fmt.Fprintf(&b, "the end of its log:\n%s", log[max(0, len(log)-4000):])
		t.Logf("node %s (%s):\n%s", k, u.id, b.String())
	}
}

// tail is the end of a peer ID, as names show it.
func tail(id string) string { return id[max(0, len(id)-4):] }

// TestMCPAgentsAreMembers drives three users' agents through real `parley
// mcp` processes: invitations that carry the manual, a room-wide ask, an
// ask reminded until answered, removal of a node, leave, and sessions that
// reconnect.
func TestMCPAgentsAreMembers(t *testing.T) {
	t.Parallel()
	a, b, c := threeUsers(t)
	alpha, beta, gamma := startMCP(t, a.home, "s-alpha"), startMCP(t, b.home, "s-beta"), startMCP(t, c.home, "s-gamma")
	alpha.call(t, "parley_register", map[string]any{"name": "alpha"})
	rb := beta.call(t, "parley_register", map[string]any{"name": "beta", "role": "reviewer", "capabilities": []string{"go"}, "working_on": "the parser"})
	rg := gamma.call(t, "parley_register", map[string]any{"name": "gamma"})
	betaAddr, gammaAddr := rb.str("address"), rg.str("address")
	if betaAddr != "beta@"+b.id || rb.str("role") != "reviewer" {
		t.Fatalf("register: %v", rb.Out)
	}

	// Bad input from the CLI names what is wrong.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"room", "say", "", "x"}, "room is empty"},
		{[]string{"room", "say", "nowhere", "x"}, `no room named "nowhere"`},
		{[]string{"room", "log", ""}, "the room is empty"},
		{[]string{"room", "create", "r", "--member", "ghost"}, `no agent "ghost"`},
	} {
		if _, errs, code := run(t, append([]string{"--home", a.home}, tc.args...)...); code == 0 || !strings.Contains(errs, tc.want) {
			t.Fatalf("%v: exit %d %q, want %q", tc.args, code, errs, tc.want)
		}
	}

	// Open a room with two invited agents: both see it in parley_read {},
	// and the invitation says the purpose, who invited them and the calls.
	open := alpha.call(t, "parley_room_open", map[string]any{"name": "release-1.0", "purpose": "ship 1.0 by Friday",
		"members": []string{betaAddr, gammaAddr}})
	room := open.str("room_id")
	if open.Err || room == "" || len(open.Out["invited"].([]any)) != 2 || len(open.Out["failed"].([]any)) != 0 {
		t.Fatalf("room_open: %v\n%s", open.Out, open.Text)
	}
	for _, s := range []*mcpSession{beta, gamma} {
		var inv map[string]any
		nodetest.WaitFor(t, 60*time.Second, func() bool {
			r := s.call(t, "parley_read", map[string]any{})
			if it := r.item("invitation"); it != nil {
				inv = it
			}
			return inv != nil && len(r.Out["messages"].([]any)) > 0
		}, "the invitation and the room in parley_read {}")
		text := inv["text"].(string)
		for _, want := range []string{"ship 1.0 by Friday", "alpha@" + a.id, `"release-1.0"`, room,
			`parley_read {"room":"` + room + `"}`, "parley_say", "parley_reply", `parley_leave {"room":"` + room + `"}`} {
			if !strings.Contains(text, want) {
				t.Fatalf("the invitation lacks %q:\n%s", want, text)
			}
		}
		if n := utf8.RuneCountInString(text); n > 2000 {
			t.Fatalf("the invitation has %d characters", n)
		}
		who := s.call(t, "parley_who", nil)
		if rs := who.Out["rooms"].([]any); len(rs) != 1 || rs[0].(map[string]any)["room_id"] != room {
			t.Fatalf("parley_who rooms: %v", who.Out["rooms"])
		}
	}

	// A room-wide ask: both owe it; gamma answers; alpha's blocking ask
	// returns; beta stops being reminded.
	type askResult struct {
		r   toolResult
		err error
	}
	asked := make(chan askResult, 1)
	go func() {
		r, err := tryTool(alpha.cs, "parley_ask", map[string]any{"room": room, "text": "who writes the release notes?", "wait_seconds": 45})
		asked <- askResult{r, err}
	}()
	var askID string
	for i, s := range []*mcpSession{beta, gamma} {
		name := []string{"beta", "gamma"}[i]
		var last toolResult
		if !nodetest.Poll(30*time.Second, func() bool {
			last = s.call(t, "parley_who", nil)
			if it := last.item("ask"); it != nil && strings.Contains(it["text"].(string), "release notes") {
				askID = it["id"].(string)
				if !strings.Contains(last.Text, mcp.Marker) {
					t.Fatalf("no marker:\n%s", last.Text)
				}
				return true
			}
			return false
		}) {
			select {
			case a := <-asked:
				t.Logf("alpha's parley_ask returned: %v; error %v %v\n%s", a.err, a.r.Err, a.r.Out, a.r.Text)
			default:
				t.Logf("alpha's parley_ask has not returned")
			}
			t.Logf("%s's last parley_who: %v\n%s", name, last.Out["pending"], last.Text)
			diagnoseRoom(t, room, map[string]user{"A": a, "B": b, "C": c}, map[string]string{"A": "alpha", "B": "beta", "C": "gamma"})
			t.Fatalf("timed out after 30s waiting for the room-wide ask to reach %s", name)
		}
	}
	if r := gamma.call(t, "parley_reply", map[string]any{"message_id": askID, "text": "gamma does"}); r.Err {
		t.Fatalf("reply: %s", r.Text)
	}
	select {
	case a := <-asked:
		if a.err != nil {
			t.Fatal(a.err)
		}
		r := a.r
		reply, _ := r.Out["reply"].(map[string]any)
		if reply == nil || reply["text"] != "gamma does" || reply["from"] != gammaAddr {
			t.Fatalf("the asker got %v\n%s", r.Out, r.Text)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("parley_ask did not return")
	}
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		return !slices.Contains(beta.call(t, "parley_who", nil).kinds(), "reminder")
	}, "beta to stop being reminded")

	// An ask to beta alone, unanswered: in full once, then a reminder on
	// three unrelated results, then none after the reply.
	direct := alpha.call(t, "parley_ask", map[string]any{"room": room, "to": betaAddr, "text": "can you review PR 12?", "wait_seconds": 1})
	if direct.Err || direct.Out["reply"] != nil {
		t.Fatalf("direct ask: %s", direct.Text)
	}
	did := direct.str("ask_id")
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		it := beta.call(t, "parley_who", nil).item("ask")
		return it != nil && it["id"] == did
	}, "beta to get the ask")
	for k := range 3 {
		r := beta.call(t, "parley_find", map[string]any{"query": "cap:nothing"})
		it := r.item("reminder")
		if it == nil || it["id"] != did || !strings.Contains(r.Text, "still owed") {
			t.Fatalf("result %d after the ask has no reminder: %v\n%s", k+1, r.kinds(), r.Text)
		}
	}
	beta.call(t, "parley_reply", map[string]any{"message_id": did, "text": "done"})
	if r := beta.call(t, "parley_who", nil); r.item("reminder") != nil || r.item("ask") != nil {
		t.Fatalf("reminded after the reply: %v", r.kinds())
	}

	// The creator takes beta (the agent) out: beta is told on its next
	// call and cannot post there; its node stays a member.
	if _, errs, code := run(t, "--home", a.home, "room", "remove", room, betaAddr); code != 0 {
		t.Fatalf("remove beta: %s", errs)
	}
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		r := beta.call(t, "parley_who", nil)
		return r.item("removed") != nil && strings.Contains(r.Text, "Removed from rooms")
	}, "beta to be told of its removal")
	if r := beta.call(t, "parley_say", map[string]any{"room": room, "text": "still here?"}); !r.Err || !strings.Contains(r.Text, "removed you") {
		t.Fatalf("say after the removal: %s", r.Text)
	}
	if out, _, code := run(t, "--home", a.home, "room", "log", room); code != 0 || !strings.Contains(out, "removed beta@") {
		t.Fatalf("the room's log shows no removal of beta:\n%s", out)
	}

	// The creator removes B's node: its later events are refused by every
	// member, and it receives nothing new.
	if _, errs, code := run(t, "--home", c.home, "room", "remove", room, b.id); code == 0 || !strings.Contains(errs, "creator") {
		t.Fatalf("remove by a non-creator: exit %d %s", code, errs)
	}
	if _, errs, code := run(t, "--home", a.home, "room", "remove", room, b.id); code != 0 {
		t.Fatalf("remove: %s", errs)
	}
	for _, home := range []string{a.home, c.home} {
		nodetest.WaitFor(t, 30*time.Second, func() bool {
			var in struct {
				Members []string `json:"members"`
			}
			out, _, code := run(t, "--home", home, "room", "list", "--json")
			var rs []struct {
				RoomID  string   `json:"room_id"`
				Members []string `json:"members"`
			}
			if code != 0 || json.Unmarshal([]byte(out), &rs) != nil {
				return false
			}
			for _, r := range rs {
				if r.RoomID == room {
					in.Members = r.Members
				}
			}
			return len(in.Members) == 2 && !slices.Contains(in.Members, b.id)
		}, "the removal to reach %s", home)
	}
	beta.call(t, "parley_say", map[string]any{"room": room, "text": "from the removed node"}) // its node may not know yet
	alpha.call(t, "parley_say", map[string]any{"room": room, "text": "members only"})
	nodetest.WaitFor(t, 30*time.Second, func() bool { return slices.Contains(logTexts(t, c.home, room), "members only") },
		"C to get A's message")
	for _, home := range []string{a.home, c.home} {
		if slices.Contains(logTexts(t, home, room), "from the removed node") {
			t.Fatalf("%s took an event of the removed node", home)
		}
	}
	if slices.Contains(logTexts(t, b.home, room), "members only") {
		t.Fatal("the removed node received a message posted after its removal")
	}

	// Leave: gamma leaves (its node with it), and its say fails.
	lv := gamma.call(t, "parley_leave", map[string]any{"room": room})
	if lv.Err || lv.Out["node_left"] != true {
		t.Fatalf("leave: %v\n%s", lv.Out, lv.Text)
	}
	if r := gamma.call(t, "parley_say", map[string]any{"room": room, "text": "still here?"}); !r.Err || !strings.Contains(r.Text, "invite you back") {
		t.Fatalf("say after leave: %s", r.Text)
	}

	// A session reconnects with its card; a renamed agent gets no stale
	// invitations.
	beta.cs.Close()
	beta2 := startMCP(t, b.home, "s-beta")
	rb2 := beta2.call(t, "parley_register", nil)
	caps, _ := rb2.Out["capabilities"].([]any)
	if rb2.str("agent") != "beta" || rb2.str("role") != "reviewer" || rb2.str("working_on") != "the parser" || len(caps) != 1 || caps[0] != "go" {
		t.Fatalf("card after a reconnect: %v", rb2.Out)
	}
	g2 := gamma.call(t, "parley_register", map[string]any{"name": "gamma2"})
	if g2.str("agent") != "gamma2" || g2.item("invitation") != nil {
		t.Fatalf("rename: %v", g2.Out)
	}
	gamma.cs.Close()
	gamma3 := startMCP(t, c.home, "s-gamma")
	for range 2 {
		r := gamma3.call(t, "parley_who", nil)
		if r.item("invitation") != nil {
			t.Fatalf("a renamed agent got a stale invitation: %v", r.Out["pending"])
		}
	}
	if r := gamma3.call(t, "parley_register", nil); r.str("agent") != "gamma2" {
		t.Fatalf("the session's name after a reconnect: %v", r.Out)
	}
}
