package inbox_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/internal/localapi"
)

// Two rooms of one name, one this node created and one another node's
// invite brought: the error that asks for the room ID tells, beside each
// ID, who created its room, the one thing that tells them apart.
func TestAmbiguousRoomNameSaysWhoCreatedEach(t *testing.T) {
	nt := start(t, 2)
	ctx := context.Background()
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "gamma")
	register(t, nt, 0, "delta")
	register(t, nt, 1, "beta")
	theirs, err := ib(nt, 1).OpenRoom(ctx, "beta", localapi.OpenRoomRequest{Name: "pair", Members: []string{"alpha@" + nt.ID(0).String()}})
	if err != nil || len(theirs.Failed) != 0 {
		t.Fatalf("open on node 1: %+v %v", theirs, err)
	}
	waitItems(t, nt, 0, "alpha", "the invitation into node 1's room", func(p localapi.Pending) bool {
		return slices.Contains(kinds(p), "invitation")
	})
	ours, err := ib(nt, 0).OpenRoom(ctx, "gamma", localapi.OpenRoomRequest{Name: "pair"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ib(nt, 0).Say(ctx, "delta", localapi.SayRequest{Room: "pair", Text: "which?"})
	var le *localapi.Error
	if !errors.As(err, &le) || le.Code != localapi.CodeAmbiguous {
		t.Fatalf("say in a name two rooms share: %v", err)
	}
	for _, want := range []string{
		ours.RoomID + " (created by this node)",
		theirs.RoomID + " (created by @" + nt.ID(1).String() + ")",
	} {
		if !strings.Contains(le.Message, want) {
			t.Errorf("the ambiguity error does not say %q: %s", want, le.Message)
		}
	}
}
