package node_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// browser returns a chromedp context of its own for the test: a fresh
// browser context (its own storage, cookies and connections, as an
// incognito window's) and tab of one headless Chromium that the package's
// tests share, started at the first call (skipping the test where there is
// none, except in CI, where .ci/run installs it). The browser context is
// disposed when the test ends; the browser when the tests end (TestMain).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	shared.once.Do(func() { shared.start(path) })
	if shared.err != nil {
		t.Fatalf("start Chromium: %v", shared.err)
	}
	bctx, cancel := chromedp.NewContext(shared.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(bctx); err != nil { // makes the browser context and its tab
		t.Fatalf("a browser context of Chromium: %v", err)
	}
	return bctx
}

// sharedBrowser is a Chromium the package's tests share.
type sharedBrowser struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	dir    string // its profile
	err    error
}

var shared sharedBrowser

func (b *sharedBrowser) start(path string) {
	b.dir, b.err = os.MkdirTemp("", "parley-chromium-")
	if b.err != nil {
		return
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(b.dir),
	)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	b.ctx, b.cancel = bctx, func() {
		cancelBrowser()
		cancelAlloc()
		_ = os.RemoveAll(b.dir)
	}
	b.err = chromedp.Do(bctx) // starts the browser
}

// TestMain closes the shared Chromium once the tests have run.
func TestMain(m *testing.M) {
	code := m.Run()
	if shared.cancel != nil {
		shared.cancel()
	}
	os.Exit(code)
}

// chromiumPath is the system's Chromium; the test is skipped where there
// is none, except in CI, where .ci/run installs it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium: .ci/run installs it")
	}
	t.Skip("no Chromium on this machine (apt-get install chromium)")
	return ""
}

// remotePage is the dashboard of node 0 of three connected nodes (node 1
// a contact of node 0's, node 2 none), open and live in Chromium, for the
// tests of what other nodes' texts do on it.
type remotePage struct {
	nt         *nodetest.Net
	ctx        context.Context
	c0, c1, c2 *localapi.Client
	me         string // node 0's peer ID
	b          context.Context
}

func openRemotePage(t *testing.T) remotePage {
	t.Helper()
	nt := nodetest.Start(t, 3)
	nt.ConnectAll()
	nt.Befriend(t, 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	p := remotePage{nt: nt, ctx: ctx, me: nt.ID(0).String()}
	for i, c := range []**localapi.Client{&p.c0, &p.c1, &p.c2} {
		*c = localapi.NewClient(node.SocketPath(nt.Home(i)))
		t.Cleanup(func() { (*c).Close() })
	}
	info, err := p.c0.UI(ctx)
	if err != nil || info.URL == "" {
		t.Fatalf("ui: %+v %v", info, err)
	}
	p.b = browser(t)
	run(t, p.b, "open the dashboard", chromedp.Navigate(info.URL))
	waitJS(t, p.b, 30*time.Second, `document.getElementById("status").textContent === "live"`, "the stream")
	return p
}

// waitJS polls a JavaScript expression in the page until it is true.
func waitJS(t *testing.T, b context.Context, timeout time.Duration, expr, what string) {
	t.Helper()
	var last error
	ok := nodetest.Poll(timeout, func() bool {
		ctx, cancel := context.WithTimeout(b, 10*time.Second)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		last = err
		return err == nil && v
	})
	if !ok {
		ctx, cancel := context.WithTimeout(b, 5*time.Second)
		defer cancel()
		html, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		if err != nil {
			html = err.Error()
		}
		t.Fatalf("timed out waiting for %s (%s; last error %v); the page says:\n%s", what, expr, last, html)
	}
}

func run(t *testing.T, b context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// clickJS clicks the element sel names from inside the page, in one step:
// the lists re-render on live events, so a node found by one protocol call
// can be gone by the next.
func clickJS(t *testing.T, b context.Context, sel string) {
	t.Helper()
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true })()`, sel), "a click on "+sel)
}

// eval evaluates a JavaScript expression in the page (awaiting a promise).
func eval[T any](t *testing.T, b context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// The dashboard in a real browser: a contact request approved from the page,
// rooms of both nodes shown, a message from the other node shown live, a
// post and a reply to an ask addressed to the human from the page in the
// other node's room log, an invite from the page (one of nobody refused with
// its reason), a flood shown as the last 200 events and a count, an agent
// muted from the page and its next post refused, and nothing without the
// token.
func TestDashboardInBrowser(t *testing.T) {
	nt := nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		c.AgentPostLimit = -1 // the flood posts 200 messages at once
	}))
	nt.ConnectAll()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c0, c1 := localapi.NewClient(node.SocketPath(nt.Home(0))), localapi.NewClient(node.SocketPath(nt.Home(1)))
	defer c0.Close()
	defer c1.Close()
	me, other := nt.ID(0).String(), nt.ID(1).String()
	info, err := c0.UI(ctx)
	if err != nil || info.URL == "" {
		t.Fatalf("ui: %+v %v", info, err)
	}
	b := browser(t)

	// Without the token: 401 and a text saying how to open the dashboard,
	// for the page and its API.
	nctx, ncancel := context.WithTimeout(b, 30*time.Second)
	resp, err := chromedp.Run(nctx, chromedp.NavigateResponse(strings.Split(info.URL, "?")[0]+"?t=wrong"))
	ncancel()
	if err != nil || resp.Status != 401 {
		t.Fatalf("the page with a wrong token: %v %v", resp, err)
	}
	if eval[bool](t, b, `!!document.getElementById("rooms")`) {
		t.Fatal("the dashboard shows without the token")
	}

	run(t, b, "open the dashboard", chromedp.Navigate(info.URL))
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent === "live"`, "the stream")
	if status := eval[int](t, b, `fetch("/ui/state", {headers: {"Authorization": "Bearer wrong"}}).then(r => r.status)`); status != 401 {
		t.Fatalf("the API with a wrong token: %d", status)
	}

	// Node 1 asks to be a contact; the human approves from the page.
	if _, err := c1.ContactRequest(ctx, me, "from the browser test"); err != nil {
		t.Fatal(err)
	}
	sel := fmt.Sprintf(`#contacts tr[data-peer=%q] button`, other)
	clickJS(t, b, sel)
	nt.WaitFor(30*time.Second, func() bool {
		es, err := c1.Contacts(ctx)
		return err == nil && len(es) == 1 && es[0].State == "active"
	}, "the contact approved from the page to be active")

	// Node 1 puts node 0 in an organisation: the membership waits for the
	// human, who accepts it from the page.
	acme := newOrgKey(t, "Acme")
	acme.publish(t, nt, 1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(1), Handle: "bob"})
	nt.WaitFor(30*time.Second, func() bool {
		acme.publish(t, nt, 1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(0), Handle: "alice"})
		return len(nt.Node(0).Org().Offers()) == 1
	}, "node 0 to hold the pushed membership")
	offer := fmt.Sprintf(`#org_offers tr[data-org=%q]`, acme.id)
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`(() => { const r = document.querySelector(%q); return !!r && !document.getElementById("org-panel").hidden && r.textContent.includes("Acme") && r.textContent.includes("alice") })()`, offer),
		"the organisation's offer on the page")
	if m := nt.Node(0).Org().Mine(); m != nil {
		t.Fatalf("node 0 is in %s before its human accepted", m.Org)
	}
	clickJS(t, b, offer+" button")
	nt.WaitFor(30*time.Second, func() bool {
		m := nt.Node(0).Org().Mine()
		return m != nil && m.Org == acme.id && m.Handle == "alice"
	}, "node 0 to be alice in Acme once accepted from the page")
	waitJS(t, b, 30*time.Second, `document.getElementById("org-panel").hidden`, "the answered offer to leave the page")

	// A room of each node; the page shows both.
	registered(t, ctx, c0, "alice")
	registered(t, ctx, c1, "bob")
	mine, err := c0.OpenRoom(ctx, "alice", localapi.OpenRoomRequest{Name: "local-room"})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := c1.OpenRoom(ctx, "bob", localapi.OpenRoomRequest{Name: "their-room", Members: []string{me}})
	if err != nil || len(theirs.Invited) != 1 {
		t.Fatalf("open room: %+v %v", theirs, err)
	}
	for _, id := range []string{mine.RoomID, theirs.RoomID} {
		waitJS(t, b, 30*time.Second, fmt.Sprintf(`!!document.querySelector('#rooms li[data-room=%q]')`, id), "room "+id+" on the page")
	}
	// bob's room brought node 0 in: the invitation waits in the human's
	// inbox (`parley inbox`), and the page shows it with who invited, the
	// room, when, and the commands that read and leave it.
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`(() => { const r = document.querySelector('#invitations tr[data-invitation]'); return !!r && !document.getElementById("invitations-panel").hidden &&
	  r.textContent.includes("bob@node1") && r.textContent.includes("their-room") && r.textContent.includes(%q) && r.textContent.includes(%q) && /\d:\d\d/.test(r.textContent) })()`,
		"parley room log "+theirs.RoomID, "parley room leave "+theirs.RoomID),
		"the invitation to bob's room on the page")
	if n := eval[int](t, b, `document.querySelectorAll("#invitations tr[data-invitation]").length`); n != 1 {
		t.Fatalf("%d invitations on the page, want bob's alone (node 0's own room is none)", n)
	}
	// A second room of bob's: its row's "open" opens the room and takes
	// the invitation; the first row's "dismiss" takes it without opening
	// the room. Both rows go, and the panel with them; nothing of them is
	// left in the human's inbox. Before, neither took it: the rows stayed
	// until `parley inbox --take`.
	second, err := c1.OpenRoom(ctx, "bob", localapi.OpenRoomRequest{Name: "second-room", Members: []string{me}})
	if err != nil || len(second.Invited) != 1 {
		t.Fatalf("open room: %+v %v", second, err)
	}
	rowButton := func(room, label string) string {
		return fmt.Sprintf(`(() => { const b = [...document.querySelectorAll('#invitations tr[data-room=%q] button')].find(b => b.textContent === %q); if (!b) return false; b.click(); return true })()`, room, label)
	}
	waitJS(t, b, 30*time.Second, rowButton(second.RoomID, "open"), "a click on the second room's open")
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`document.getElementById("roomname").textContent.includes("second-room") && !document.querySelector('#invitations tr[data-room=%q]') && !!document.querySelector('#invitations tr[data-room=%q]')`, second.RoomID, theirs.RoomID),
		"the opened room's invitation to leave the page, bob's first one staying")
	waitJS(t, b, 30*time.Second, rowButton(theirs.RoomID, "dismiss"), "a click on the first room's dismiss")
	waitJS(t, b, 30*time.Second, `!document.querySelector("#invitations tr[data-invitation]") && document.getElementById("invitations-panel").hidden && document.getElementById("roomname").textContent.includes("second-room")`,
		"the dismissed invitation to leave the page, the panel with it, the open room staying open")
	if p, err := c0.Peek(ctx, "human"); err != nil || slices.ContainsFunc(p.Items, func(it localapi.Item) bool { return it.Kind == "invitation" }) {
		t.Fatalf("the human's inbox once its invitations were opened and dismissed on the page: %+v %v", p.Items, err)
	}

	// A message on node 1 appears on the page without a reload.
	sent := time.Now()
	posted, err := c1.Say(ctx, "bob", localapi.SayRequest{Room: theirs.RoomID, Text: "the build is green"})
	if err != nil {
		t.Fatal(err)
	}
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`!!window.parley.seen[%q]`, posted.ID), "the message from node 1")
	seenMs := eval[float64](t, b, fmt.Sprintf(`window.parley.seen[%q]`, posted.ID))
	t.Logf("message on node 1 → page of node 0: %v", time.UnixMilli(int64(seenMs)).Sub(sent).Round(time.Millisecond))
	// People read node 1 by its handle, on the events and in the contacts.
	clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, theirs.RoomID))
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`[...document.querySelectorAll("#events li")].some(li => li.textContent.includes("bob@node1") && li.textContent.includes("the build is green")) && !document.getElementById("events").textContent.includes(%q)`, other[len(other)-6:]),
		"the message shown from bob@node1")

	// A post from the page reaches bob.
	room := fmt.Sprintf(`#rooms li[data-room=%q]`, theirs.RoomID)
	clickJS(t, b, room)
	run(t, b, "post from the page",
		chromedp.SendKeys(chromedp.CSS("#text"), "hello from the page"), chromedp.Click(chromedp.CSS("#send")))
	// inLog reports whether node 1's room log (what `parley room log`
	// shows) holds text from node 0's human.
	inLog := func(text string) bool {
		es, err := c1.Log(ctx, theirs.RoomID, 0, "")
		return err == nil && slices.ContainsFunc(es, func(e localapi.Event) bool {
			return e.Text == text && e.From == "human@"+me
		})
	}
	nt.WaitFor(30*time.Second, func() bool { return inLog("hello from the page") }, "the post from the page in node 1's room log")
	nt.WaitFor(30*time.Second, func() bool {
		r, err := c1.Read(ctx, "bob", localapi.ReadRequest{Room: theirs.RoomID})
		return err == nil && slices.ContainsFunc(r.Messages, func(it localapi.Item) bool {
			return it.Text == "hello from the page" && it.From == "human@"+me
		})
	}, "bob to read the post from the page")

	// bob asks the human; the human answers from the page.
	ask, err := c1.Ask(ctx, "bob", localapi.AskRequest{Room: theirs.RoomID, To: "human@" + me, Text: "ship it?"})
	if err != nil {
		t.Fatal(err)
	}
	askSel := fmt.Sprintf(`#human li[data-ask=%q] button`, ask.AskID)
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`!!document.querySelector(%q)`, askSel), "the ask on the page")
	clickJS(t, b, askSel)
	run(t, b, "reply from the page",
		chromedp.SendKeys(chromedp.CSS("#text"), "yes, ship it"), chromedp.Click(chromedp.CSS("#send")))
	res, err := c1.WaitReply(ctx, "bob", ask.AskID, 30*time.Second, false)
	if err != nil || res.Reply == nil || res.Reply.Text != "yes, ship it" {
		t.Fatalf("bob's answer: %+v %v", res, err)
	}
	if !inLog("yes, ship it") {
		t.Fatal("the reply from the page is not in node 1's room log")
	}

	// An invite from the page: one of something that does not exist is
	// refused with the reason on the page; carol, an agent of node 1, is
	// brought in.
	run(t, b, "invite nobody from the page",
		chromedp.SendKeys(chromedp.CSS("#member"), "nobody@not-a-peer"), chromedp.Click(chromedp.CSS("#invite button")))
	waitJS(t, b, 30*time.Second, `document.getElementById("error").textContent !== ""`, "the refused invite's reason on the page")
	// carol runs on node 1 (an agent a contact's presence does not list
	// is refused).
	if _, err := c1.RegisterAgent(ctx, localapi.RegisterAgentRequest{Name: "carol", Session: "carol", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	run(t, b, "invite carol from the page", chromedp.SetValue(chromedp.CSS("#member"), "carol@"+other), chromedp.Click(chromedp.CSS("#invite button")))
	nt.WaitFor(30*time.Second, func() bool {
		es, err := c1.Log(ctx, theirs.RoomID, 0, "")
		return err == nil && slices.ContainsFunc(es, func(e localapi.Event) bool {
			return e.Kind == "invite" && e.To == "carol@"+other && e.Author == me
		})
	}, "the invite of carol from the page in node 1's room log")

	// The room's creator takes members out from the page: carol alone,
	// then node 1. In node 1's room, which node 0 did not create, the page
	// offers no removal.
	if _, err := c0.Invite(ctx, "human", localapi.InviteRequest{Room: mine.RoomID, Member: "carol@" + other}); err != nil {
		t.Fatal(err)
	}
	chip := func(member string) string { return fmt.Sprintf(`#roommembers span[data-member=%q]`, member) }
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`!!document.querySelector(%q)`, chip("carol@"+other)), "carol among the members of the page's room")
	if n := eval[int](t, b, `document.querySelectorAll("#roommembers button").length`); n != 0 {
		t.Fatalf("%d removal buttons in a room node 0 did not create", n)
	}
	clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, mine.RoomID))
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`!!document.querySelector(%q)`, chip("carol@"+other)+" button"), "carol's removal button in node 0's room")
	if n := eval[int](t, b, fmt.Sprintf(`document.querySelectorAll(%q).length`, chip("alice@"+me)+", "+chip("alice@"+me)+" button")); n != 1 {
		t.Fatalf("alice, this node's own agent, in node 0's room: %d chips and buttons, want her chip alone", n)
	}
	clickJS(t, b, chip("carol@"+other)+" button")
	removed := func(kind func(e localapi.Event) bool) func() bool {
		return func() bool {
			es, err := c0.Log(ctx, mine.RoomID, 0, "")
			return err == nil && slices.ContainsFunc(es, kind)
		}
	}
	nt.WaitFor(30*time.Second, removed(func(e localapi.Event) bool {
		return e.Kind == "leave" && e.To == "carol@"+other && e.Author == me
	}), "carol's removal from the page in node 0's room log")
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`!document.querySelector(%q) && [...document.querySelectorAll("#events li")].some(li => li.textContent.includes("took carol@node1 out"))`, chip("carol@"+other)),
		"carol gone from the members and her removal in the room's events")
	if in, err := c0.Room(ctx, mine.RoomID); err != nil || !slices.Contains(in.Members, other) {
		t.Fatalf("node 1 after carol's removal: %+v %v", in, err)
	}
	clickJS(t, b, chip(other)+" button")
	nt.WaitFor(30*time.Second, removed(func(e localapi.Event) bool {
		return e.Kind == "leave" && e.Target == other && e.Author == me
	}), "node 1's removal from the page in node 0's room log")
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`!document.querySelector(%q)`, chip(other)), "node 1 gone from the page's members")
	clickJS(t, b, fmt.Sprintf(`#rooms li[data-room=%q]`, theirs.RoomID))
	// A flood: the page keeps the last 200 events of the room and counts the
	// others.
	// (Posted from several goroutines: the room writes them in batches.)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if _, err := c1.Say(ctx, "bob", localapi.SayRequest{Room: theirs.RoomID, Text: fmt.Sprintf("flood %d.%d", w, i)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	last, err := c1.Say(ctx, "bob", localapi.SayRequest{Room: theirs.RoomID, Text: "flood end"})
	if err != nil {
		t.Fatal(err)
	}
	waitJS(t, b, 60*time.Second, fmt.Sprintf(`!!window.parley.seen[%q]`, last.ID), "the flood's last message")
	waitJS(t, b, 10*time.Second, `document.querySelectorAll("#events li").length === 200 && /earlier events not shown/.test(document.getElementById("dropped").textContent)`,
		"the page to show the last 200 events and count the others")

	// The human mutes alice, an agent of this node, from the page; her next
	// post is refused.
	if _, err := c0.RegisterAgent(ctx, localapi.RegisterAgentRequest{Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c0.Say(ctx, "alice", localapi.SayRequest{Room: mine.RoomID, Text: "before the mute"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c0.Claim(ctx, "alice", localapi.ClaimRequest{Project: "0123456789abcdef0123456789abcdef", Paths: []string{"rooms/room.go"}, Note: "splitting the room loop"}); err != nil {
		t.Fatal(err)
	}
	clickJS(t, b, fmt.Sprintf(`#agents tr[data-agent=%q] button`, "alice@"+me))
	var refused *localapi.Error
	nt.WaitFor(30*time.Second, func() bool {
		_, err := c0.Say(ctx, "alice", localapi.SayRequest{Room: mine.RoomID, Text: "after the mute"})
		return errors.As(err, &refused)
	}, "alice's post to be refused once muted from the page")
	_, err = c0.Say(ctx, "alice", localapi.SayRequest{Room: mine.RoomID, Text: "still muted"})
	if refused.Code != "muted" || !errors.As(err, &refused) || refused.Code != "muted" {
		t.Fatalf("alice's posts after the mute: %+v %v", refused, err)
	}
	if es, err := c0.Log(ctx, mine.RoomID, 0, ""); err != nil || slices.ContainsFunc(es, func(e localapi.Event) bool { return e.Text == "still muted" }) {
		t.Fatalf("the refused post is in the log: %v", err)
	}
	waitJS(t, b, 30*time.Second, `document.getElementById("audit").textContent.includes("agent.mute")`, "the mute in the audit panel")
	waitJS(t, b, 30*time.Second, `document.getElementById("moderation").textContent.includes("muted") && document.getElementById("limits").textContent === "no post limit"`,
		"the mute and the post limit in the moderation panel")

	// The board: alice's claim (made before the mute: a claim is a post)
	// shows with its holder, note and expiry.
	waitJS(t, b, 30*time.Second, `(() => { const r = document.querySelector('#board tr[data-path="rooms/room.go"]'); return !!r && !document.getElementById("board-panel").hidden && r.textContent.includes("alice@here") && r.textContent.includes("splitting the room loop") })()`,
		"alice's claim on the board panel")

	// Usage per agent: alice's client reported tokens, not cost.
	in, out := int64(1200), int64(345)
	if err := c0.Spent(ctx, "alice", localapi.Spend{TokensIn: &in, TokensOut: &out}); err != nil {
		t.Fatal(err)
	}
	waitJS(t, b, 30*time.Second, `(() => { const r = document.querySelector('#usage tr[data-agent="alice"]'); return !!r && r.textContent.includes("1200 / 345") && r.textContent.includes("unknown") })()`,
		"alice's tokens, and her cost as unknown, in the usage panel")

	// The decisions made from the page are in the audit log shown on it.
	waitJS(t, b, 30*time.Second, `document.getElementById("audit").textContent.includes("contact.approve")`, "the approval in the audit panel")
}

// A node whose store refuses writes says so at the top of its dashboard,
// with the reason and what to do, and stops saying so once writes are
// taken again; a node whose store writes shows nothing there. Node 0's
// home is a 20 MB tmpfs that another file fills.
func TestDashboardShowsStoreRefusingWrites(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a 20 MB tmpfs (mount -t tmpfs -o size=20m); the floor itself is tested in internal/store")
	}
	var mnt string
	var nt *nodetest.Net
	nt = nodetest.Start(t, 2, nodetest.WithConfig(func(i int, c *node.Config) {
		if i != 0 {
			return
		}
		mnt = c.Home
		if err := os.MkdirAll(mnt, 0o700); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=20m,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
			t.Skipf("cannot mount a tmpfs here (%v: %s)", err, strings.TrimSpace(string(out)))
		}
		t.Cleanup(func() { // before the folders are removed: the nodes first, then the disk
			if nt != nil {
				nt.Close()
			}
			if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
				// Start failed, and its nodes close later: detach it now.
				if out2, err2 := exec.Command("umount", "-l", mnt).CombinedOutput(); err2 != nil {
					t.Errorf("umount %s: %v %s; umount -l: %v %s", mnt, err, out, err2, out2)
				}
			}
		})
		c.MinFreeDisk = 4 << 20
	}))
	b := browser(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open := func(i int) {
		c := localapi.NewClient(node.SocketPath(nt.Home(i)))
		defer c.Close()
		info, err := c.UI(ctx)
		if err != nil || info.URL == "" {
			t.Fatalf("node %d ui: %+v %v", i, info, err)
		}
		run(t, b, fmt.Sprintf("open node %d's dashboard", i), chromedp.Navigate(info.URL))
		waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent === "live"`, "the stream")
		// The panels come together: once one is shown, so is the health.
		waitJS(t, b, 30*time.Second, `document.getElementById("human").children.length > 0`, "the first panels")
	}
	const shown = `!document.getElementById("alert").hidden`
	const says = `(() => { const a = document.getElementById("alert"); return !a.hidden &&
		a.textContent.includes("Store refusing writes") && a.textContent.includes("free some space") })()`

	open(1)
	if eval[bool](t, b, shown) {
		t.Fatalf("node 1 writes, and its dashboard says %q", eval[string](t, b, `document.getElementById("alert").textContent`))
	}
	open(0)
	if eval[bool](t, b, shown) {
		t.Fatal("node 0's dashboard shows an alert before its disk is full")
	}
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	waitJS(t, b, 30*time.Second, says, "the dashboard to say the store refuses writes")
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitJS(t, b, 30*time.Second, `document.getElementById("alert").hidden`, "the alert to go once space is free")
}

// A contact makes a room with the same name as this node's (and more after
// the human picked one): the page shows who created each room not this
// node's in an element of its own, the start of the ID of rooms that would
// still read the same, selects no room the human did not pick, keeps the
// pick when a look-alike arrives, and posts into the room picked.
func TestDashboardTellsLookAlikeRoomsApart(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.ConnectAll()
	nt.Befriend(t, 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c0, c1 := localapi.NewClient(node.SocketPath(nt.Home(0))), localapi.NewClient(node.SocketPath(nt.Home(1)))
	defer c0.Close()
	defer c1.Close()
	me := nt.ID(0).String()
	mine, err := c0.OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "api", Purpose: "design the v2 api"})
	if err != nil {
		t.Fatal(err)
	}
	info, err := c0.UI(ctx)
	if err != nil || info.URL == "" {
		t.Fatalf("ui: %+v %v", info, err)
	}
	b := browser(t)
	run(t, b, "open the dashboard", chromedp.Navigate(info.URL))
	waitJS(t, b, 30*time.Second, `document.getElementById("status").textContent === "live"`, "the stream")
	li := func(id string) string { return fmt.Sprintf(`#rooms li[data-room=%q]`, id) }
	label := func(id string) string { return li(id) + " span" } // the name, without the unread count
	text := func(id string) string {
		return eval[string](t, b, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, label(id)))
	}
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`!!document.querySelector(%q)`, li(mine.RoomID)), "this node's room")
	if got := text(mine.RoomID); got != "api" {
		t.Fatalf("a room whose name no other room has reads %q, want just its name", got)
	}

	// An agent of node 1 makes a look-alike and brings node 0 in.
	lookAlike := func(agent, say string) string {
		t.Helper()
		registered(t, ctx, c1, agent)
		r, err := c1.OpenRoom(ctx, agent, localapi.OpenRoomRequest{Name: "api", Purpose: "design the v2 api", Members: []string{me}})
		if err != nil || len(r.Invited) != 1 {
			t.Fatalf("the look-alike: %+v %v", r, err)
		}
		p, err := c1.Say(ctx, agent, localapi.SayRequest{Room: r.RoomID, Text: say})
		if err != nil {
			t.Fatal(err)
		}
		waitJS(t, b, 30*time.Second, fmt.Sprintf(`!!window.parley.seen[%q]`, p.ID), "the post in the look-alike")
		return r.RoomID
	}
	theirs := lookAlike("carol", "post here")
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent === %q`, label(theirs), "api by node1"),
		"carol's room labelled with its creator")
	if got := eval[string](t, b, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, label(theirs)+" .rby")); got != "by node1" {
		t.Fatalf("the creator of carol's room reads %q in its own element, want %q", got, "by node1")
	}
	if got := text(mine.RoomID); got != "api" || eval[bool](t, b, fmt.Sprintf(`!!document.querySelector(%q)`, label(mine.RoomID)+" .rby")) {
		t.Fatalf("this node's room reads %q (or shows a creator), want just its name", got)
	}
	if sel := eval[string](t, b, `window.parley.sel`); sel != "" {
		t.Fatalf("the page selected room %s that the human did not pick", sel)
	}
	if h := eval[string](t, b, `document.getElementById("roomname").textContent`); !strings.Contains(h, "No room selected") {
		t.Fatalf("the room header with no room picked: %q", h)
	}
	// A post with no room picked goes nowhere, and says why.
	run(t, b, "post with no room picked",
		chromedp.SendKeys(chromedp.CSS("#text"), "meant for my room"), chromedp.Click(chromedp.CSS("#send")))
	waitJS(t, b, 30*time.Second, `document.getElementById("error").textContent.includes("pick a room")`, "the reason the post went nowhere")

	// carol asks the human in her room: the ask says which "api".
	ask, err := c1.Ask(ctx, "carol", localapi.AskRequest{Room: theirs, To: "human@" + me, Text: "which api?"})
	if err != nil {
		t.Fatal(err)
	}
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`((document.querySelector('#human li[data-ask=%q]') || {}).textContent || "").includes(%q)`, ask.AskID, "in api by node1"),
		"the ask naming carol's room apart from this node's")

	// The human picks their room; a new look-alike does not take the pick.
	clickJS(t, b, li(mine.RoomID))
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`window.parley.sel === %q`, mine.RoomID), "the room picked")
	third := lookAlike("dave", "no, post here")
	// carol's and dave's rooms would read the same: both show their IDs.
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent === %q`, label(third), "api by node1 "+third[:8]),
		"the second look-alike labelled with its ID")
	waitJS(t, b, 30*time.Second, fmt.Sprintf(`(document.querySelector(%q) || {}).textContent === %q`, label(theirs), "api by node1 "+theirs[:8]),
		"the first look-alike labelled with its ID")
	if sel := eval[string](t, b, `window.parley.sel`); sel != mine.RoomID {
		t.Fatalf("after a look-alike arrived the page has %s selected, want the room picked, %s", sel, mine.RoomID)
	}
	if h := eval[string](t, b, `document.getElementById("roomname").textContent`); h != "api" {
		t.Fatalf("the room header: %q", h)
	}
	run(t, b, "post into the room picked", chromedp.Click(chromedp.CSS("#send")))
	in := func(room string) bool {
		es, err := c0.Log(ctx, room, 0, "")
		return err == nil && slices.ContainsFunc(es, func(e localapi.Event) bool { return e.Text == "meant for my room" })
	}
	nt.WaitFor(30*time.Second, func() bool { return in(mine.RoomID) }, "the post in the room picked")
	if in(theirs) || in(third) {
		t.Fatal("the post went into a look-alike too")
	}
}
