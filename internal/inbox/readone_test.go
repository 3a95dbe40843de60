package inbox_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
)

// A read by event ID gives that one event whole, read or not, to an agent
// in its room, by its whole ID or its first 8 characters, and marks
// nothing read; an agent of the node not in the room is refused it, and an
// unknown ID is an error.
func TestReadOneEventByID(t *testing.T) {
	nt := start(t, 2)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	beta := register(t, nt, 1, "beta")
	register(t, nt, 1, "gamma")
	res, err := ib(nt, 0).OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "review", Members: []string{beta}})
	if err != nil || len(res.Failed) != 0 {
		t.Fatalf("open: %+v %v", res, err)
	}
	text := strings.Repeat("a long diff line\n", 600)
	said, err := ib(nt, 0).Say(ctx, "alpha", localapi.SayRequest{Room: res.RoomID, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	var got localapi.ReadResult
	nt.WaitFor(30*time.Second, func() bool {
		got, err = ib(nt, 1).Read(ctx, "beta", localapi.ReadRequest{ID: said.ID})
		return err == nil
	}, "beta to read the message by its ID")
	if len(got.Messages) != 1 || got.Messages[0].ID != said.ID || got.Messages[0].Text != text || got.Messages[0].Room != res.RoomID {
		t.Fatalf("read by ID: %+v", got.Messages)
	}
	if short, err := ib(nt, 1).Read(ctx, "beta", localapi.ReadRequest{ID: said.ID[:8]}); err != nil || len(short.Messages) != 1 || short.Messages[0].Text != text {
		t.Fatalf("read by 8 characters: %+v %v", short.Messages, err)
	}
	// Still unread.
	unread, err := ib(nt, 1).Read(ctx, "beta", localapi.ReadRequest{Room: res.RoomID})
	found := false
	for _, m := range unread.Messages {
		found = found || m.ID == said.ID
	}
	if err != nil || !found {
		t.Fatalf("the message read by ID is no longer unread: %+v %v", unread.Messages, err)
	}
	var le *localapi.Error
	if other, err := ib(nt, 1).Read(ctx, "gamma", localapi.ReadRequest{ID: said.ID}); !errors.As(err, &le) || le.Code != localapi.CodeNotMember || len(other.Messages) != 0 {
		t.Fatalf("gamma, not in the room: %+v %v", other.Messages, err)
	}
	if _, err := ib(nt, 1).Read(ctx, "beta", localapi.ReadRequest{ID: strings.Repeat("a", 8)}); !errors.As(err, &le) || le.Code != localapi.CodeUnknownEvent {
		t.Fatalf("an unknown ID: %v", err)
	}
	if _, err := ib(nt, 1).Read(ctx, "beta", localapi.ReadRequest{ID: said.ID, Last: 3}); !errors.As(err, &le) || le.Code != localapi.CodeBadRequest {
		t.Fatalf("an ID with last: %v", err)
	}
}
