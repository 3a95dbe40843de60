package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

type logEntry struct {
	ID     string `json:"id"`
	Author string `json:"author_peer"`
	Agent  string `json:"agent"`
	Depth  uint64 `json:"depth"`
	Kind   string `json:"kind"`
	Text   string `json:"text"`
	Time   int64  `json:"time"`
}

func roomLog(t *testing.T, home, room string) []logEntry {
	t.Helper()
	var v []logEntry
	runJSON(t, &v, "--home", home, "room", "log", room, "--limit", "10000")
	return v
}

func ids(l []logEntry) []string {
	out := make([]string, len(l))
	for i, e := range l {
		out[i] = e.ID
	}
	return out
}

// twoNodes starts alice (home a) and bob (home b, bootstrapped from
// alice) on loopback under a fresh folder and waits until they are
// connected; it returns both homes and alice's daemon (whose address a
// restarted bob bootstraps from).
func twoNodes(t *testing.T) (homeA, homeB string, a *daemon) {
	t.Helper()
	base := t.TempDir()
	homeA, homeB = filepath.Join(base, "a"), filepath.Join(base, "b")
	a = up(t, homeA, "--listen", loopback, "--handle", "alice")
	up(t, homeB, "--listen", loopback, "--bootstrap", a.addr(), "--handle", "bob")
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		var ps []localapi.Peer
		runJSON(t, &ps, "--home", homeA, "peers")
		return len(ps) > 0
	}, "A and B to connect")
	return homeA, homeB, a
}

func peerID(t testing.TB, home string) string {
	var v struct {
		PeerID string `json:"peer_id"`
	}
	runJSON(t, &v, "--home", home, "id")
	return v.PeerID
}

// The rooms issue's check from the CLI: three nodes talk, C is killed with
// SIGKILL while A and B go on, C comes back, and all three show the same
// log, in the same order, with nothing missing.
func TestCLIThreeNodesSurviveSIGKILL(t *testing.T) {
	t.Parallel()
	tn := trio(t, "trio")
	homeA, homeB, homeC := tn.homes[0], tn.homes[1], tn.homes[2]
	a, c := tn.nodes[0], tn.nodes[2]
	run(t, "--home", homeA, "room", "say", tn.room, "hi from a")
	// create, 2 invites, 2 joins, 3 messages
	nodetest.WaitFor(t, 20*time.Second, func() bool { return len(roomLog(t, homeC, tn.room)) == 8 }, "C to have everything")

	if err := c.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	<-c.done
	for _, h := range []string{homeA, homeB} { // a post as an agent its node does not know, or not in the room, is refused
		if _, errs, code := run(t, "--home", h, "agent", "register", "bot", "--ttl", "1h"); code != 0 {
			t.Fatalf("agent register: %s", errs)
		}
		if _, errs, code := run(t, "--home", h, "room", "invite", tn.room, "bot"); code != 0 {
			t.Fatalf("room invite bot: %s", errs)
		}
	}
	for k := range 10 {
		for _, h := range []string{homeA, homeB} {
			if _, errs, code := run(t, "--home", h, "room", "say", tn.room, fmt.Sprintf("while C is gone %d", k), "--as", "bot"); code != 0 {
				t.Fatalf("say: %s", errs)
			}
		}
	}
	up(t, homeC, "--listen", loopback, "--bootstrap", a.addr())
	var ref []string
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		ref = ids(roomLog(t, homeA, tn.room))
		return len(ref) == 30 && slices.Equal(ids(roomLog(t, homeB, tn.room)), ref) &&
			slices.Equal(ids(roomLog(t, homeC, tn.room)), ref)
	}, "identical logs of 30 events (8, bot's 2 invites, 20 messages) on A, B and C")
	l := roomLog(t, homeC, tn.room)
	for i := 1; i < len(l); i++ {
		if l[i].Depth < l[i-1].Depth {
			t.Fatalf("log not in display order at %d", i)
		}
	}
	if l[0].Kind != "create" || l[len(l)-1].Kind != "message" {
		t.Fatalf("log ends: %+v … %+v", l[0], l[len(l)-1])
	}
	// A's audit log names B and C by their handles for a person, the room
	// by its name beside its ID, and the nodes in full in --json.
	type named struct {
		PeerID string `json:"peer_id"`
		Name   string `json:"name"`
	}
	var peers []named
	runJSON(t, &peers, "--home", homeA, "peers")
	i := slices.IndexFunc(peers, func(p named) bool { return p.PeerID == tn.idB })
	out, errs, code := run(t, "--home", homeA, "audit")
	if i < 0 || code != 0 || strings.Contains(out, tn.idB) || !strings.Contains(out, "room.invite") ||
		!strings.Contains(out, "member="+peers[i].Name) || !strings.Contains(out, "trio ("+tn.room+")") {
		t.Fatalf("audit (B is %+v): exit %d\n%s%s", peers, code, out, errs)
	}
	var es []struct{ Subject string }
	runJSON(t, &es, "--home", homeA, "audit")
	if !slices.ContainsFunc(es, func(e struct{ Subject string }) bool { return e.Subject == tn.idB }) {
		t.Fatalf("audit --json lacks B's peer ID: %+v", es)
	}
}

func TestCLIRoomTailFollows(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	var room struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &room, "--home", home, "room", "create", "tailed")
	// A member that cannot be invited: the room is made all the same, its
	// ID printed for scripts, and the exit status and stderr say who is
	// missing and why.
	pout, perrs, pcode := run(t, "--home", home, "room", "create", "partly", "--member", "ghost")
	id := strings.TrimSpace(pout)
	if pcode == 0 || id == "" || strings.ContainsAny(id, " \n") ||
		!strings.Contains(perrs, "ghost") || !strings.Contains(perrs, "not everyone could be invited") {
		t.Fatalf("room create with a member that is not there: exit %d, stdout %q, stderr %q", pcode, pout, perrs)
	}
	if got := roomLog(t, home, id); len(got) == 0 {
		t.Fatalf("the room %q printed is not there", id)
	}
	// A reply names its message by the eight characters the log shows.
	first, errs, code := run(t, "--home", home, "room", "say", id, "first")
	if code != 0 {
		t.Fatalf("say: %s", errs)
	}
	first = strings.TrimSpace(first)
	shown, _, _ := run(t, "--home", home, "room", "log", id)
	if !strings.Contains(shown, first[:8]) || strings.Contains(shown, first[:9]) {
		t.Fatalf("the log does not show %s as %s:\n%s", first, first[:8], shown)
	}
	if _, errs, code := run(t, "--home", home, "room", "say", id, "an answer", "--reply-to", first[:8]); code != 0 {
		t.Fatalf("reply by the short ID: %s", errs)
	}
	var replies []struct {
		Text    string `json:"text"`
		ReplyTo string `json:"reply_to"`
	}
	runJSON(t, &replies, "--home", home, "room", "log", id)
	if last := replies[len(replies)-1]; last.Text != "an answer" || last.ReplyTo != first {
		t.Fatalf("the reply is %+v, want one to %s", last, first)
	}
	if _, errs, code := run(t, "--home", home, "room", "say", id, "x", "--reply-to", first[:7]); code == 0 || !strings.Contains(errs, "first 8 characters") {
		t.Fatalf("reply by 7 characters: exit %d: %s", code, errs)
	}
	// A message to an agent this node does not have is a slip: refused.
	if _, errs, code := run(t, "--home", home, "room", "say", id, "x", "--to", "ghost"); code == 0 || !strings.Contains(errs, `no agent "ghost"`) {
		t.Fatalf("say to an agent that is not there: exit %d: %s", code, errs)
	}
	if _, errs, code := run(t, "--home", home, "room", "say", id, "for you", "--to", "human"); code != 0 {
		t.Fatalf("say to human: %s", errs)
	}
	// Usage per room names the room beside its ID.
	if out, errs, _ := run(t, "--home", home, "usage", "--rooms"); !strings.Contains(out, id) || !strings.Contains(out, "partly") {
		t.Fatalf("usage --rooms does not name room %s (partly):\n%s%s", id, out, errs)
	}
	cmd := exec.Command(parleyBin, "--home", home, "room", "tail", "tailed", "--json")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// The tail is up once a message said now shows in it.
	deadline := time.After(20 * time.Second)
	said := 0
	for {
		run(t, "--home", home, "room", "say", "tailed", fmt.Sprintf("line %d", said))
		said++
		select {
		case l := <-lines:
			var e logEntry
			if err := json.Unmarshal([]byte(l), &e); err != nil || e.Kind != "message" || !strings.HasPrefix(e.Text, "line ") {
				t.Fatalf("tail printed %q", l)
			}
			return
		case <-time.After(500 * time.Millisecond):
		case <-deadline:
			t.Fatal("room tail printed nothing")
		}
	}
}

// trioNodes are three real nodes from trio: A, then B and C bootstrapped
// from A, each a contact of A, in one room of A's that B and C joined.
type trioNodes struct {
	base     string
	homes    [3]string
	nodes    [3]*daemon
	idB, idC string
	room     string
}

// trio starts three nodes, makes B and C contacts of A, has A create the
// room name and invite both, and waits until B and C have each said
// "hi from b" / "hi from c" in it.
func trio(t *testing.T, name string) trioNodes {
	t.Helper()
	var tn trioNodes
	tn.base = t.TempDir()
	for i, n := range []string{"a", "b", "c"} {
		tn.homes[i] = filepath.Join(tn.base, n)
	}
	tn.nodes[0] = up(t, tn.homes[0], "--listen", loopback)
	tn.nodes[1] = up(t, tn.homes[1], "--listen", loopback, "--bootstrap", tn.nodes[0].addr())
	tn.nodes[2] = up(t, tn.homes[2], "--listen", loopback, "--bootstrap", tn.nodes[0].addr())
	tn.idB, tn.idC = peerID(t, tn.homes[1]), peerID(t, tn.homes[2])
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		var peers []map[string]any
		runJSON(t, &peers, "--home", tn.homes[0], "peers")
		return len(peers) == 2
	}, "B and C to connect to A")
	befriend(t, tn.homes[0], tn.homes[1], tn.idB)
	befriend(t, tn.homes[0], tn.homes[2], tn.idC)
	var room struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &room, "--home", tn.homes[0], "room", "create", name)
	tn.room = room.RoomID
	for _, id := range []string{tn.idB, tn.idC} {
		if _, errs, code := run(t, "--home", tn.homes[0], "room", "invite", tn.room, id); code != 0 {
			t.Fatalf("invite: %s", errs)
		}
	}
	for _, h := range tn.homes[1:] {
		nodetest.WaitFor(t, 20*time.Second, func() bool {
			_, _, code := run(t, "--home", h, "room", "say", tn.room, "hi from "+filepath.Base(h))
			return code == 0
		}, "%s to join and speak", h)
	}
	return tn
}

// An ask whose wait is cut short by the node stopping still tells its ID:
// it is said on stderr before the wait, the error says the ask was posted,
// and --json prints the ask (with its ID) as well-formed JSON.
func TestCLIAskIDOutlivesItsWait(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	d := up(t, home, "--listen", loopback)
	runJSON(t, &struct{}{}, "--home", home, "room", "create", "design")
	if _, errs, code := run(t, "--home", home, "agent", "register", "coder"); code != 0 {
		t.Fatal(errs)
	}
	start := func(json bool) (*exec.Cmd, *syncBuffer, *syncBuffer) {
		args := []string{"--home", home, "room", "ask", "design", "anyone?", "--to", "coder", "--wait", "50s"}
		if json {
			args = append(args, "--json")
		}
		cmd := exec.Command(parleyBin, args...)
		out, errs := &syncBuffer{}, &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, errs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return cmd, out, errs
	}
	human, hout, herrs := start(false)
	js, jout, jerrs := start(true)
	asked := regexp.MustCompile(`asked \(id ([0-9a-z]+)\); waiting up to 50s`)
	nodetest.WaitFor(t, 20*time.Second, func() bool { return asked.MatchString(herrs.String()) }, "the ask's ID on stderr before the wait")
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		n := 0
		for _, e := range roomLog(t, home, "design") {
			if e.Kind == "ask" {
				n++
			}
		}
		return n == 2
	}, "both asks posted")
	id := asked.FindStringSubmatch(herrs.String())[1]
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := human.Wait(); err == nil {
		t.Fatal("an ask whose wait failed exited 0")
	}
	if errs := herrs.String(); !strings.Contains(errs, "the ask "+id+" was posted and stays open") || !strings.Contains(hout.String(), "asked (id "+id+")") {
		t.Fatalf("an ask whose wait failed: stdout %q, stderr %q", hout, errs)
	}
	if err := js.Wait(); err == nil {
		t.Fatal("an ask whose wait failed exited 0 (--json)")
	}
	var res struct {
		AskID string `json:"ask_id"`
	}
	if err := json.Unmarshal([]byte(jout.String()), &res); err != nil || res.AskID == "" || !strings.Contains(jerrs.String(), res.AskID) {
		t.Fatalf("--json: an ask whose wait failed printed %q (%v), stderr %q", jout, err, jerrs)
	}
}

// room log's --limit: left out, the last 100; out of 1 to 10000 (0 and
// below too, which once read 100) refused saying so.
func TestCLIRoomLogLimit(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	runJSON(t, &struct{}{}, "--home", home, "room", "create", "design")
	for _, s := range []string{"one", "two", "three"} {
		if _, errs, code := run(t, "--home", home, "room", "say", "design", s); code != 0 {
			t.Fatal(errs)
		}
	}
	if out, errs, code := run(t, "--home", home, "room", "log", "design"); code != 0 || strings.Count(out, "\n") != 4 {
		t.Fatalf("room log: exit %d %q %s", code, out, errs)
	}
	if out, errs, code := run(t, "--home", home, "room", "log", "design", "--limit", "2"); code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, "three") {
		t.Fatalf("room log --limit 2: exit %d %q %s", code, out, errs)
	}
	// Text that is not UTF-8 is refused before it reaches the node (JSON
	// would carry it with its bad bytes replaced).
	for _, args := range [][]string{{"room", "say", "design", "bad \xff byte"}, {"room", "ask", "design", "\xc3", "--wait", "0"},
		{"room", "create", "bad\xfename"}, {"room", "create", "fine", "--purpose", "\xed\xa0\x80"}} {
		out, errs, code := run(t, append([]string{"--home", home}, args...)...)
		if code == 0 || out != "" || !strings.Contains(errs, "is not valid UTF-8") {
			t.Fatalf("%q: exit %d %q %q", args, code, out, errs)
		}
	}
	if out, _, _ := run(t, "--home", home, "room", "list"); strings.Contains(out, "fine") {
		t.Fatalf("a room was made of a refused purpose: %s", out)
	}
	for _, n := range []string{"0", "-5", "100000"} {
		out, errs, code := run(t, "--home", home, "room", "log", "design", "--limit", n)
		if code == 0 || out != "" || !strings.Contains(errs, "limit must be 1 to 10000") {
			t.Fatalf("room log --limit %s: exit %d %q %q", n, code, out, errs)
		}
	}
}

// A contact makes a room with the name of one of this node's and invites
// it: `room list` says who created each, and `inbox` says which "api" a
// message is in.
func TestCLILookAlikeRoomsNamedApart(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeC := filepath.Join(base, "a"), filepath.Join(base, "c")
	a := up(t, homeA, "--listen", loopback, "--handle", "alice")
	up(t, homeC, "--listen", loopback, "--bootstrap", a.addr(), "--handle", "carol")
	var idA, idC struct {
		PeerID string `json:"peer_id"`
	}
	runJSON(t, &idA, "--home", homeA, "id")
	runJSON(t, &idC, "--home", homeC, "id")
	befriend(t, homeC, homeA, idA.PeerID)
	var mine, theirs struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &mine, "--home", homeA, "room", "create", "api", "--purpose", "design the v2 api")
	runJSON(t, &theirs, "--home", homeC, "room", "create", "api", "--purpose", "design the v2 api")
	if _, errs, code := run(t, "--home", homeC, "room", "invite", theirs.RoomID, idA.PeerID); code != 0 {
		t.Fatalf("invite: %s", errs)
	}
	var out string
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, _, _ = run(t, "--home", homeA, "room", "list")
		return strings.Contains(out, theirs.RoomID)
	}, "alice to be in carol's room")
	line := func(text, s string) string {
		for l := range strings.Lines(text) {
			if strings.Contains(l, s) {
				return l
			}
		}
		return ""
	}
	if !strings.Contains(out, "CREATED BY") || !strings.Contains(line(out, mine.RoomID), "this node") || !strings.Contains(line(out, theirs.RoomID), "carol") {
		t.Fatalf("room list does not say who created each room:\n%s", out)
	}
	if _, errs, code := run(t, "--home", homeC, "room", "say", theirs.RoomID, "post here"); code != 0 {
		t.Fatalf("say: %s", errs)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, _, _ = run(t, "--home", homeA, "inbox")
		return strings.Contains(out, "post here")
	}, "carol's message in alice's inbox")
	if l := line(out, "post here"); !strings.Contains(l, `"api" (created by @carol, room_id `+theirs.RoomID+")") {
		t.Fatalf("the inbox does not say which api: %q\n%s", l, out)
	}

	// The name alone is refused, with each room's ID and who created it.
	_, errs, code := run(t, "--home", homeA, "room", "say", "api", "which one?")
	if code == 0 || !strings.Contains(errs, mine.RoomID+" (created by this node)") || !strings.Contains(errs, theirs.RoomID+" (created by @carol)") {
		t.Errorf("room say in a name two rooms share: exit %d, %q: want each room ID with who created it", code, errs)
	}

	// alice's own room is created by her, not by "@alice", in her inbox
	// and in room show.
	if _, errs, code := run(t, "--home", homeA, "agent", "register", "helper"); code != 0 {
		t.Fatalf("agent register: %s", errs)
	}
	if _, errs, code := run(t, "--home", homeA, "room", "invite", mine.RoomID, "helper"); code != 0 {
		t.Fatalf("invite helper: %s", errs)
	}
	posted, errs, code := run(t, "--home", homeA, "room", "say", mine.RoomID, "post in mine", "--as", "helper")
	if code != 0 {
		t.Fatalf("say as helper: %s", errs)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, _, _ = run(t, "--home", homeA, "inbox")
		return strings.Contains(out, "post in mine")
	}, "helper's message in alice's inbox")
	if l := line(out, "post in mine"); !strings.Contains(l, `"api" (created by you, room_id `+mine.RoomID+")") {
		t.Errorf("the inbox does not say alice's own api is hers: %q\n%s", l, out)
	}
	shown, errs, code := run(t, "--home", homeA, "room", "show", strings.TrimSpace(posted))
	if code != 0 || !strings.Contains(shown, "room_id "+mine.RoomID+", created by you") {
		t.Errorf("room show of a post in alice's own api: exit %d %q\n%s", code, errs, shown)
	}
}

// Where a sentence of the CLI quotes a room's name, the name is escaped
// once: a bidi override reads \u202e (not \\u202e, %q of what termtext
// escaped already), and a quote in the name reads \".
func TestCLIRoomNamesEscapedOnce(t *testing.T) {
	name := "de\u202esign \"v2\"\u200b"
	want := `"de\u202esign \"v2\"\u200b"`
	var b strings.Builder
	printPending(&b, localapi.Pending{
		Items:      []localapi.Item{{Kind: "message", ID: "m1abcdefgh", Room: "r1", RoomName: name, From: "impl@x", Text: "hi"}},
		MoreUnread: []localapi.RoomCount{{Room: "r2", RoomName: name, Count: 3}},
	}, nil, "", human, nil)
	printEvent(&b, localapi.Event{ID: "e1abcdefgh", Kind: "create", Text: name, Agent: human, Author: "x"}, nil)
	if out := b.String(); strings.Count(out, want) != 3 || strings.Contains(out, `\\`) {
		t.Fatalf("the room's name is not quoted once, as %s, in:\n%s", want, out)
	}
}
