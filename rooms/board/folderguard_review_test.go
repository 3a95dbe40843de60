package board_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms/board"
)

// TestFolderAndStarClaimsBothHoldAFile: alice claims pkg/new (a package
// about to be made: the folder rule covers the files under it), bob
// claims **/*.go (now also the files at any depth under pkg/new). The
// board grants both: Overlap leaves out a glob that reaches into a folder
// only through a star. The git guard, though, asks the board which claims
// overlap each staged file (node/board.go, Overlap(claim, file)), and for
// pkg/new/a.go that is both: alice's commit is refused as bob's file and
// bob's as alice's. Two claims the board let through as apart hold the
// same file against each other.
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
	const staged = "pkg/new/a.go"
	var by []string
	for _, h := range live(t, nt, 0) {
		if board.Overlap(h.Path, staged) { // the board's filter for the guard
			by = append(by, h.Holder+" ("+h.Path+")")
		}
	}
	if len(by) > 1 {
		t.Fatalf("both claims were granted, and the git guard finds %s held by %v: each one's commit is refused as the other's", staged, by)
	}
}
