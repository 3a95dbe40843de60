package names_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/discovery"
	"github.com/parley-mesh/parley/internal/lookalike"
	"github.com/parley-mesh/parley/internal/names"
)

// TestLookAlikeHandlesShowTheirTails: a handle that only looks like another
// (letters of another script, a digit for a letter, a remark after it)
// shows with its peer ID's tail wherever names are read, when it reads like
// this node's handle, like a word that stands for this node ("here",
// "you"), or like another known node's handle; the contact it imitates, and
// this node, keep their bare handles and resolve by them. A contact's hint
// that holds invisible characters shows them escaped, with its tail.
func TestLookAlikeHandlesShowTheirTails(t *testing.T) {
	h, priv := hostAndKey(t)
	self, _ := peer.IDFromPrivateKey(priv)
	l := &lists{}
	now := time.Now()
	var clock sync.Mutex
	tick := func() { clock.Lock(); now = now.Add(2 * time.Second); clock.Unlock() }
	hints := map[peer.ID]string{}
	var hintsMu sync.Mutex
	ns, err := names.New(names.Config{Host: h, Key: priv, Handle: "alice", Wanted: l.get(&l.wanted), Requesters: l.get(&l.asking),
		Hints: func() map[peer.ID]string {
			hintsMu.Lock()
			defer hintsMu.Unlock()
			out := map[peer.ID]string{}
			for p, h := range hints {
				out[p] = h
			}
			return out
		},
		Now: func() time.Time { clock.Lock(); defer clock.Unlock(); return now }})
	if err != nil {
		t.Fatal(err)
	}
	type node struct {
		handle string
		bare   bool // shows as its handle alone
		asking bool // a stranger asking to be a contact, else a room member
	}
	nodes := []node{
		{"bob", true, false},                     // a contact: the one bob
		{"b\u043eb", false, true},                // a stranger asking as bob, with a Cyrillic o
		{"\u0430lice", false, false},             // reads like this node (Cyrillic a), a room member
		{"h\u0435re", false, false},              // reads like "here" (Cyrillic e): what the dashboard calls this node
		{"here. (you, this node)", false, false}, // reads as "here" and a remark
		{"You", false, false},                    // "you" marks this node
		{"alice (admin)", false, false},          // this node's handle and a remark
		{"carol", true, false},                   // reads like no one
		{"\u0299\u1d0f\u0299", false, true},      // a stranger asking as bob in small capitals
		{"b\u0489ob", false, true},               // a stranger asking as bob with a Cyrillic sign drawn around its b
		{"youth", true, false},                   // "you" and more of one word: another word
		{"Dave", true, true},                     // a stranger like no one else
	}
	ids := make([]peer.ID, len(nodes))
	wires := make([][]byte, len(nodes))
	var wanted, asking []peer.ID
	for i, n := range nodes {
		ids[i], wires[i] = card(t, n.handle)
		if n.asking {
			asking = append(asking, ids[i])
		} else {
			wanted = append(wanted, ids[i])
		}
	}
	l.set(wanted, asking)
	tick()
	for i := range nodes {
		if err := ns.Learn(ids[i], wires[i]); err != nil {
			t.Fatalf("the card of %q: %v", nodes[i].handle, err)
		}
	}
	tick()
	book := map[peer.ID]string{}
	likeSelf := map[peer.ID]bool{}
	for _, e := range ns.All() {
		book[e.Peer] = e.Name
		likeSelf[e.Peer] = e.LikeSelf
	}
	if got := ns.Name(self); got != "alice" || book[self] != "alice" {
		t.Fatalf("this node shows to itself as %q (All: %q)", got, book[self])
	}
	for i, n := range nodes {
		got := ns.Name(ids[i])
		if book[ids[i]] != got {
			t.Errorf("%q: Name says %q, All %q", n.handle, got, book[ids[i]])
		}
		// All flags the nodes that read as this one: those with a tail,
		// but the strangers reading like the contact bob.
		if want := !n.bare && !lookalike.Same(n.handle, "bob"); likeSelf[ids[i]] != want {
			t.Errorf("%q: LikeSelf %v, want %v", n.handle, likeSelf[ids[i]], want)
		}
		if n.bare {
			if got != n.handle {
				t.Errorf("%q shows as %q, want its bare handle", n.handle, got)
			}
		} else if tail, ok := strings.CutPrefix(got, n.handle+"~"); !ok || len(tail) < 4 || !strings.HasSuffix(ids[i].String(), tail) {
			t.Errorf("%q shows as %q, want it with its peer ID's tail", n.handle, got)
		}
		if p, err := ns.Resolve(got); err != nil || p != ids[i] {
			t.Errorf("Resolve(%q) = %s, %v; want the node of %q", got, p, err, n.handle)
		}
	}
	for name, want := range map[string]peer.ID{"bob": ids[0], "alice": self, "BOB": ids[0]} {
		if p, err := ns.Resolve(name); err != nil || p != want {
			t.Errorf("Resolve(%q) = %s, %v", name, p, err)
		}
	}
	// A look-alike's bare handle names no node: it could be either.
	for _, name := range []string{"b\u043eb", "h\u0435re", "\u0430lice"} {
		if p, err := ns.Resolve(name); !errors.Is(err, names.ErrAmbiguous) {
			t.Errorf("Resolve(%q) = %s, %v; want ErrAmbiguous", name, p, err)
		}
	}

	// A contact's hint with an invisible filler after a handle (an older
	// node's request) shows escaped and with its tail, never as "bob".
	filler, _ := card(t, "x")
	hintsMu.Lock()
	hints[filler] = "bob\u3164"
	hintsMu.Unlock()
	l.set(append(wanted, filler), asking)
	tick()
	if got := ns.Name(filler); !strings.HasPrefix(got, `bob\u3164~`) || !strings.HasSuffix(filler.String(), strings.TrimPrefix(got, `bob\u3164~`)) {
		t.Errorf("a hint with a Hangul filler shows as %+q, want bob\\u3164~SUFFIX", got)
	}
	if got := ns.Name(ids[0]); got != "bob" {
		t.Errorf("the contact bob shows as %q once a hint reads like it", got)
	}
}

// rankedNode is a node's handle and what it is to the node under test:
// "contact", "member" (of a room) or "stranger" (a peer asking to be a
// contact).
type rankedNode struct {
	handle, rank string
}

// namesOf builds a names service for own handle, learns a card for each
// of nodes (idOf, if set, may give a node's handle from the nodes' peer
// IDs) and returns their IDs, the entries All gives (what /v1/names and
// every printed name read) and the service.
func namesOf(t *testing.T, own string, nodes []rankedNode, idOf func(i int, ids []peer.ID) string) ([]peer.ID, map[peer.ID]names.Entry, *names.Service) {
	t.Helper()
	h, priv := hostAndKey(t)
	var mu sync.Mutex
	var wanted, contacts, asking []peer.ID
	get := func(l *[]peer.ID) func() []peer.ID {
		return func() []peer.ID { mu.Lock(); defer mu.Unlock(); return append([]peer.ID(nil), (*l)...) }
	}
	now := time.Now()
	ns, err := names.New(names.Config{Host: h, Key: priv, Handle: own, Wanted: get(&wanted), Contacts: get(&contacts), Requesters: get(&asking),
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	if err != nil {
		t.Fatal(err)
	}
	// Keys first: a handle may name another node (its peer ID, …SUFFIX).
	ids := make([]peer.ID, len(nodes))
	keys := make([]crypto.PrivKey, len(nodes))
	for i := range nodes {
		var err error
		if keys[i], _, err = crypto.GenerateEd25519Key(nil); err != nil {
			t.Fatal(err)
		}
		ids[i], _ = peer.IDFromPrivateKey(keys[i])
	}
	wires := make([][]byte, len(nodes))
	for i := range nodes {
		if idOf != nil {
			if s := idOf(i, ids); s != "" {
				nodes[i].handle = s
			}
		}
		w, err := discovery.SealNodeCard(keys[i], &discovery.NodeCard{Peer: ids[i], Handle: nodes[i].handle, Seq: 1})
		if err != nil {
			t.Fatal(err)
		}
		wires[i] = w
	}
	mu.Lock()
	for i, n := range nodes {
		switch n.rank {
		case "contact":
			contacts = append(contacts, ids[i])
			wanted = append(wanted, ids[i])
		case "member":
			wanted = append(wanted, ids[i])
		default:
			asking = append(asking, ids[i])
		}
	}
	now = now.Add(2 * time.Second)
	mu.Unlock()
	for i := range nodes {
		if err := ns.Learn(ids[i], wires[i]); err != nil {
			t.Fatalf("the card of %+q: %v", nodes[i].handle, err)
		}
	}
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	book := map[peer.ID]names.Entry{}
	for _, e := range ns.All() {
		book[e.Peer] = e
	}
	return ids, book, ns
}

// TestHandlesThatReadLikeAContact: a handle that reads like a contact's
// (letters of another script, a small mark), or holds it with a remark or
// punctuation around it, shows with its tail; the contact keeps its bare
// name and resolves by it, also against a look-alike room member. Handles
// that read like a name Parley shows in place of a handle (a peer ID,
// …SUFFIX, handle~SUFFIX with a look-alike tilde), and an older node's
// handle with a character that shows nothing, show with their tails too.
// This node's own other-looking handles (alice.w, alice-bot) and a
// stranger whose handle reads like two contacts' (ALI: ali, all) take no
// contact's bare name.
func TestHandlesThatReadLikeAContact(t *testing.T) {
	nodes := []rankedNode{
		0:  {"bob", "contact"},
		1:  {"bob (laptop)", "stranger"},
		2:  {"b\u043eb (new laptop)", "stranger"},
		3:  {"bob.", "stranger"},
		4:  {"bob_", "stranger"},
		5:  {"bob (old)", "member"},
		6:  {"carol", "contact"},
		7:  {"[admin] carol", "stranger"},
		8:  {"real carol", "member"},
		9:  {"caro\u1e37", "stranger"},
		10: {"ali", "contact"},
		11: {"all", "contact"},
		12: {"ALI", "stranger"},
		13: {"alice.w", "contact"},
		14: {"alice-bot", "contact"},
		15: {"alice_2", "member"},
		16: {"dave", "contact"},
		17: {"d\u0430ve", "member"}, // Cyrillic а, invited into a room by any member
		18: {"erin", "member"},
		19: {"erin", "member"},
		20: {"erin\u301c", "stranger"},   // + the first erin's tail
		21: {"peer id", "stranger"},      // carol's peer ID
		22: {"short", "stranger"},        // …and carol's last 8 characters
		23: {"frank\u3164", "stranger"},  // an older node's card with a Hangul filler
		24: {"gina (admin)", "contact"},  // a contact with a remark of its own
		25: {"\U0001f98a fox", "member"}, // an emoji before a name
		26: {"\U0001f431 fox", "member"},
	}
	bare := map[int]bool{0: true, 6: true, 10: true, 11: true, 13: true, 14: true, 15: true, 16: true, 24: true, 25: true, 26: true}
	ids, book, ns := namesOf(t, "alice", nodes, func(i int, ids []peer.ID) string {
		switch i {
		case 20:
			return "erin\u301c" + ids[18].String()[len(ids[18].String())-4:]
		case 21:
			return ids[6].String()
		case 22:
			return names.Short(ids[6])
		}
		return ""
	})
	for i, n := range nodes {
		e := book[ids[i]]
		if e.LikeSelf {
			t.Errorf("%+q reads like this node (alice)", n.handle)
		}
		if bare[i] {
			if e.Name != n.handle {
				t.Errorf("%+q (%s) shows as %+q, want its bare handle", n.handle, n.rank, e.Name)
			}
			if p, err := ns.Resolve(n.handle); err != nil || p != ids[i] {
				t.Errorf("Resolve(%+q) = %s, %v; want the %s", n.handle, p, err, n.rank)
			}
			continue
		}
		shown := strings.ReplaceAll(n.handle, "\u3164", `\u3164`)
		tail, ok := strings.CutPrefix(e.Name, shown+"~")
		if !ok || len(tail) < 4 || !strings.HasSuffix(ids[i].String(), tail) {
			t.Errorf("%+q (%s) shows as %+q, want %+q~SUFFIX of its own peer ID", n.handle, n.rank, e.Name, shown)
		}
		if p, err := ns.Resolve(e.Name); err != nil || p != ids[i] {
			t.Errorf("Resolve(%+q) = %s, %v", e.Name, p, err)
		}
	}
	if a, b := book[ids[18]].Name, book[ids[19]].Name; !strings.HasPrefix(a, "erin~") || !strings.HasPrefix(b, "erin~") || a == b {
		t.Errorf("two room members erin show as %q and %q", a, b)
	}

	// "dave" is the contact's, though a room member's handle reads the
	// same; the look-alike's own bare handle is refused, naming both
	// nodes with their peer IDs and which is the contact.
	_, err := ns.Resolve("d\u0430ve")
	if !errors.Is(err, names.ErrAmbiguous) {
		t.Fatalf("Resolve of the look-alike's bare handle: %v", err)
	}
	for _, want := range []string{book[ids[16]].Name + " (peer ID " + ids[16].String() + ", a contact)",
		book[ids[17]].Name + " (peer ID " + ids[17].String() + ", a room member)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not name %q", err, want)
		}
	}
	// One node shown with its tail: the refusal says why, as of one node.
	_, err = ns.Resolve("bob (laptop)")
	if !errors.Is(err, names.ErrAmbiguous) || !strings.Contains(err.Error(), "shows here as "+book[ids[1]].Name) ||
		!strings.Contains(err.Error(), `reads like the handle of "bob" with more around it`) || strings.Contains(err.Error(), "several") {
		t.Errorf("Resolve of a remark's bare handle: %v", err)
	}
}

// On this node, a handle that holds its own with a remark before it, or a
// small mark, reads like it; this node's emoji-only handle makes no other
// emoji-only handle read like it.
func TestHandlesThatReadLikeThisNode(t *testing.T) {
	nodes := []rankedNode{
		{"[admin] carol", "member"},
		{"real carol", "contact"},
		{"carol\u0345", "member"},
		{"caro\u1e37", "contact"},
		{"carol.", "member"},
		{"carolyn", "member"},
		{"carol.w", "contact"},
	}
	ids, book, _ := namesOf(t, "carol", nodes, nil)
	for i, n := range nodes {
		want := i < 5
		if e := book[ids[i]]; e.LikeSelf != want || (e.Name != n.handle) == !want {
			t.Errorf("%+q on carol's node: %+q, LikeSelf %v; want LikeSelf %v", n.handle, e.Name, e.LikeSelf, want)
		}
	}
	nodes = []rankedNode{{"\U0001f431", "member"}, {"\u2b50\ufe0f", "contact"}, {"\U0001f98a alice", "member"}}
	ids, book, _ = namesOf(t, "\U0001f98a", nodes, nil)
	for i, n := range nodes {
		if e := book[ids[i]]; e.LikeSelf || e.Name != n.handle {
			t.Errorf("%+q on the node of \U0001f98a: %+q, LikeSelf %v", n.handle, e.Name, e.LikeSelf)
		}
	}
}

// TestMarkedHandleShowsItsTail: a stranger "bob" with U+0317 (acute
// accent below, a general-purpose mark Parley reads through) and a room
// member "alice" with U+030D (vertical line above) show with their tails
// on alice's node, beside the contact bob and alice herself, as "bob" with
// a dot below does. Before, they showed bare: the look-alike keys kept
// those marks, mapped to Arabic marks (see internal/lookalike's
// TestGeneralMarksMappedToScriptMarksLeftOut).
func TestMarkedHandleShowsItsTail(t *testing.T) {
	nodes := []rankedNode{
		{"bob", "contact"},
		{"bob\u0317", "stranger"},
		{"alic\u030de", "member"},
		{"bob\u0323", "stranger"}, // a dot below: read through, shows its tail
	}
	ids, book, _ := namesOf(t, "alice", nodes, nil)
	if e := book[ids[0]]; e.Name != "bob" {
		t.Fatalf("the contact bob shows as %+q", e.Name)
	}
	if e := book[ids[3]]; e.Name == nodes[3].handle {
		t.Fatalf("the control %+q shows bare", nodes[3].handle)
	}
	for i := 1; i < 3; i++ {
		if e := book[ids[i]]; e.Name == nodes[i].handle {
			t.Errorf("%+q (%s) shows bare as %+q, LikeSelf %v", nodes[i].handle, nodes[i].rank, e.Name, e.LikeSelf)
		}
	}
}

// TestNameOfAStrangersCard: a handle from a card this node does not keep
// (an agent card `parley find` or parley_find found through the DHT)
// shows as the names service shows it. Before, find printed the card's
// handle as it came: a stranger "bob" read as the contact bob. Now a node
// this node knows shows by its name, and a stranger's handle that reads
// like a known node's, this node's, a word for it, or a display form, or
// that holds characters that show nothing, takes its tail.
func TestNameOfAStrangersCard(t *testing.T) {
	ids, book, ns := namesOf(t, "alice", []rankedNode{{"bob", "contact"}, {"carol", "member"}}, nil)
	stranger, _ := card(t, "x")
	if got := ns.NameOf(ids[0], "robert"); got != book[ids[0]].Name {
		t.Errorf("the contact bob, whose card tells robert, shows as %q, want %q", got, book[ids[0]].Name)
	}
	for h, tailed := range map[string]bool{
		"dave":           false,
		"bob":            true,
		"B\u043eb":       true, // a Cyrillic o
		"bob\u0317":      true, // a mark below
		"alice":          true,
		"alice (admin)":  true,
		"[team] carol":   true,
		"you":            true,
		"dave~abcd":      true,
		"dave\u3164":     true, // a Hangul filler
		"robert (admin)": false,
	} {
		got := ns.NameOf(stranger, h)
		tail, ok := strings.CutPrefix(got, names.Show(h)+"~")
		switch {
		case !tailed && got != h:
			t.Errorf("a stranger %+q shows as %+q, want it bare", h, got)
		case tailed && (!ok || len(tail) < 4 || !strings.HasSuffix(stranger.String(), tail)):
			t.Errorf("a stranger %+q shows as %+q, want it with its tail", h, got)
		}
	}
	if got := ns.NameOf(stranger, " "); got != names.Short(stranger) {
		t.Errorf("a stranger without a handle shows as %q", got)
	}
}
