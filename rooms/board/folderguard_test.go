package board_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms/board"
)

// TestFolderAndStarClaimsBothHoldAFile: alice claims pkg/new (a package
// about to be made: the folder rule covers the files under it), bob
// claims **/*.go (now also the files at any depth under pkg/new). The
// board grants both: Overlap leaves out a glob that reaches into a folder
// only through a star. Before, the git guard refused a staged file any
// other's claim overlapped, and for pkg/new/a.go that was both: alice's
// commit was refused as bob's file and bob's as alice's. Now the guard
// (Blocking) lets a file through for an agent that holds a claim on it
// itself; a third agent's commit of it is still refused, by both.
func TestFolderAndStarClaimsBothHoldAFile(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, errA := claim(ctx, nt, 0, "alice", "new package", time.Hour, 0, "pkg/new")
	_, errB := claim(ctx, nt, 0, "bob", "go fmt everywhere", time.Hour, 0, "**/*.go")
	if errA != nil {
		t.Fatal(errA)
	}
	if errB != nil {
		return // refused as alice's: one holder per file
	}
	staged := []string{"pkg/new/a.go"}
	held := live(t, nt, 0)
	path := func(h board.Held) string { return h.Path }
	for _, who := range []string{"alice", "bob"} {
		mine := func(h board.Held) bool { return strings.HasPrefix(h.Holder, who+"@") }
		if by := board.Blocking(staged, held, path, mine); len(by) > 0 {
			t.Errorf("both claims were granted, and the git guard refuses %s's commit of %v as held by %v", who, staged, by)
		}
	}
	carol := func(h board.Held) bool { return strings.HasPrefix(h.Holder, "carol@") }
	if by := board.Blocking(staged, held, path, carol); len(by) != 2 {
		t.Errorf("carol's commit of %v: the guard finds it held by %v, want both alice's and bob's claims", staged, by)
	}
}
