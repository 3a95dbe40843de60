package main

import (
	"bufio"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

type cliContact struct {
	ID      string  `json:"id"`
	PeerID  string  `json:"peer_id"`
	Handle  string  `json:"handle"`
	State   string  `json:"state"`
	Note    string  `json:"note"`
	Expires *string `json:"expires"`
}

func contactsOf(t testing.TB, home string) []cliContact {
	t.Helper()
	var v []cliContact
	runJSON(t, &v, "--home", home, "contact", "list")
	return v
}

func stateOf(t testing.TB, home, peerID string) string {
	t.Helper()
	for _, c := range contactsOf(t, home) {
		if c.PeerID == peerID {
			return c.State
		}
	}
	return ""
}

func logHas(t *testing.T, home, room, text string) bool {
	t.Helper()
	var evs []struct {
		Kind string `json:"kind"`
		Text string `json:"text"`
	}
	runJSON(t, &evs, "--home", home, "room", "log", room)
	for _, e := range evs {
		if e.Kind == "message" && e.Text == text {
			return true
		}
	}
	return false
}

// metric reads one sample of the node's /metrics, 0 if absent.
func metric(t *testing.T, home, name, labels string) float64 {
	t.Helper()
	c := localapi.NewClient(node.SocketPath(home))
	defer c.Close()
	text, err := c.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+labels+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

func TestCLIContactConsentGatesRooms(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeB := filepath.Join(base, "a"), filepath.Join(base, "b")
	a := up(t, homeA, "--listen", loopback, "--handle", "alice")
	up(t, homeB, "--listen", loopback, "--bootstrap", a.addr(), "--handle", "bob")
	var idA, idB struct {
		PeerID string `json:"peer_id"`
	}
	runJSON(t, &idA, "--home", homeA, "id")
	runJSON(t, &idB, "--home", homeB, "id")
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		var peers []struct {
			PeerID string `json:"peer_id"`
		}
		runJSON(t, &peers, "--home", homeA, "peers")
		return len(peers) == 1
	}, "A and B to connect")

	var room struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &room, "--home", homeA, "room", "create", "consent")

	// Before consent the invite fails with what to do.
	_, errs, code := run(t, "--home", homeA, "room", "invite", room.RoomID, idB.PeerID)
	if code == 0 || !strings.Contains(errs, "parley contact request "+idB.PeerID) {
		t.Fatalf("invite before consent: exit %d: %q", code, errs)
	}

	// Bad input is refused with one line, and nothing is stored.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"contact", "request", idB.PeerID, "--note", strings.Repeat("x", 501)}, "at most 500"},
		{[]string{"contact", "request", "not-a-peer"}, "neither a peer ID nor a multiaddr"},
		{[]string{"contact", "request", idA.PeerID}, "own peer ID"},
		{[]string{"contact", "approve", "nosuchrequest01"}, "parley contact list"},
		{[]string{"contact", "approve", "x", "--expires", "soon"}, "use days like 90d"},
		{[]string{"contact", "revoke", idB.PeerID}, "no contact"},
	} {
		_, errs, code := run(t, append([]string{"--home", homeA}, tc.args...)...)
		if code == 0 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Fatalf("%v: exit %d, stderr %q, want one line with %q", tc.args, code, errs, tc.want)
		}
	}
	if l := contactsOf(t, homeA); len(l) != 0 {
		t.Fatalf("refused commands stored %+v", l)
	}

	// Request, then approve.
	var req struct {
		cliContact
		Delivered bool `json:"delivered"`
	}
	runJSON(t, &req, "--home", homeA, "contact", "request", idB.PeerID, "--note", "let's pair")
	if !req.Delivered || req.State != "pending-out" || req.PeerID != idB.PeerID {
		t.Fatalf("request: %+v", req)
	}
	var pending []cliContact
	nodetest.WaitFor(t, 10*time.Second, func() bool {
		pending = contactsOf(t, homeB)
		return len(pending) == 1
	}, "B to list A's request")
	if p := pending[0]; p.ID != req.ID || p.PeerID != idA.PeerID || p.Handle != "alice" || p.State != "pending-in" || p.Note != "let's pair" || p.Expires != nil {
		t.Fatalf("B lists %+v", p)
	}
	// The request waits for B's user: status and inbox say so, with the
	// commands that answer it. Before, inbox said "nothing waits for
	// you" and status nothing.
	if out, errs, code := run(t, "--home", homeB, "status"); code != 0 || !strings.Contains(out, "contact requests waiting for you: 1 ") {
		t.Fatalf("B's status: exit %d %s\n%s", code, errs, out)
	}
	if out, errs, code := run(t, "--home", homeB, "inbox"); code != 0 || !strings.Contains(out, "CONTACT REQUEST from "+idA.PeerID+` (handle "alice", its own word): let's pair`) ||
		!strings.Contains(out, "parley contact approve "+req.ID+"; deny: parley contact deny "+req.ID) {
		t.Fatalf("B's inbox: exit %d %s\n%s", code, errs, out)
	}
	// inbox --json has them too, as contact list --json gives them (it
	// left them out).
	var inb struct {
		Items           []json.RawMessage `json:"items"`
		ContactRequests []cliContact      `json:"contact_requests"`
	}
	runJSON(t, &inb, "--home", homeB, "inbox")
	if len(inb.ContactRequests) != 1 || inb.ContactRequests[0].ID != req.ID || inb.ContactRequests[0].PeerID != idA.PeerID || inb.ContactRequests[0].State != "pending-in" {
		t.Fatalf("B's inbox --json: contact_requests %+v, want A's request %s", inb.ContactRequests, req.ID)
	}
	// The list's JSON has exactly the documented keys.
	out, _, _ := run(t, "--home", homeB, "contact", "list", "--json")
	for _, k := range []string{`"id"`, `"peer_id"`, `"handle"`, `"state"`, `"note"`, `"expires"`} {
		if !strings.Contains(out, k) {
			t.Fatalf("list JSON lacks %s: %s", k, out)
		}
	}
	if _, errs, code := run(t, "--home", homeB, "contact", "approve", req.ID, "--expires", "90d"); code != 0 {
		t.Fatalf("approve: %s", errs)
	}
	for _, h := range []struct{ home, other string }{{homeA, idB.PeerID}, {homeB, idA.PeerID}} {
		nodetest.WaitFor(t, 10*time.Second, func() bool { return stateOf(t, h.home, h.other) == "active" },
			"%s to list the contact as active", h.home)
	}
	if out, _, _ := run(t, "--home", homeB, "inbox"); strings.Contains(out, "CONTACT REQUEST") {
		t.Fatalf("B's inbox lists an approved request:\n%s", out)
	}
	if out, _, _ := run(t, "--home", homeB, "inbox", "--json"); !strings.Contains(out, `"contact_requests": []`) {
		t.Fatalf("B's inbox --json after the approval: %s", out)
	}
	l := contactsOf(t, homeA)
	if len(l) != 1 || l[0].Handle != "bob" || l[0].Expires == nil {
		t.Fatalf("A lists %+v", l)
	}
	if exp, err := time.Parse(time.RFC3339, *l[0].Expires); err != nil || exp.Sub(time.Now().Add(90*24*time.Hour)).Abs() > time.Hour {
		t.Fatalf("expires %q, %v", *l[0].Expires, err)
	}

	// Now the invite works and B joins.
	if _, errs, code := run(t, "--home", homeA, "room", "invite", room.RoomID, idB.PeerID); code != 0 {
		t.Fatalf("invite after consent: %s", errs)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		var rs []struct {
			ID string `json:"room_id"`
		}
		runJSON(t, &rs, "--home", homeB, "room", "list")
		return slices.ContainsFunc(rs, func(r struct {
			ID string `json:"room_id"`
		}) bool {
			return r.ID == room.RoomID
		})
	}, "B to join the room")
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		_, _, code := run(t, "--home", homeB, "room", "say", room.RoomID, "before")
		return code == 0
	}, "B to speak in the room")
	nodetest.WaitFor(t, 10*time.Second, func() bool { return logHas(t, homeA, room.RoomID, "before") },
		"A to get B's message")
	// Inviting a member again posts nothing, and says it is in already.
	for _, who := range []string{idB.PeerID, "human@" + idB.PeerID} {
		before := len(roomLog(t, homeA, room.RoomID))
		out, errs, code := run(t, "--home", homeA, "room", "invite", room.RoomID, who)
		if code != 0 || !strings.Contains(out, who+" is already in") {
			t.Fatalf("invite of %s, a member: exit %d: %q %s", who, code, out, errs)
		}
		if after := len(roomLog(t, homeA, room.RoomID)); after != before {
			t.Fatalf("invite of %s, a member, posted: %d events, then %d", who, before, after)
		}
	}
	// A post waits for a flush of B's database, which /metrics times.
	if n := metric(t, homeB, "parley_store_flush_seconds_count", ""); n == 0 {
		t.Error("B's /metrics counts no database flush after a post")
	}
	// People read handles, not peer IDs: in the room log, and in peers.
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, _, _ := run(t, "--home", homeA, "room", "log", room.RoomID)
		return strings.Contains(out, "human@bob: before") && strings.Contains(out, "human@alice created") && !strings.Contains(out, idB.PeerID[len(idB.PeerID)-8:])
	}, "A's room log to name B's agent human@bob")
	if out, _, _ := run(t, "--home", homeA, "peers"); !strings.Contains(out, "bob ") {
		t.Fatalf("peers does not show B's handle:\n%s", out)
	}

	// A revokes B: both list it as revoked, and B's later words do not reach A.
	if _, errs, code := run(t, "--home", homeA, "contact", "revoke", idB.PeerID); code != 0 {
		t.Fatalf("revoke: %s", errs)
	}
	for _, h := range []struct{ home, other string }{{homeA, idB.PeerID}, {homeB, idA.PeerID}} {
		nodetest.WaitFor(t, 10*time.Second, func() bool { return stateOf(t, h.home, h.other) == "revoked" },
			"%s to list the contact as revoked", h.home)
	}
	// B's post reaches no one now, and B is told so: each node took the
	// other out of the room's GossipSub mesh as the revocation came
	// (rooms.Manager.Revet), and neither serves the other a sync, so A is
	// not even sent it (before, it came by gossip and A refused it).
	if _, errs, code := run(t, "--home", homeB, "room", "say", room.RoomID, "after"); code != 0 || !strings.Contains(errs, "no other member of room") {
		t.Fatalf("say after revoke: exit %d, want a note that no member can take it: %s", code, errs)
	}
	if !logHas(t, homeB, room.RoomID, "after") {
		t.Fatal("B's own log lacks its message")
	}
	if logHas(t, homeA, room.RoomID, "after") {
		t.Fatal("the revoked node's message appears in A's room log")
	}
	_, errs, code = run(t, "--home", homeA, "room", "invite", room.RoomID, idB.PeerID)
	if code == 0 || !strings.Contains(errs, "parley contact request") {
		t.Fatalf("invite after revoke: exit %d: %q", code, errs)
	}
}

// A stranger asking under a contact's handle reads in `contact list` and in
// `contact approve`'s confirmation as it does everywhere else: with its
// peer ID's tail (bob~SUFFIX), while the contact keeps the bare handle.
func TestCLIContactListNamesAStrangerAsEverywhere(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeB, homeH := filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "h")
	a := up(t, homeA, "--listen", loopback, "--handle", "alice")
	up(t, homeB, "--listen", loopback, "--bootstrap", a.addr(), "--handle", "bob")
	up(t, homeH, "--listen", loopback, "--bootstrap", a.addr(), "--handle", "bob")
	var idA, idB, idH struct {
		PeerID string `json:"peer_id"`
	}
	runJSON(t, &idA, "--home", homeA, "id")
	runJSON(t, &idB, "--home", homeB, "id")
	runJSON(t, &idH, "--home", homeH, "id")
	befriend(t, homeB, homeA, idA.PeerID)
	if _, errs, code := run(t, "--home", homeH, "contact", "request", idA.PeerID, "--note", "new laptop, please approve"); code != 0 {
		t.Fatalf("the stranger's request: %s", errs)
	}
	// The row of each node in the text list: its name is its third column.
	nameIn := func(out, id string) string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 2 && f[1] == id {
				return f[2]
			}
		}
		return ""
	}
	var out string
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, _, _ = run(t, "--home", homeA, "contact", "list")
		return strings.HasPrefix(nameIn(out, idH.PeerID), "bob~")
	}, "A's contact list to name the stranger bob~SUFFIX")
	if n := nameIn(out, idH.PeerID); !strings.HasSuffix(idH.PeerID, strings.TrimPrefix(n, "bob~")) {
		t.Fatalf("the stranger reads %q, not with its own peer ID's tail:\n%s", n, out)
	}
	if n := nameIn(out, idB.PeerID); n != "bob" {
		t.Fatalf("the contact reads %q, want bob:\n%s", n, out)
	}
	var id string
	for _, c := range contactsOf(t, homeA) {
		if c.PeerID == idH.PeerID {
			id = c.ID
		}
	}
	out, errs, code := run(t, "--home", homeA, "contact", "approve", id)
	if code != 0 || !strings.Contains(out, idH.PeerID+" (bob~") {
		t.Fatalf("approve: exit %d, %q %s; want the stranger named bob~SUFFIX", code, out, errs)
	}
}

// A node asks for contact under a contact's handle with a Hangul filler
// after it ("bob\u3164", which an older Parley's node could take): contact
// list and contact approve print it escaped and with its peer ID's tail,
// never as "bobㅤ" beside the contact bob, and --json's name says the same.
func TestCLIContactListNeverPrintsARawHandle(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeB := filepath.Join(base, "a"), filepath.Join(base, "b")
	a := up(t, homeA, "--listen", loopback, "--handle", "alice")
	up(t, homeB, "--listen", loopback, "--bootstrap", a.addr(), "--handle", "bob")
	var idA, idB struct {
		PeerID string `json:"peer_id"`
	}
	runJSON(t, &idA, "--home", homeA, "id")
	runJSON(t, &idB, "--home", homeB, "id")
	befriend(t, homeB, homeA, idA.PeerID)
	// The older node: its handle as such a node sends it.
	old := nodetest.Start(t, 1, nodetest.WithConfig(func(_ int, c *node.Config) { c.Handle = "bob\u3164" }))
	idH := old.ID(0).String()
	ai, err := parsePeerAddr(a.addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Node(0).Contacts().Request(context.Background(), ai, "new laptop, please approve"); err != nil {
		t.Fatalf("the older node's request: %v", err)
	}
	nameIn := func(out, id string) string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 2 && f[1] == id {
				return f[2]
			}
		}
		return ""
	}
	var out string
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, _, _ = run(t, "--home", homeA, "contact", "list")
		return nameIn(out, idH) != ""
	}, "A's contact list to show the older node's request")
	tail, ok := strings.CutPrefix(nameIn(out, idH), `bob\u3164~`)
	if !ok || len(tail) < 4 || !strings.HasSuffix(idH, tail) || strings.ContainsRune(out, '\u3164') {
		t.Fatalf("the request reads %+q, want bob\\u3164~SUFFIX:\n%s", nameIn(out, idH), out)
	}
	if n := nameIn(out, idB.PeerID); n != "bob" {
		t.Fatalf("the contact reads %q, want bob:\n%s", n, out)
	}
	var v []struct {
		PeerID string `json:"peer_id"`
		ID     string `json:"id"`
		Name   string `json:"name"`
	}
	runJSON(t, &v, "--home", homeA, "contact", "list")
	var id string
	for _, c := range v {
		if c.PeerID == idH {
			id = c.ID
			if c.Name != `bob\u3164~`+tail {
				t.Errorf("--json name %+q, want the name contact list prints", c.Name)
			}
		}
	}
	out, errs, code := run(t, "--home", homeA, "contact", "approve", id)
	if code != 0 || !strings.Contains(out, idH+` (bob\u3164~`+tail+")") || strings.ContainsRune(out, '\u3164') {
		t.Fatalf("approve: exit %d, %+q %s; want the older node named bob\\u3164~%s", code, out, errs, tail)
	}
}

// contactName prints the name the node gives, escaped; without one, the
// short form of the peer ID: never the handle as the node told it.
func TestContactNameNeverTheRawHandle(t *testing.T) {
	id := "12D3KooWDA8czuYiLVo4WKvreGCzijAVWGrJvRNKbLzfgmZmkHgK"
	for _, c := range []struct {
		e    localapi.ContactEntry
		want string
	}{
		{localapi.ContactEntry{PeerID: id, Handle: "bob\u3164"}, "…gmZmkHgK"},
		{localapi.ContactEntry{PeerID: id, Handle: "bob\u3164", Name: "bob\u3164~HgK2"}, `bob\u3164~HgK2`},
		{localapi.ContactEntry{PeerID: id, Handle: "bob", Name: "bob"}, "bob"},
		{localapi.ContactEntry{PeerID: "nope", Handle: "bob"}, "-"},
	} {
		if got := contactName(c.e); got != c.want {
			t.Errorf("contactName(%+v) = %+q, want %+q", c.e, got, c.want)
		}
	}
}

// `contact list` shows a request waiting for the user with the commands
// that answer it, as `parley inbox` does (the list named no next step:
// README's walk reads the ID from it and approves).
func TestCLIContactListNamesTheAnswerToARequest(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeB := filepath.Join(base, "a"), filepath.Join(base, "b")
	a := up(t, homeA, "--listen", loopback, "--handle", "alice")
	up(t, homeB, "--listen", loopback, "--bootstrap", a.addr(), "--handle", "bob")
	if _, errs, code := run(t, "--home", homeB, "contact", "request", peerID(t, homeA)); code != 0 {
		t.Fatalf("contact request: %s", errs)
	}
	var id string
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		for _, c := range contactsOf(t, homeA) {
			if c.State == "pending-in" {
				id = c.ID
			}
		}
		return id != ""
	}, "A to hold B's request")
	out, errs, code := run(t, "--home", homeA, "contact", "list")
	if want := "waits for your answer: parley contact approve " + id + "; deny: parley contact deny " + id; code != 0 || !strings.Contains(out, want) {
		t.Fatalf("A's contact list: exit %d, want %q\n%s%s", code, want, out, errs)
	}
	if out, _, _ := run(t, "--home", homeB, "contact", "list"); strings.Contains(out, "waits for your answer") {
		t.Fatalf("B's list, whose request waits for A, tells B to answer it:\n%s", out)
	}
	if _, errs, code := run(t, "--home", homeA, "contact", "approve", id); code != 0 {
		t.Fatalf("approve: %s", errs)
	}
	if out, _, _ := run(t, "--home", homeA, "contact", "list"); strings.Contains(out, "waits for your answer") {
		t.Fatalf("A's list after the approval:\n%s", out)
	}
}
