package manual

import (
	"strings"
	"testing"

	"github.com/parley-mesh/parley/internal/localapi"
)

// TestNoticeCountsTheAsksLeftOut: a take lists at most a few reminders
// and counts the other asks owed (Pending.OwedLeftOut); a hook's text
// says how many, after the reminders, and a note of items left out does
// not count that line as a room of unread messages.
func TestNoticeCountsTheAsksLeftOut(t *testing.T) {
	ask := localapi.Item{Kind: "reminder", ID: "a1", Room: "r1", RoomName: "release", From: "alpha@peer", Text: "which port?"}
	inv := localapi.Item{Kind: "invitation", ID: "i1", Room: "r2", RoomName: "design", From: "gamma@peer", Purpose: "plan"}
	p := localapi.Pending{Items: []localapi.Item{ask, inv}, OwedLeftOut: 1480}
	n := Notice(p, "beta@peer", Shell{}, 10000)
	at, inviteAt := strings.Index(n, "… and 1480 more asks you owe"), strings.Index(n, "design")
	if at < 0 || at < strings.Index(n, "which port?") || at > inviteAt {
		t.Fatalf("the notice does not count the asks left out after the reminders:\n%s", n)
	}
	short := Notice(p, "beta@peer", Shell{}, at+90)
	if !strings.Contains(short, "which port?") || !strings.Contains(short, "(1 more items did not fit here") || strings.Contains(short, "unread") {
		t.Fatalf("a cut notice counts the asks left out as unread messages:\n%s", short)
	}
}
