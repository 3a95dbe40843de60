package inbox_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/parley-mesh/parley/internal/localapi"
)

// Unread lists the owed items not yet read bounded by count, not by text:
// an ask longer than a take's budget does not hide the asks after it (a
// peek leaves them out), a long text is cut to UnreadText, max bounds the
// list (the rest counted in LeftOut), and of the IDs asked after, those
// still owed are given (read or not), until answered or dismissed.
func TestUnreadIsBoundByCountNotText(t *testing.T) {
	nt, ctx := roomAll(t)
	in := ib(nt, 0)
	if _, err := in.Take(ctx, "beta"); err != nil { // the invitation
		t.Fatal(err)
	}
	var ids []string
	for i, text := range []string{strings.Repeat("x", 40<<10), "one?", "two?", "three?"} {
		a, err := in.Ask(ctx, "alpha", localapi.AskRequest{Room: "all", To: "beta", Text: text})
		if err != nil {
			t.Fatalf("ask %d: %v", i, err)
		}
		ids = append(ids, a.AskID)
	}
	p, err := in.Peek(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	if p.OwedLeftOut == 0 {
		t.Fatalf("a peek lists every ask (%d items): the long one no longer fills its budget, and this test shows nothing", len(p.Items))
	}
	u, err := in.Unread(ctx, "beta", 256, []string{ids[1], "not-an-ask"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range u.Items {
		got = append(got, it.ID)
		if n := utf8.RuneCountInString(it.Text); n > localapi.UnreadText {
			t.Fatalf("item %s keeps %d characters of text", it.ID, n)
		}
	}
	if !slices.Equal(got, ids) || u.LeftOut != 0 {
		t.Fatalf("Unread lists %v (%d left out), want the four asks %v", got, u.LeftOut, ids)
	}
	if !slices.Equal(u.Owed, []string{ids[1]}) {
		t.Fatalf("Unread says %v of %v are owed", u.Owed, []string{ids[1], "not-an-ask"})
	}
	u, err = in.Unread(context.Background(), "beta", 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Items) != 2 || u.LeftOut != 2 {
		t.Fatalf("Unread with max 2 lists %d items, %d left out", len(u.Items), u.LeftOut)
	}
	if _, err := in.Take(ctx, "beta"); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Take(ctx, "beta"); err != nil { // the long one's take shows the rest
		t.Fatal(err)
	}
	u, err = in.Unread(ctx, "beta", 256, ids[1:2])
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Items) != 0 || !slices.Equal(u.Owed, ids[1:2]) {
		t.Fatalf("after takes, Unread lists %d items and says %v owed; want none listed, %s still owed", len(u.Items), u.Owed, ids[1])
	}
	if _, err := in.Dismiss(ctx, "beta", localapi.DismissRequest{AskID: ids[1]}); err != nil {
		t.Fatal(err)
	}
	u, err = in.Unread(ctx, "beta", 256, ids[1:2])
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Owed) != 0 {
		t.Fatalf("a dismissed ask is still owed: %v", u.Owed)
	}
}
