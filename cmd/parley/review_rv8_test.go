package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node/nodetest"
)

// Review (rv8): the node takes `--as HUMAN` (or " human") as human since
// names a person gives fold capitals and spaces (b1a6bdf), but `parley
// inbox` compares the flag with "human" as typed: the contact requests
// that wait for the user are left out (plain and --json alike), and the
// inbox says "nothing waits for you" while one does.
func TestReviewInboxAsHumanInCapitalsShowsContactRequests(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeB := filepath.Join(base, "a"), filepath.Join(base, "b")
	a := up(t, homeA, "--listen", loopback, "--handle", "alice")
	up(t, homeB, "--listen", loopback, "--bootstrap", a.addr(), "--handle", "bob")
	idA := peerID(t, homeA)
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		var ps []localapi.Peer
		runJSON(t, &ps, "--home", homeB, "peers")
		return len(ps) > 0
	}, "A and B to connect")
	if _, errs, code := run(t, "--home", homeB, "contact", "request", idA); code != 0 {
		t.Fatalf("contact request: %s", errs)
	}
	requests := func(as string) int {
		out, errs, code := run(t, "--home", homeA, "inbox", "--as", as, "--json")
		if code != 0 {
			t.Fatalf("inbox --as %q: exit %d: %s", as, code, errs)
		}
		var v struct {
			ContactRequests []json.RawMessage `json:"contact_requests"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("inbox --as %q --json: %q: %v", as, out, err)
		}
		return len(v.ContactRequests)
	}
	nodetest.WaitFor(t, 10*time.Second, func() bool { return requests("human") == 1 }, "the request to reach A")
	for _, as := range []string{"HUMAN", "Human", " human"} {
		if n := requests(as); n != 1 {
			t.Errorf("inbox --as %q --json: %d contact requests, want the 1 that `inbox --as human` shows", as, n)
		}
		out, _, _ := run(t, "--home", homeA, "inbox", "--as", as)
		if !strings.Contains(out, "CONTACT REQUEST") {
			t.Errorf("inbox --as %q: %q, want the contact request", as, out)
		}
	}
}
