package names_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/internal/names"
)

// TestLongPrefixedHandleShowsItsTail: a handle that holds a contact's
// handle, or "you", after 19 U+FDFA (each four words once NFKC: 59 words
// in 61 bytes). Before, the Index looked only at a key's first 48 words,
// so it showed bare beside the contact bob, or as "ﷺ…ﷺ you" on this node,
// through NameOf (parley find) too. Now every word is looked at, and each
// shows with its tail.
func TestLongPrefixedHandleShowsItsTail(t *testing.T) {
	pre := strings.Repeat("\ufdfa", 19) + " "
	nodes := []rankedNode{{"bob", "contact"}, {pre + "bob", "stranger"}, {pre + "you", "member"}, {pre + "alice", "member"}}
	ids, book, ns := namesOf(t, "alice", nodes, nil)
	if book[ids[0]].Name != "bob" {
		t.Fatalf("the contact bob shows as %q", book[ids[0]].Name)
	}
	for i := 1; i < len(nodes); i++ {
		if e := book[ids[i]]; e.Name == nodes[i].handle {
			t.Errorf("%+q (%s) shows bare", nodes[i].handle, nodes[i].rank)
		}
	}
	// NameOf, on a node that knows only the contact bob.
	_, _, ns = namesOf(t, "alice", []rankedNode{{"bob", "contact"}}, nil)
	stranger, _ := card(t, "x")
	for _, h := range []string{pre + "bob", pre + "you", pre + "alice"} {
		if got := ns.NameOf(stranger, h); got == h {
			t.Errorf("a stranger's card %+q shows bare through NameOf", h)
		}
	}
}

// TestOwnScriptMarkLookAlikeShowsItsTail: "bõb" with a Cyrillic о shows
// with its tail beside the contact bob. Before, the same Cyrillic о with a
// Cyrillic titlo (U+0483, as small as the tilde), or an Arabic heh with a
// kasra, showed bare: a mark of the letter's own script stayed in the key,
// though the letter reads as a Latin o. Now it is left out, and each shows
// with its tail (see internal/lookalike's
// TestOwnScriptMarkOnLookAlikeLetter).
func TestOwnScriptMarkLookAlikeShowsItsTail(t *testing.T) {
	nodes := []rankedNode{{"bob", "contact"}, {"b\u043e\u0303b", "stranger"}, {"b\u043e\u0483b", "stranger"}, {"b\u0647\u0650b", "member"}}
	ids, book, _ := namesOf(t, "alice", nodes, nil)
	if book[ids[0]].Name != "bob" || book[ids[1]].Name == nodes[1].handle {
		t.Fatalf("control: bob shows as %q, the tilde look-alike as %q", book[ids[0]].Name, book[ids[1]].Name)
	}
	for i := 2; i < len(nodes); i++ {
		if e := book[ids[i]]; e.Name == nodes[i].handle {
			t.Errorf("%+q (%s) shows bare beside the contact bob", nodes[i].handle, nodes[i].rank)
		}
	}
}

// TestResolveOfAStrangersShownName: `parley find` shows a stranger whose
// card tells "bob" as bob~SUFFIX (NameOf), its own peer ID's tail. Written
// back (`parley ask claude@bob~SUFFIX`, an agent reading parley_find's
// name), Resolve finds no node of that handle whose peer ID ends so.
// Before, it fell back to the nodes whose handles read like the whole name
// (the key stops at '~': "bob") and returned the contact bob, for any
// tail: the name of one node stood for another. Now it refuses the name
// (ErrAmbiguous, naming the nodes of that handle, or ErrUnknown).
func TestResolveOfAStrangersShownName(t *testing.T) {
	ids, _, ns := namesOf(t, "alice", []rankedNode{{"bob", "contact"}}, nil)
	stranger, _ := card(t, "x")
	shown := ns.NameOf(stranger, "bob")
	if !strings.HasPrefix(shown, "bob~") || !strings.HasSuffix(stranger.String(), strings.TrimPrefix(shown, "bob~")) {
		t.Fatalf("control: the stranger bob shows as %q", shown)
	}
	for _, name := range []string{shown, "bob~zzzz"} {
		p, err := ns.Resolve(name)
		if err == nil && p == ids[0] {
			t.Errorf("Resolve(%q) = the contact bob %s, whose peer ID does not end so", name, p)
		} else if err == nil {
			t.Errorf("Resolve(%q) = %s, a node not known", name, p)
		} else if err != nil && !errors.Is(err, names.ErrUnknown) && !errors.Is(err, names.ErrAmbiguous) {
			t.Errorf("Resolve(%q): %v", name, err)
		}
	}
}
