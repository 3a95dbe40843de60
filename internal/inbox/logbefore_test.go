package inbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/internal/localapi"
)

// A room's log before an event takes the event's ID whole or its first 8
// characters or more, as the log shows them and a reply takes them; what
// is no event ID is refused naming --before, the flag the user gave.
func TestLogBeforeTakesAnIDPrefix(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	room, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "log"})
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for _, text := range []string{"one", "two", "three"} {
		p, err := ib(nt, 0).Say(ctx, "alpha", localapi.SayRequest{Room: room.RoomID, Text: text})
		if err != nil {
			t.Fatal(err)
		}
		last = p.ID
	}
	whole, err := ib(nt, 0).Log(ctx, room.RoomID, 100, last)
	if err != nil || len(whole) == 0 || whole[len(whole)-1].Text != "two" {
		t.Fatalf("log before the whole ID: %+v %v", whole, err)
	}
	for _, n := range []int{8, 12} {
		short, err := ib(nt, 0).Log(ctx, room.RoomID, 100, last[:n])
		if err != nil || len(short) != len(whole) || short[len(short)-1].ID != whole[len(whole)-1].ID {
			t.Errorf("log before the first %d characters of the ID: %d events, %v; want the %d before it", n, len(short), err, len(whole))
		}
	}
	var le *localapi.Error
	for _, bad := range []string{"abc", "NOT-AN-ID-AT-ALL"} {
		_, err := ib(nt, 0).Log(ctx, room.RoomID, 100, bad)
		if !errors.As(err, &le) || le.Status != 400 || !strings.Contains(le.Message, "--before") {
			t.Errorf("log before %q: %v, want a 400 naming --before", bad, err)
		}
	}
}
