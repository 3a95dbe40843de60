package names_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/internal/names"
)

// TestLookAlikeHandlesShowTheirTails: a handle that only looks like another
// (letters of another script, a digit for a letter, a remark after it)
// shows with its peer ID's tail wherever names are read, when it reads like
// this node's handle, like a word that stands for this node ("here",
// "you"), or like another known node's handle; the contact it imitates, and
// this node, keep their bare handles and resolve by them. A contact's hint
// that holds invisible characters is not shown.
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
		// but the stranger reading like the contact bob.
		if want := !n.bare && i != 1; likeSelf[ids[i]] != want {
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

	// A contact's hint with an invisible filler after a handle is not shown.
	filler, _ := card(t, "x")
	hintsMu.Lock()
	hints[filler] = "bob\u3164"
	hintsMu.Unlock()
	l.set(append(wanted, filler), asking)
	tick()
	if hd, ok := ns.Handle(filler); ok {
		t.Errorf("a hint with a Hangul filler is shown: %q as %q", hd, ns.Name(filler))
	}
	if got := ns.Name(ids[0]); got != "bob" {
		t.Errorf("the contact bob shows as %q once a hint reads like it", got)
	}
}
