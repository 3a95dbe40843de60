package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
)

// A membership signed on a machine whose clock was hours ahead holds a
// Seq from those hours: `parley org remove`, run once the clock is right,
// still revokes the member (it signs after the record the node holds).
// Before, the node refused the revocation as stale ("a newer record is
// held") until the clock caught up: the member could not be removed.
func TestCLIOrgRemoveAfterAClockAhead(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	home, key := filepath.Join(base, "a"), filepath.Join(base, "acme.orgkey")
	up(t, home, "--listen", loopback, "--handle", "alice")
	var id struct {
		PeerID string `json:"peer_id"`
	}
	runJSON(t, &id, "--home", home, "id")
	if _, errs, code := run(t, "org", "init", "Acme", "--key", key); code != 0 {
		t.Fatalf("org init: %s", errs)
	}
	if _, errs, code := run(t, "--home", home, "org", "add", id.PeerID, "--handle", "alice", "--key", key); code != 0 {
		t.Fatalf("org add: %s", errs)
	}
	// A member certified by the key on a machine 3 hours ahead.
	raw, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	var kf struct {
		Key []byte `json:"key"`
	}
	if err := json.Unmarshal(raw, &kf); err != nil {
		t.Fatal(err)
	}
	priv, err := crypto.UnmarshalPrivateKey(kf.Key)
	if err != nil {
		t.Fatal(err)
	}
	mpriv, _, _ := crypto.GenerateEd25519Key(nil)
	member, _ := peer.IDFromPrivateKey(mpriv)
	ahead := time.Now().Add(3 * time.Hour)
	rec, err := consent.NewOrgRecord(priv, consent.OrgRecord{Name: "Acme", Kind: consent.OrgMember, Subject: member,
		Handle: "mallory", NotBefore: time.Now().Add(-time.Minute), NotAfter: ahead.Add(24 * time.Hour), Seq: uint64(ahead.UnixMicro())})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := localapi.NewClient(node.SocketPath(home)).OrgPublish(context.Background(), rec); err != nil {
		t.Fatal(err)
	}

	out, errs, code := run(t, "--home", home, "org", "remove", member.String(), "--key", key)
	if code != 0 {
		t.Fatalf("org remove after a clock ahead: exit %d: %q %q", code, out, errs)
	}
	var st localapi.OrgStatus
	runJSON(t, &st, "--home", home, "org", "status")
	for _, m := range st.Members {
		if m.PeerID == member.String() {
			t.Fatalf("the removed member is still listed: %+v", st.Members)
		}
	}
	if !strings.Contains(errs, "ahead") {
		t.Fatalf("org remove did not say why it signed again: %q", errs)
	}
}
