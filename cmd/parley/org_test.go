package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parley-mesh/parley/node/nodetest"
)

// parley org init writes a key file of its own (mode 0600), never over
// another, and refuses one that others can read.
func TestCLIOrgKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := filepath.Join(dir, "acme.orgkey")
	out, errs, code := run(t, "org", "init", "Acme", "--key", key)
	if code != 0 || !strings.Contains(out, "ORGKEY 12D3KooW") {
		t.Fatalf("org init: %d %q %q", code, out, errs)
	}
	fi, err := os.Stat(key)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi.Mode(), err)
	}
	var made struct{ Name, Org, Key string }
	runJSON(t, &made, "org", "init", "Beta", "--key", filepath.Join(dir, "beta.orgkey"))
	if made.Name != "Beta" || !strings.HasPrefix(made.Org, "12D3KooW") || made.Key != filepath.Join(dir, "beta.orgkey") {
		t.Fatalf("org init --json: %+v", made)
	}
	if _, errs, code := run(t, "org", "init", "Acme", "--key", key); code == 0 || !strings.Contains(errs, "never overwritten") {
		t.Fatalf("second init: %d %q", code, errs)
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	if _, errs, code := run(t, "--home", home, "org", "add", "12D3KooWDpg8uJ23WCMp3pC5in3VfXd9rUnP3jSnY32zU88w3CiC", "--key", key); code == 0 || !strings.Contains(errs, "readable by others") {
		t.Fatalf("add with a loose key: %d %q", code, errs)
	}
}

// An organisation's admin certifies a contact's node with `parley org add`:
// the certificate waits on that node until its user takes it with `parley org
// accept` (`parley org status` says so and how); until then the node is in
// no organisation.
func TestCLIOrgMembershipWaitsForAccept(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeB, key := filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "acme.orgkey")
	a := up(t, homeA, "--listen", loopback, "--handle", "alice")
	up(t, homeB, "--listen", loopback, "--bootstrap", a.addr(), "--handle", "bob")
	var idA, idB struct {
		PeerID string `json:"peer_id"`
	}
	runJSON(t, &idA, "--home", homeA, "id")
	runJSON(t, &idB, "--home", homeB, "id")
	var req cliContact
	runJSON(t, &req, "--home", homeB, "contact", "request", idA.PeerID)
	nodetest.WaitFor(t, 10*time.Second, func() bool { return len(contactsOf(t, homeA)) == 1 }, "A to list B's request")
	if _, errs, code := run(t, "--home", homeA, "contact", "approve", contactsOf(t, homeA)[0].ID); code != 0 {
		t.Fatalf("approve: %s", errs)
	}
	nodetest.WaitFor(t, 10*time.Second, func() bool { return stateOf(t, homeB, idA.PeerID) == "active" }, "the contact to be active on B")

	out, errs, code := run(t, "org", "init", "Acme", "--key", key)
	if code != 0 {
		t.Fatalf("org init: %s", errs)
	}
	orgKey := strings.Fields(out[strings.Index(out, "ORGKEY"):])[1]
	for _, args := range [][]string{{"org", "add", idA.PeerID, "--handle", "alice", "--key", key}, {"org", "add", idB.PeerID, "--handle", "bob", "--key", key}} {
		if _, errs, code := run(t, append([]string{"--home", homeA}, args...)...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	out, _, _ = run(t, "--home", homeB, "org", "status")
	if !strings.Contains(out, "parley org accept "+orgKey) || !strings.Contains(out, "not a member of an organisation") {
		t.Fatalf("status before accepting:\n%s", out)
	}
	// No membership, no date: "expires" is left out, not 0001-01-01.
	if out, _, _ = run(t, "--home", homeB, "--json", "org", "status"); strings.Contains(out, `"expires": "0001`) || strings.Contains(out, `"expires":"0001`) {
		t.Fatalf("status --json before accepting:\n%s", out)
	}
	if _, errs, code := run(t, "--home", homeB, "org", "accept", "12D3KooWDpg8uJ23WCMp3pC5in3VfXd9rUnP3jSnY32zU88w3CiC"); code == 0 || !strings.Contains(errs, "no membership") {
		t.Fatalf("accepting what nobody offered: exit %d: %q", code, errs)
	}
	if out, errs, code := run(t, "--home", homeB, "org", "accept", orgKey); code != 0 || !strings.Contains(out, "this node is bob in organisation Acme") {
		t.Fatalf("accept: exit %d: %q %q", code, out, errs)
	}
	var st struct {
		Org    string `json:"org"`
		Offers []any  `json:"offers"`
	}
	runJSON(t, &st, "--home", homeB, "org", "status")
	if st.Org != orgKey || len(st.Offers) != 0 {
		t.Fatalf("status after accepting: %+v", st)
	}
}
