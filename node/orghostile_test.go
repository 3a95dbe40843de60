package node_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/internal/frame"
	"github.com/parley-mesh/parley/internal/org"
	"github.com/parley-mesh/parley/node/nodetest"
)

// sealFor signs r with the organisation's key and the validity given
// (seal's next seq).
func (o orgKey) sealFor(t *testing.T, r consent.OrgRecord, from, to time.Time) []byte {
	t.Helper()
	r.Name, r.Seq = o.name, uint64(time.Now().UnixMilli())*1000+orgSeq.Add(1)
	r.NotBefore, r.NotAfter = from, to
	wire, err := consent.NewOrgRecord(o.priv, r)
	if err != nil {
		t.Fatal(err)
	}
	return wire
}

func contactOf(t *testing.T, nt *nodetest.Net, i, j int) consent.Contact {
	t.Helper()
	c, ok := nt.Node(i).Contacts().Book().Get(nt.ID(j), time.Now())
	if !ok {
		t.Fatalf("node %d holds no contact with node %d", i, j)
	}
	return c
}

// Trust is not transitive: X and Y trust each other, Y and Z trust each
// other; a member of Z asking a member of X waits for the user, though
// X's member holds Y's trust in Z nowhere and Z's member shows it.
func TestOrgHostileTrustChainDoesNotReach(t *testing.T) {
	nt := nodetest.Start(t, 3)
	nt.ConnectAll()
	const x1, y1, z1 = 0, 1, 2
	x, y, z := newOrgKey(t, "Xco"), newOrgKey(t, "Yco"), newOrgKey(t, "Zco")
	ask := []string{consent.ScopeAsk}
	x.publish(t, nt, x1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(x1), Handle: "xavier"})
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(y1), Handle: "yann"})
	z.publish(t, nt, z1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(z1), Handle: "zoe"})
	x.publish(t, nt, x1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: y.id, Scopes: ask})
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: x.id, Scopes: ask})
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: z.id, Scopes: ask})
	z.publish(t, nt, z1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: y.id, Scopes: ask})
	// Z's member shows Y's trusts beside its own certificate and Z's.
	yTrustsX := y.seal(t, consent.OrgRecord{Kind: consent.OrgTrust, Subject: x.id, Scopes: ask})
	cert := z.seal(t, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(z1), Handle: "zoe"})
	nt.Node(z1).Host().SetStreamHandler(org.ProtocolID, func(st network.Stream) {
		defer st.Close()
		b, err := frame.Read(st, 1<<20)
		if err != nil || len(b) == 0 {
			_ = st.Reset()
			return
		}
		op, recs := byte('a'), [][]byte(nil)
		if b[0] == 'i' {
			op, recs = 'r', [][]byte{cert, yTrustsX}
		}
		body, _ := consent.EncodeOrgRecords(recs)
		_ = frame.Write(st, append([]byte{op}, body...))
		_ = st.CloseWrite()
	})
	if s := decided(t, nt, z1, x1, "not_trusted"); s != consent.StatePendingIn {
		t.Fatalf("Z's member, through Y's trusts, is %q at X's member, want pending-in", s)
	}
}

// Scopes are those both trusts name, and the contact lasts no longer
// than the shortest of the certificates and trusts: a trust that lasts a
// century gives no more than the requester's day-long membership.
func TestOrgHostileScopesAreBothTrustsAndTimeTheShortest(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.ConnectAll()
	const x1, y1 = 0, 1
	x, y := newOrgKey(t, "Xco"), newOrgKey(t, "Yco")
	now := time.Now()
	memberTo := now.Add(2 * time.Hour)
	for _, w := range [][]byte{
		x.sealFor(t, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(x1), Handle: "xavier"}, now.Add(-time.Minute), memberTo),
		x.sealFor(t, consent.OrgRecord{Kind: consent.OrgTrust, Subject: y.id, Scopes: []string{consent.ScopeAsk, consent.ScopePresence}}, now.Add(-time.Minute), now.AddDate(100, 0, 0)),
	} {
		if _, _, err := nt.Node(x1).Org().Publish(context.Background(), w); err != nil {
			t.Fatal(err)
		}
	}
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(y1), Handle: "yann"})
	if _, _, err := nt.Node(y1).Org().Publish(context.Background(),
		y.sealFor(t, consent.OrgRecord{Kind: consent.OrgTrust, Subject: x.id, Scopes: []string{consent.ScopeAsk}}, now.Add(-time.Minute), now.AddDate(100, 0, 0))); err != nil {
		t.Fatal(err)
	}
	if s := decided(t, nt, x1, y1, "not_trusted"); s != consent.StateActive {
		t.Fatalf("request %q, want active", s)
	}
	c := contactOf(t, nt, y1, x1)
	if !slices.Equal(c.Scopes, []string{consent.ScopeAsk}) {
		t.Fatalf("scopes %v, want [ask] (Y names ask only)", c.Scopes)
	}
	if c.Expires.After(memberTo) {
		t.Fatalf("the contact expires %v, after the requester's membership (%v)", c.Expires, memberTo)
	}
}

// A trust replaced by a narrower one (fewer scopes) narrows the contacts
// made through the wider one: they are revoked, and may ask again, to be
// approved within what the organisation trusts now.
func TestOrgHostileNarrowedTrustNarrowsContacts(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.ConnectAll()
	const x1, y1 = 0, 1
	x, y := newOrgKey(t, "Xco"), newOrgKey(t, "Yco")
	both := []string{consent.ScopeAsk, consent.ScopePresence}
	x.publish(t, nt, x1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(x1), Handle: "xavier"})
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(y1), Handle: "yann"})
	x.publish(t, nt, x1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: y.id, Scopes: both})
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: x.id, Scopes: both})
	if s := decided(t, nt, x1, y1, "not_trusted"); s != consent.StateActive {
		t.Fatalf("request %q, want active", s)
	}
	if c := contactOf(t, nt, y1, x1); !slices.Contains(c.Scopes, consent.ScopePresence) {
		t.Fatalf("scopes %v, want presence among them", c.Scopes)
	}
	// Y no longer trusts X's members with its presence.
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: x.id, Scopes: []string{consent.ScopeAsk}})
	if c := contactOf(t, nt, y1, x1); c.State == consent.StateActive && slices.Contains(c.Scopes, consent.ScopePresence) {
		t.Fatalf("after Y's trust in X was narrowed to ask, the contact made through it is %q with scopes %v", c.State, c.Scopes)
	}
}

// A trust renewed with the same scopes and a later end leaves the
// contacts made through it.
func TestOrgHostileRenewedTrustLeavesContacts(t *testing.T) {
	nt, x, y := trustingPair(t)
	const x1, y1 = 0, 1
	if s := decided(t, nt, x1, y1, "not_trusted"); s != consent.StateActive {
		t.Fatalf("request %q, want active", s)
	}
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: x.id, Scopes: []string{consent.ScopeAsk}})
	if s := contactState(nt, y1, x1); s != consent.StateActive {
		t.Fatalf("after a renewal of the same trust the contact is %q", s)
	}
}

// A membership replayed after its revocation (the ex-member's old
// certificate, pushed to a member, by the ex-member or a stranger) is
// refused as stale: the member does not count it again.
func TestOrgHostileReplayedMembershipIsStale(t *testing.T) {
	nt := nodetest.Start(t, 4)
	nt.ConnectAll()
	const admin, member, ex, stranger = 0, 1, 2, 3
	x := newOrgKey(t, "Xco")
	x.publish(t, nt, admin, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(admin), Handle: "a"})
	nt.Befriend(t, member, admin)
	nt.Befriend(t, ex, admin)
	x.join(t, nt, admin, member, "m")
	old := x.seal(t, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(ex), Handle: "e"})
	if _, _, err := nt.Node(admin).Org().Publish(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	nt.WaitFor(10*time.Second, func() bool { return nt.Node(member).Org().IsMember(nt.ID(ex)) }, "the member to count the new one")
	x.publish(t, nt, admin, consent.OrgRecord{Kind: consent.OrgRevoke, Subject: nt.ID(ex)})
	nt.WaitFor(10*time.Second, func() bool { return !nt.Node(member).Org().IsMember(nt.ID(ex)) }, "the member to hold the revocation")
	for _, from := range []int{ex, stranger} {
		orgExchange(t, nt, from, member, 'p', [][]byte{old})
		orgExchange(t, nt, from, admin, 'p', [][]byte{old})
	}
	for _, i := range []int{admin, member} {
		if nt.Node(i).Org().IsMember(nt.ID(ex)) {
			t.Fatalf("node %d counts the revoked member again after its old certificate was replayed", i)
		}
		if _, err := nt.Node(i).Org().CheckCard(nt.ID(ex), old); err == nil {
			t.Fatalf("node %d takes the revoked member's old certificate on its card", i)
		}
	}
}

// A revoked member whose node is restored from a copy of its home made
// before the revocation holds its old membership again, and with it its
// organisation's trusts: it would go on approving trusted organisations'
// members in the organisation's name. When it connects to a member that
// holds the revocation, it is told.
func TestOrgHostileRestoredRevokedMemberIsTold(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.ConnectAll()
	const admin, ex = 0, 1
	x := newOrgKey(t, "Xco")
	x.publish(t, nt, admin, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(admin), Handle: "a"})
	nt.Befriend(t, ex, admin)
	x.join(t, nt, admin, ex, "e")
	nt.Crash(ex)
	backup := nt.CopyData(ex)
	nt.Restart(ex)
	nt.WaitConnected(ex, admin)
	x.publish(t, nt, admin, consent.OrgRecord{Kind: consent.OrgRevoke, Subject: nt.ID(ex)})
	nt.WaitFor(10*time.Second, func() bool { return nt.Node(ex).Org().Mine() == nil }, "the member to hold its revocation")

	nt.Crash(ex)
	nt.RestoreData(ex, backup)
	nt.RestartAlone(ex)
	if nt.Node(ex).Org().Mine() == nil {
		t.Fatal("the restored home holds no membership: the test shows nothing")
	}
	nt.ConnectAll()
	nt.WaitFor(20*time.Second, func() bool { return nt.Node(ex).Org().Mine() == nil },
		"the restored ex-member, connected to its organisation's node, to hold its revocation again")
}
