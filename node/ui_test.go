package node_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/ui"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// uiBase returns the dashboard's origin for node i, as `parley ui` gets
// it, and its token, from the home.
func uiBase(t *testing.T, nt *nodetest.Net, i int) (base, token string) {
	t.Helper()
	c := localapi.NewClient(node.SocketPath(nt.Home(i)))
	defer c.Close()
	info, err := c.UI(context.Background())
	if err != nil || info.URL == "" {
		t.Fatalf("ui: %+v %v", info, err)
	}
	u, err := url.Parse(info.URL)
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + u.Host, uiToken(t, nt.Home(i))
}

// sameOrigin reports whether two of the dashboard's addresses name the same
// host and port (each address `parley ui` prints has a new code).
func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && ua.Host == ub.Host
}

// uiToken reads the dashboard's token from home (HOME/ui.token).
func uiToken(t *testing.T, home string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, ui.TokenFileName))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func uiDo(t *testing.T, method, u, token string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	resp, b := uiRequest(t, method, u, token, hdr, body)
	return resp.StatusCode, b
}

// uiRequest is uiDo's request, answering the whole response (its body
// read and closed); a "Host" in hdr sets the request's Host.
func uiRequest(t *testing.T, method, u, token string, hdr map[string]string, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// The dashboard answers nothing but 401 (and how to open it) without its token, refuses other
// origins, and streams a message posted on another node.
func TestDashboardTokenOriginAndStream(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.ConnectAll()
	base, tok := uiBase(t, nt, 0)
	if !strings.HasPrefix(base, "http://127.0.0.1:") || len(tok) != 64 {
		t.Fatalf("dashboard at %s with token %q", base, tok)
	}
	jsonCT := map[string]string{"Content-Type": "application/json"}
	nav := func(dest string) map[string]string {
		return map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": dest}
	}
	for _, tc := range []struct {
		method, path, token string
		hdr                 map[string]string
		want                int
	}{
		{"GET", "/", "", nil, 401},
		{"GET", "/?t=" + strings.Repeat("0", 64), "", nil, 401},
		{"GET", "/ui/stream", "", nil, 401},
		{"GET", "/ui/stream?t=" + tok, "", nil, 401}, // the query opens the page only
		{"GET", "/ui/state", "wrong", nil, 401},
		{"POST", "/v1/agents/human/say", "", jsonCT, 401},
		{"POST", "/v1/down", "", jsonCT, 401},
		{"POST", "/v1/agents/human/say", tok, map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, 403},
		{"POST", "/v1/agents/human/say", tok, map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, 403},
		// The page opened from elsewhere (a file: page, a bookmark): a
		// top-level navigation, marked cross-site, with the token.
		{"GET", "/?t=" + tok, "", nav("document"), 200},
		{"GET", "/?t=" + strings.Repeat("0", 64), "", nav("document"), 401},
		{"GET", "/?t=" + tok, "", nav("iframe"), 403},
		// The page at ui.PagePath, where it reloads: no token needed (it
		// holds no data), but not framed, and for GET only.
		{"GET", ui.PagePath, "", nil, 200},
		{"GET", ui.PagePath, "", nav("document"), 200},
		{"GET", ui.PagePath, "", nav("iframe"), 403},
		{"GET", ui.PagePath, "", map[string]string{"Origin": "http://evil.example"}, 403},
		{"POST", ui.PagePath, "", jsonCT, 401},
		{"GET", ui.PagePath + "/x", "", nil, 401},
		{"GET", "/ui/state", tok, nav("document"), 403},
		{"GET", "/ui/stream", tok, nav("document"), 403},
		{"POST", "/v1/agents/human/say", tok, map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}, 403},
		{"POST", "/v1/agents/human/say", tok, map[string]string{"Content-Type": "text/plain"}, 415},
		// The media type is parsed: before, any type that began with
		// "application/json" passed.
		{"POST", "/v1/agents/human/say", tok, map[string]string{"Content-Type": "application/jsonx"}, 415},
		{"POST", "/v1/agents/human/say", tok, map[string]string{"Content-Type": "application/json-seq"}, 415},
		{"POST", "/v1/agents/human/say", tok, map[string]string{"Content-Type": "Application/JSON; charset=utf-8"}, 400}, // JSON, read: {} names no room
		{"POST", "/v1/down", tok, jsonCT, 404}, // not one of the page's actions
		{"GET", "/ui/state", tok, nil, 200},
	} {
		code, body := uiDo(t, tc.method, base+tc.path, tc.token, tc.hdr, "{}")
		if code != tc.want || (code == 401 && body != ui.Unauthorized) {
			t.Fatalf("%s %s (token %q, %v): %d %q, want %d", tc.method, tc.path, tc.token, tc.hdr, code, body, tc.want)
		}
	}
	// The proof the page asks for before it sends the token: anyone gets
	// it, and it is the token's HMAC of the port and the nonce.
	nonce := strings.Repeat("0f", 32)
	port := base[strings.LastIndex(base, ":")+1:]
	if code, body := uiDo(t, "GET", base+"/ui/proof?n="+nonce, "", nil, ""); code != 200 || body != ui.Proof(tok, port, nonce) || body == ui.Proof(tok, "1", nonce) {
		t.Fatalf("the proof of %s: %d %q", nonce, code, body)
	}
	for _, bad := range []string{"", "n=abc", "n=" + strings.Repeat("0F", 32), "n=" + strings.Repeat("0", 130)} {
		if code, body := uiDo(t, "GET", base+"/ui/proof?"+bad, "", nil, ""); code != 400 {
			t.Fatalf("a proof of %q: %d %q, want 400", bad, code, body)
		}
	}
	if code, _ := uiDo(t, "GET", base+"/ui/proof?n="+nonce, "", map[string]string{"Sec-Fetch-Site": "cross-site"}, ""); code != 403 {
		t.Fatalf("a cross-site proof: %d, want 403", code)
	}
	// Another method is 405 (before, 400, as for a wrong nonce).
	if code, _ := uiDo(t, "POST", base+"/ui/proof?n="+nonce, "", nil, ""); code != 405 {
		t.Fatalf("POST /ui/proof: %d, want 405", code)
	}
	// Actions on things that do not exist: a clear error, nothing done.
	for _, tc := range []struct{ path, body string }{
		{"/v1/contacts/approve", `{"id":"no-such-request"}`},
		{"/v1/contacts/deny", `{"id":"no-such-request"}`},
		{"/v1/contacts/revoke", `{"peer_id":"12D3KooWNoSuchPeerNoSuchPeerNoSuchPeerNoSuchPeer1"}`},
		{"/v1/invites/accept", `{"id":"nosuchroom"}`},
		{"/v1/agents/human/reply", `{"message_id":"` + strings.Repeat("a", 52) + `","text":"hi"}`},
		{"/v1/agents/human/say", `{"room":"no-such-room","text":"hi"}`},
		{"/v1/agents/human/invite", `{"room":"no-such-room","member":"` + nt.ID(1).String() + `"}`},
		{"/v1/moderation/revive", `{"agent":"ghost"}`},
		{"/v1/contacts/approve", `{"id":`},
	} {
		code, body := uiDo(t, "POST", base+tc.path, tok, jsonCT, tc.body)
		var e struct{ Error string }
		if code < 400 || code >= 500 || jsonUnmarshal(body, &e) != nil || e.Error == "" {
			t.Fatalf("POST %s %s: %d %q, want a 4xx with an error", tc.path, tc.body, code, body)
		}
		t.Logf("POST %s: %d %s", tc.path, code, e.Error)
	}
	if code, body := uiDo(t, "GET", base+"/v1/rooms/no-such-room/log", tok, nil, ""); code != 404 {
		t.Fatalf("log of no room: %d %q", code, body)
	}

	code, page := uiDo(t, "GET", base+"/?t="+tok, "", nil, "")
	if code != 200 || !strings.Contains(page, "<title>Parley</title>") || strings.Contains(page, "src=") || strings.Contains(page, "href=") {
		t.Fatalf("page: %d", code)
	}
	// The page without its token is the same document: it holds no data.
	if code, again := uiDo(t, "GET", base+ui.PagePath, "", nil, ""); code != 200 || again != page || strings.Contains(page, tok) {
		t.Fatalf("the page at %s: %d, %d bytes, not the page's %d", ui.PagePath, code, len(again), len(page))
	}
	t.Logf("page weight: %d bytes", len(page))

	// A room of node 1 with node 0 in it; its message reaches node 0's page.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	events := uiStream(ctx, t, base, tok, 1024)
	c1 := localapi.NewClient(node.SocketPath(nt.Home(1)))
	defer c1.Close()
	needContact(t, nt, 1, 0)
	registered(t, ctx, c1, "bob")
	res, err := c1.OpenRoom(ctx, "bob", localapi.OpenRoomRequest{Name: "ops", Members: []string{nt.ID(0).String()}})
	if err != nil || len(res.Invited) != 1 {
		t.Fatalf("open room: %+v %v", res, err)
	}
	var posted localapi.Posted
	c0 := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c0.Close()
	nt.WaitFor(30*time.Second, func() bool {
		in, err := c0.Room(ctx, res.RoomID)
		return err == nil && in.RoomID != ""
	}, "node 0 to join the room")
	if posted, err = c1.Say(ctx, "bob", localapi.SayRequest{Room: res.RoomID, Text: "deploy at noon"}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	deadline := time.After(30 * time.Second)
	for !seen["events:"+posted.ID] || !seen["panel:usage"] {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatal("stream ended")
			}
			switch e[0] {
			case "events":
				var m struct {
					Room   string           `json:"room"`
					Events []localapi.Event `json:"events"`
				}
				if err := jsonUnmarshal(e[1], &m); err != nil {
					t.Fatal(err)
				}
				for _, ev := range m.Events {
					seen["events:"+ev.ID] = true
				}
			case "panel":
				var m struct{ Name string }
				if err := jsonUnmarshal(e[1], &m); err != nil {
					t.Fatal(err)
				}
				seen["panel:"+m.Name] = true
			}
		case <-deadline:
			t.Fatalf("the message %s did not reach the stream; saw %v", posted.ID, seen)
		}
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// needContact makes nodes a and b contacts: a asks, b approves.
func needContact(t *testing.T, nt *nodetest.Net, a, b int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ca, cb := localapi.NewClient(node.SocketPath(nt.Home(a))), localapi.NewClient(node.SocketPath(nt.Home(b)))
	defer ca.Close()
	defer cb.Close()
	if _, err := ca.ContactRequest(ctx, nt.ID(b).String(), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.ContactApprove(ctx, pendingID(t, nt, cb, nt.ID(a).String()), ""); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(30*time.Second, func() bool {
		es, err := ca.Contacts(ctx)
		return err == nil && len(es) == 1 && es[0].State == "active"
	}, "the contact to be active")
}

// The dashboard's "dismiss" on an invitation's row takes the human's
// invitation to the room through the local API's route the page may use
// (with the token, from the page's origin, as JSON, as its other actions);
// the row leaves the invitations panel, and a second dismiss finds nothing
// to take. Before, the page had no way to take an invitation: its rows
// stayed until `parley inbox --take`. Another agent's invitations are not
// the page's to take.
func TestDashboardDismissTakesTheInvitation(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.ConnectAll()
	needContact(t, nt, 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c1 := localapi.NewClient(node.SocketPath(nt.Home(1)))
	defer c1.Close()
	registered(t, ctx, c1, "bob")
	res, err := c1.OpenRoom(ctx, "bob", localapi.OpenRoomRequest{Name: "their-room", Members: []string{nt.ID(0).String()}})
	if err != nil || len(res.Invited) != 1 {
		t.Fatalf("open room: %+v %v", res, err)
	}
	base, tok := uiBase(t, nt, 0)
	rows := func() []string {
		code, body := uiDo(t, "GET", base+"/ui/state", tok, nil, "")
		var st struct {
			Invitations struct{ Items []localapi.Item } `json:"invitations"`
		}
		if code != 200 || jsonUnmarshal(body, &st) != nil {
			t.Fatalf("state: %d %q", code, body)
		}
		var out []string
		for _, it := range st.Invitations.Items {
			out = append(out, it.Room)
		}
		return out
	}
	nt.WaitFor(30*time.Second, func() bool { return slices.Contains(rows(), res.RoomID) }, "the invitation in node 0's panel")

	const route = "/v1/agents/human/invitations/take"
	body := `{"room":"` + res.RoomID + `"}`
	jsonCT := map[string]string{"Content-Type": "application/json"}
	for _, tc := range []struct {
		path, token string
		hdr         map[string]string
		want        int
	}{
		{route, "", jsonCT, 401},
		{route, tok, map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, 403},
		{route, tok, map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, 403},
		{route, tok, map[string]string{"Content-Type": "text/plain"}, 415},
		{"/v1/agents/bob/invitations/take", tok, jsonCT, 404}, // not one of the page's actions
	} {
		if code, got := uiDo(t, "POST", base+tc.path, tc.token, tc.hdr, body); code != tc.want {
			t.Fatalf("POST %s (token %q, %v): %d %q, want %d", tc.path, tc.token, tc.hdr, code, got, tc.want)
		}
	}
	if !slices.Contains(rows(), res.RoomID) {
		t.Fatal("a refused dismiss took the invitation")
	}
	for i, want := range []string{`{"taken":1}`, `{"taken":0}`} {
		if code, got := uiDo(t, "POST", base+route, tok, jsonCT, body); code != 200 || strings.TrimSpace(got) != want {
			t.Fatalf("dismiss %d from the page: %d %q, want %s", i+1, code, got, want)
		}
	}
	if got := rows(); slices.Contains(got, res.RoomID) {
		t.Fatalf("the invitation is still in the panel once dismissed: %v", got)
	}
}

// With no ui_port in the config, the dashboard takes the port it had last
// time, so a saved address keeps working; when another program holds that
// port, it takes any free one, and keeps that for the next start.
func TestDashboardKeepsItsPort(t *testing.T) {
	nt := nodetest.Start(t, 1)
	first, tok := uiBase(t, nt, 0)
	nt.Crash(0)
	nt.Restart(0)
	again, same := uiBase(t, nt, 0)
	if again != first || same != tok {
		t.Fatalf("after a restart the dashboard is at %s (token kept: %v), was at %s", again, same == tok, first)
	}
	nt.Crash(0)
	hold, err := net.Listen("tcp", strings.TrimPrefix(first, "http://"))
	if err != nil {
		t.Fatalf("hold the dashboard's port: %v", err)
	}
	defer hold.Close()
	nt.Restart(0)
	moved, newTok := uiBase(t, nt, 0)
	if moved == first {
		t.Fatalf("the dashboard is at %s, a port another program holds", moved)
	}
	// A saved address of the page, with its token, now goes to the other
	// program: the token changed, so what it got there is worth nothing.
	if newTok == tok || newTok == "" {
		t.Fatal("the dashboard kept its token though its saved address now reaches another program")
	}
	hold.Close()
	nt.Crash(0)
	nt.Restart(0)
	if last, _ := uiBase(t, nt, 0); last != moved {
		t.Fatalf("after its port was taken and a restart, the dashboard is at %s, want %s (where it moved)", last, moved)
	}
}

// HEAD /ui/stream (curl -I, a link checker, a monitoring probe with the
// token) ends at its headers. Before, the pattern "GET /ui/stream" took the
// HEAD too and its handler went on streaming into the discarded body (no
// write ever failed) for as long as the connection stayed open: the
// client's next request on that connection, which it rightly sent there,
// waited for ever. Now the HEAD gets the stream's headers alone and the
// connection is free again.
func TestDashboardHeadOfStreamEnds(t *testing.T) {
	nt := nodetest.Start(t, 1)
	base, tok := uiBase(t, nt, 0)
	tr := &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	do := func(method, path string) (int, string, error) {
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return resp.StatusCode, "", err
		}
		return resp.StatusCode, resp.Header.Get("Content-Type"), nil
	}
	code, ct, err := do(http.MethodHead, "/ui/stream")
	if err != nil || code != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("HEAD /ui/stream: %d %q %v", code, ct, err)
	}
	// The same client's next request, on the connection it was given back.
	if code, _, err := do(http.MethodGet, "/ui/state"); err != nil || code != http.StatusOK {
		t.Fatalf("GET /ui/state after a HEAD of the stream: %d %v (the HEAD's handler still holds the connection)", code, err)
	}
}

// Nothing without the token holds the dashboard's connections: a request
// without it is answered and its connection closed, its body unread
// (however slowly it comes), and the connections held at once are capped,
// a page's stream among them; the stream outlives the server's read
// deadline.
func TestDashboardHoldsNoConnectionWithoutTheToken(t *testing.T) {
	t.Parallel() // waits on the stream's keep-alive and a refused connection; sets no package knob
	nt := nodetest.Start(t, 1)
	base, tok := uiBase(t, nt, 0)
	host := strings.TrimPrefix(base, "http://")
	opened := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/ui/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	alive := make(chan time.Time, 1)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			if sc.Text() == ": alive" {
				alive <- time.Now()
				return
			}
		}
		close(alive)
	}()

	dial := func() net.Conn {
		t.Helper()
		c, err := net.DialTimeout("tcp", host, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// A post without the token that says its body is 200,000 bytes and
	// sends one: 401, Connection: close, and the connection closed.
	c := dial()
	fmt.Fprintf(c, "POST /v1/agents/human/say HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n{", host)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	r, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.StatusCode != 401 || !r.Close {
		t.Fatalf("a post without the token: %d, Connection %q", r.StatusCode, r.Header.Get("Connection"))
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Fatalf("the connection of a post without the token stays open: %v", err)
	}

	// The cap: the stream and MaxConns-1 connections that send part of a
	// request; one more is not answered until one of them goes.
	var held []net.Conn
	for range ui.MaxConns - 1 {
		h := dial()
		fmt.Fprintf(h, "GET /ui/state HTTP/1.1\r\nHost: %s\r\n", host)
		held = append(held, h)
	}
	extra := dial()
	fmt.Fprintf(extra, "GET /ui/state HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", host, tok)
	eb := bufio.NewReader(extra)
	extra.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := eb.ReadByte(); err == nil {
		t.Fatalf("a connection past the %d held was answered", ui.MaxConns)
	}
	held[0].Close()
	extra.SetReadDeadline(time.Now().Add(20 * time.Second))
	if r, err := http.ReadResponse(eb, nil); err != nil || r.StatusCode != 200 {
		t.Fatalf("the connection past the cap, once one went: %v %v", r, err)
	}

	// The stream is still open past the read deadline, and sends its
	// keep-alive.
	select {
	case at, ok := <-alive:
		if !ok {
			t.Fatal("the stream ended")
		}
		t.Logf("the stream sends its keep-alive %v after it opened", at.Sub(opened).Round(time.Second))
	case <-time.After(time.Minute):
		t.Fatal("no keep-alive on the stream within a minute")
	}
}

// uiStream opens the dashboard's event stream at base as a page does, for
// as long as ctx lasts, and returns its events (name, data), buffered up to
// buf; the channel closes when the stream ends.
func uiStream(ctx context.Context, t *testing.T, base, tok string, buf int) <-chan [2]string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/ui/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	events := make(chan [2]string, buf)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		ev := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				select {
				case events <- [2]string{ev, strings.TrimPrefix(line, "data: ")}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return events
}
