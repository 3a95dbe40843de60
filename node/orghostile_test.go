package node_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/network"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/identity"
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

// revokedThroughTrust starts X's admin x1, X's member p (joined through
// x1) and Y's member y1, X and Y trusting each other to ask; p becomes
// y1's contact through the trust, and x1 is no contact of y1 nor of any
// member of Y: only p's node can tell y1 that X revoked p.
func revokedThroughTrust(t *testing.T) (nt *nodetest.Net, x orgKey, x1, p, y1 int) {
	t.Helper()
	nt = nodetest.Start(t, 3)
	nt.ConnectAll()
	x1, p, y1 = 0, 1, 2
	x, y := newOrgKey(t, "Xco"), newOrgKey(t, "Yco")
	ask := []string{consent.ScopeAsk}
	x.publish(t, nt, x1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(x1), Handle: "xavier"})
	x.publish(t, nt, x1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: y.id, Scopes: ask})
	nt.Befriend(t, p, x1)
	x.join(t, nt, x1, p, "pat")
	nt.WaitFor(10*time.Second, func() bool { return len(nt.Node(p).Org().Trusts()) == 1 }, "node %d to hold X's trust", p)
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(y1), Handle: "yann"})
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: x.id, Scopes: ask})
	if s := decided(t, nt, p, y1, "not_trusted"); s != consent.StateActive {
		t.Fatalf("X's member's request is %q at Y's member, want active", s)
	}
	return nt, x, x1, p, y1
}

// A member revoked by its organisation, whose node runs Parley, tells the
// contacts it made through trust: they revoke the contact. Before, the
// revocation went to the organisation's members and the publishing node's
// contacts only, and the revoked node (no longer a member once it held its
// revocation) passed it on to nobody: y1 kept the contact until the
// membership's end.
func TestOrgHostileRevokedMemberTellsItsTrustContacts(t *testing.T) {
	nt, x, x1, p, y1 := revokedThroughTrust(t)
	x.publish(t, nt, x1, consent.OrgRecord{Kind: consent.OrgRevoke, Subject: nt.ID(p)})
	nt.WaitFor(15*time.Second, func() bool { return contactState(nt, y1, p) == consent.StateRevoked },
		"the contact made through X's trust to be revoked at node %d", y1)
}

// A revoked member whose node does not pass its revocation on (a modified
// node) keeps the contacts it made through trust with members of other
// organisations that are no contacts of its organisation's nodes.
func TestOrgHostileRevokedMemberKeepsUnreachedTrustContacts(t *testing.T) {
	t.Skip("finding: a revocation reaches a trusting organisation's members only through the publishing node's contacts and members' contacts; a modified revoked node keeps the contacts it made through trust until its membership ends (suggested: a trusting node asks the revoked member's organisation's nodes it knows, e.g. re-checks tagged contacts against the organisation's live membership on a period, or memberships short-lived and renewed)")
	nt, x, x1, p, y1 := revokedThroughTrust(t)
	nt.Node(p).Host().SetStreamHandler(org.ProtocolID, func(st network.Stream) { _ = st.Reset() })
	x.publish(t, nt, x1, consent.OrgRecord{Kind: consent.OrgRevoke, Subject: nt.ID(p)})
	nt.WaitFor(15*time.Second, func() bool { return contactState(nt, y1, p) == consent.StateRevoked },
		"the contact made through X's trust to be revoked at node %d", y1)
}

// Forged records: X's revocation of a member and X's membership of a
// stranger, signed by the stranger's own key over X's payload, pushed by
// the stranger to X's members, are refused (forged, counted): the member
// stays, the stranger is no member. A membership of the node itself that
// holds only in a far future (or held only in the past) is refused too.
func TestOrgHostileForgedAndOutOfTimeRecords(t *testing.T) {
	nt := nodetest.Start(t, 3)
	nt.ConnectAll()
	const admin, member, stranger = 0, 1, 2
	x, z := newOrgKey(t, "Xco"), newOrgKey(t, "Zco")
	x.publish(t, nt, admin, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(admin), Handle: "a"})
	nt.Befriend(t, member, admin)
	x.join(t, nt, admin, member, "m")
	forge := func(wire []byte) []byte {
		var w struct {
			Payload []byte `cbor:"payload"`
			Sig     []byte `cbor:"sig"`
		}
		if err := cbor.Unmarshal(wire, &w); err != nil {
			t.Fatal(err)
		}
		sig, err := identity.Sign(z.priv, identity.DomainOrgRecord, w.Payload)
		if err != nil {
			t.Fatal(err)
		}
		w.Sig = sig
		out, err := cbor.Marshal(&w)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	rv := forge(x.seal(t, consent.OrgRecord{Kind: consent.OrgRevoke, Subject: nt.ID(member)}))
	in := forge(x.seal(t, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(stranger), Handle: "s"}))
	if _, err := consent.ParseOrgRecord(rv); err == nil {
		t.Fatal("the forgery parses: the test shows nothing")
	}
	for _, to := range []int{admin, member} {
		orgExchange(t, nt, stranger, to, 'p', [][]byte{rv, in})
		nt.WaitFor(10*time.Second, func() bool { return counter(nt, to, "parley_org_records_refused_total", "forged") >= 2 },
			"node %d to count the forgeries", to)
		o := nt.Node(to).Org()
		if !o.IsMember(nt.ID(member)) || o.IsMember(nt.ID(stranger)) {
			t.Fatalf("node %d after the forgeries: member %v, stranger %v", to, o.IsMember(nt.ID(member)), o.IsMember(nt.ID(stranger)))
		}
	}
	// The member's own membership, renewed for a far future or for the
	// past only, pushed by the admin's node: refused, the live one stays.
	mine := nt.Node(member).Org().Mine()
	for _, w := range [][]byte{
		x.sealFor(t, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(member), Handle: "m"}, time.Now().AddDate(50, 0, 0), time.Now().AddDate(51, 0, 0)),
		x.sealFor(t, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(member), Handle: "m"}, time.Now().AddDate(-2, 0, 0), time.Now().AddDate(-1, 0, 0)),
	} {
		orgExchange(t, nt, admin, member, 'p', [][]byte{w})
	}
	if got := nt.Node(member).Org().Mine(); got == nil || got.Seq != mine.Seq {
		t.Fatalf("after out-of-time renewals the member's membership is %v, want the live one", got)
	}
}

// introWith makes node i answer introductions with recs, whatever its
// organisation says since (a modified node).
func introWith(nt *nodetest.Net, i int, recs ...[]byte) {
	nt.Node(i).Host().SetStreamHandler(org.ProtocolID, func(st network.Stream) {
		defer st.Close()
		b, err := frame.Read(st, 1<<20)
		if err != nil || len(b) == 0 {
			_ = st.Reset()
			return
		}
		op, out := byte('a'), [][]byte(nil)
		if b[0] == 'i' {
			op, out = 'r', recs
		}
		body, _ := consent.EncodeOrgRecords(out)
		_ = frame.Write(st, append([]byte{op}, body...))
		_ = st.CloseWrite()
	})
}

// The trust back (the requester's organisation's trust in this node's) is
// read from the requester's introduction alone: a member whose
// organisation withdrew its trust shows the old trust record and is
// approved all the same, with the old trust's scopes.
func TestOrgHostileWithdrawnTrustBackReplayedByRequester(t *testing.T) {
	t.Skip("finding (low): decide takes the requester's organisation's trust in this one from the requester's introduction only; X's untrust (or narrower trust) of Y never reaches Y, so X's member replays X's old trust until it ends (suggested: Y's nodes keep X's trust/untrust records whose subject is Y, pushed by X's publisher to its contacts and forwarded as revocations are, and decide takes the newest of the held and the shown)")
	nt, x, _ := trustingPair(t)
	const x1, y1 = 0, 1
	old := x.seal(t, consent.OrgRecord{Kind: consent.OrgTrust, Subject: nt.Node(y1).Org().Mine().Org, Scopes: []string{consent.ScopeAsk}})
	cert := x.seal(t, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(x1), Handle: "xavier"})
	x.publish(t, nt, x1, consent.OrgRecord{Kind: consent.OrgUntrust, Subject: nt.Node(y1).Org().Mine().Org})
	introWith(nt, x1, cert, old)
	if s := decided(t, nt, x1, y1, "not_trusted"); s != consent.StatePendingIn {
		t.Fatalf("X withdrew its trust in Y, its member replays the old one: the request is %q at Y's member, want pending-in", s)
	}
}
