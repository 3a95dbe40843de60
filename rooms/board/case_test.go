package board_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// TestBoardPathsDifferingInCaseOnlyOverlap: on a file system that folds
// case (macOS's and Windows' defaults), README.md and readme.md are one
// file, and git there (core.ignorecase) keeps one of them. Two agents of
// one node claim it under the two spellings: the second claim must be
// refused as the first one's, not granted beside it, or both agents are
// told they hold the same file. Before, both were granted; now paths
// overlap compared in lower case.
func TestBoardPathsDifferingInCaseOnlyOverlap(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "rewrite the intro", time.Hour, 0, "README.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := claim(ctx, nt, 0, "bob", "fix the typos", time.Hour, 0, "readme.md"); err == nil {
		t.Fatalf("bob's claim on readme.md granted beside alice's on README.md: the board now holds %v", holders(live(t, nt, 0)))
	}
}

// TestBoardPathsDifferingInUnicodeFormOverlap: macOS's file systems take
// "café.go" with é as one character (NFC, as git keeps it with
// core.precomposeunicode) and as e and a combining accent (NFD, as a
// name read from the disk may come) for one file. Two agents claiming it
// in the two forms must not both hold it. Before, both were granted;
// now paths overlap compared in NFC.
func TestBoardPathsDifferingInUnicodeFormOverlap(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "menu rewrite", time.Hour, 0, "caf\u00e9.go"); err != nil {
		t.Fatal(err)
	}
	if _, err := claim(ctx, nt, 0, "bob", "price fix", time.Hour, 0, "cafe\u0301.go"); err == nil {
		t.Fatalf("bob's claim on the NFD spelling granted beside alice's on the NFC one: the board now holds %q", holders(live(t, nt, 0)))
	}
}

// TestBoardClaimAgainInAnotherCaseRenewsIt: alice holds README.md and
// claims it again as readme.md (the name as typed on a file system that
// folds case, where the two are one file). That renews her claim: the
// board holds the file once, and her release of either spelling frees it
// for bob. Before (found by a hostile review, 2026-12-07), the fold
// renewed only a claim on the very same spelling: the board held the file
// twice under her name, and her release of README.md left readme.md
// refusing bob for the rest of its ttl (up to 8 h).
func TestBoardClaimAgainInAnotherCaseRenewsIt(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := claim(ctx, nt, 0, "alice", "rewrite the intro", time.Hour, 0, "README.md"); err != nil {
		t.Fatal(err)
	}
	res, err := claim(ctx, nt, 0, "alice", "rewrite the intro, still", time.Hour, 0, "readme.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Held) != 1 {
		t.Fatalf("alice holds %d claims on one file: %+v", len(res.Held), res.Held)
	}
	if got := live(t, nt, 0); len(got) != 1 || got[0].Note != "rewrite the intro, still" {
		t.Fatalf("the board: %+v, want README.md once, renewed", got)
	}
	if _, err := nt.Node(0).Board().Release(ctx, agentName("alice"), project, []string{"README.md"}); err != nil {
		t.Fatal(err)
	}
	if _, err := claim(ctx, nt, 0, "bob", "fix the typos", time.Hour, 0, "README.md"); err != nil {
		t.Fatalf("bob refused README.md after alice released it: %v (the board holds %v)", err, holders(live(t, nt, 0)))
	}
}

// TestBoardPathsDifferingInCaseFoldOverlap: on a file system that folds
// case (APFS, NTFS), "ΛΟΓΟΣ.md" and "λογος.md" (a word's last sigma is
// written ς in small letters) are one file, and so are "ſ" and "s". Two
// agents claiming such a file under the two spellings must not both hold
// it. Before (found by a hostile review, 2026-12-07), paths were compared
// in lower case, where Σ is σ and not ς, and both were granted; now they
// are compared case-folded (Unicode's full case folding, in NFC).
func TestBoardPathsDifferingInCaseFoldOverlap(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, pair := range [][2]string{{"docs/ΛΟΓΟΣ.md", "docs/λογος.md"}, {"src/main.go", "ſrc/main.go"}} {
		a, b := fmt.Sprintf("alice%d", i), fmt.Sprintf("bob%d", i)
		if _, err := claim(ctx, nt, 0, a, "rewrite", time.Hour, 0, pair[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := claim(ctx, nt, 0, b, "typos", time.Hour, 0, pair[1]); err == nil {
			t.Errorf("%s's claim on %q granted beside %s's on %q: the board now holds %q", b, pair[1], a, pair[0], holders(live(t, nt, 0)))
		}
	}
}
