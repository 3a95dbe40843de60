package contacts_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
)

// A contact operation that does not fit the contact's state says so in
// one sentence, naming the peer once, with no chain of the layers it came
// through ("contacts: revoke ID: consent: revoke ID: consent: operation
// does not fit contact state: …"); it still is consent.ErrState (the local
// API's 409).
func TestStateErrorsAreOnePlainSentence(t *testing.T) {
	nt := startNet(t, 2)
	waitConnected(t, nt, 0, 1)
	ctx := context.Background()
	plain := func(err error, id peer.ID, want string) {
		t.Helper()
		wantErr(t, err, consent.ErrState, want)
		if msg := err.Error(); strings.Count(msg, id.String()) != 1 || strings.Contains(msg, "consent:") || strings.Contains(msg, "contacts:") {
			t.Fatalf("err = %q; want one plain sentence naming %s once", msg, id)
		}
	}

	// Node 1 asks node 0; node 0 asks node 1 in turn before it answers.
	res, err := svc(nt, 1).Request(ctx, peer.AddrInfo{ID: nt.ID(0)}, "hello")
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, nt, 0, 1, consent.StatePendingIn)
	_, err = svc(nt, 0).Request(ctx, peer.AddrInfo{ID: nt.ID(1)}, "hello back")
	plain(err, nt.ID(1), "already asked you for contact: approve its request with `parley contact approve "+res.ID+"`")

	// Node 0 approves; node 1 revokes, twice.
	if _, err := svc(nt, 0).Approve(ctx, res.ID, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	waitState(t, nt, 1, 0, consent.StateActive)
	if _, err := svc(nt, 1).Revoke(ctx, nt.ID(0).String()); err != nil {
		t.Fatal(err)
	}
	_, err = svc(nt, 1).Revoke(ctx, nt.ID(0).String())
	plain(err, nt.ID(0), "is already revoked: nothing to do")

	// An approve of what is no request from the peer.
	_, err = svc(nt, 1).Approve(ctx, nt.ID(0).String(), time.Hour)
	plain(err, nt.ID(0), "there is no request from")
}

// An approve run on the node that asked (the request waits on the other
// node) says whose approval it waits for and where, not only its state; a
// deny there says how to withdraw the request.
func TestApproveOfOwnRequestSaysTheOtherNodeApproves(t *testing.T) {
	nt := startNet(t, 2)
	waitConnected(t, nt, 0, 1)
	ctx := context.Background()
	res, err := svc(nt, 1).Request(ctx, peer.AddrInfo{ID: nt.ID(0)}, "hello")
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, nt, 0, 1, consent.StatePendingIn)
	for _, ref := range []string{res.ID, nt.ID(0).String()} {
		_, err = svc(nt, 1).Approve(ctx, ref, time.Hour)
		wantErr(t, err, consent.ErrState, "this node asked "+nt.ID(0).String()+" for contact: its user approves it on their node (`parley contact approve "+res.ID+"` there)")
	}
	_, err = svc(nt, 1).Deny(ctx, res.ID)
	wantErr(t, err, consent.ErrState, "no request of theirs waits here to deny; `parley contact revoke "+res.ID+"` withdraws yours")
}
