package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

type seqEntry struct {
	ID     string `json:"id"`
	Author string `json:"author_peer"`
	Seq    uint64 `json:"seq"`
	Text   string `json:"text"`
}

func seqLog(t *testing.T, home, room string) []seqEntry {
	t.Helper()
	var v []seqEntry
	runJSON(t, &v, "--home", home, "room", "log", room, "--limit", "10000")
	return v
}

// The rollback of the hostile test, through the binary: B is stopped, its
// data folder copied, B posts 5 messages and stops, the old copy is put
// back, B starts and posts at once. B must learn its own 5 later events
// from A and C first (saying so while it waits), reuse no seq, and all
// three nodes end with the same log, nothing lost.
func TestCLIRollbackLearnsOwnEvents(t *testing.T) {
	t.Parallel()
	tn := trio(t, "trio")
	base, homeA, homeB, homeC := tn.base, tn.homes[0], tn.homes[1], tn.homes[2]
	a := tn.nodes[0]
	b := tn.nodes[1]
	// create, 2 invites, 2 joins, 2 messages
	nodetest.WaitFor(t, 20*time.Second, func() bool { return len(seqLog(t, homeA, tn.room)) == 7 }, "A to have everything")

	stop(t, homeB, b)
	old := filepath.Join(base, "b-data-copy")
	must(t, os.CopyFS(old, os.DirFS(filepath.Join(homeB, "data"))))
	b = up(t, homeB, "--listen", loopback, "--bootstrap", a.addr())
	for k := range 5 {
		nodetest.WaitFor(t, 30*time.Second, func() bool {
			_, _, code := run(t, "--home", homeB, "room", "say", tn.room, fmt.Sprintf("lost by the copy %d", k))
			return code == 0
		}, "B to post")
	}
	for _, h := range []string{homeA, homeC} {
		nodetest.WaitFor(t, 20*time.Second, func() bool { return len(seqLog(t, h, tn.room)) == 12 }, "%s to have B's 5 posts", h)
	}
	stop(t, homeB, b)
	must(t, os.RemoveAll(filepath.Join(homeB, "data")))
	must(t, os.CopyFS(filepath.Join(homeB, "data"), os.DirFS(old)))

	t0 := time.Now()
	up(t, homeB, "--listen", loopback, "--bootstrap", a.addr())
	var waited string
	nodetest.WaitFor(t, 60*time.Second, func() bool {
		_, errs, code := run(t, "--home", homeB, "room", "say", tn.room, "back from the old copy")
		if code != 0 {
			if !strings.Contains(errs, "learning my own events from peers") {
				t.Fatalf("say after the rollback: %s", errs)
			}
			waited = errs
		}
		return code == 0
	}, "B to post after the rollback")
	t.Logf("B posted %v after it started on the old copy (told to wait: %q)", time.Since(t0), strings.TrimSpace(waited))

	var ref []string
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		ref = ids2(seqLog(t, homeA, tn.room))
		return len(ref) == 13 && slices.Equal(ids2(seqLog(t, homeB, tn.room)), ref) &&
			slices.Equal(ids2(seqLog(t, homeC, tn.room)), ref)
	}, "identical logs of 13 events on A, B and C")
	seen := map[string]bool{}
	for _, e := range seqLog(t, homeC, tn.room) {
		k := fmt.Sprintf("%s/%d", e.Author, e.Seq)
		if seen[k] {
			t.Fatalf("seq %d of %s used twice", e.Seq, e.Author)
		}
		seen[k] = true
	}
}

func ids2(l []seqEntry) []string {
	out := make([]string, len(l))
	for i, e := range l {
		out[i] = e.ID
	}
	return out
}
