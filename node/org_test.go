package node_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/agents"
	"github.com/parley-mesh/parley/internal/frame"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/org"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

type orgKey struct {
	priv crypto.PrivKey
	id   peer.ID
	name string
}

func newOrgKey(t *testing.T, name string) orgKey {
	t.Helper()
	priv, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := identity.PeerID(priv)
	if err != nil {
		t.Fatal(err)
	}
	return orgKey{priv, id, name}
}

// orgSeq makes each seal's seq unique; atomic, as tests that seal run in
// parallel.
var orgSeq atomic.Uint64

// seal signs r with the organisation's key, with the next seq and, for a
// membership or a trust, a day to live.
func (o orgKey) seal(t *testing.T, r consent.OrgRecord) []byte {
	t.Helper()
	r.Name, r.Seq = o.name, uint64(time.Now().UnixMilli())*1000+orgSeq.Add(1)
	if r.Kind == consent.OrgMember || r.Kind == consent.OrgTrust {
		r.NotBefore, r.NotAfter = time.Now().Add(-time.Minute), time.Now().Add(24*time.Hour)
	}
	wire, err := consent.NewOrgRecord(o.priv, r)
	if err != nil {
		t.Fatal(err)
	}
	return wire
}

// publish signs r with the organisation's key and hands it to node i, as
// `parley org` does.
func (o orgKey) publish(t *testing.T, nt *nodetest.Net, i int, r consent.OrgRecord) int {
	t.Helper()
	wire := o.seal(t, r)
	_, n, err := nt.Node(i).Org().Publish(context.Background(), wire)
	if err != nil {
		t.Fatalf("node %d: publish %s: %v", i, r.Kind, err)
	}
	return n
}

func contactState(nt *nodetest.Net, i, j int) consent.State {
	c, ok := nt.Node(i).Contacts().Book().Get(nt.ID(j), time.Now())
	if !ok {
		return ""
	}
	return c.State
}

func request(t *testing.T, nt *nodetest.Net, from, to int) {
	t.Helper()
	if _, err := nt.Node(from).Contacts().Request(context.Background(), peer.AddrInfo{ID: nt.ID(to), Addrs: nt.Node(to).Host().Addrs()}, "org"); err != nil {
		t.Fatalf("node %d asks node %d: %v", from, to, err)
	}
}

// Members of two organisations that trust each other become contacts
// without approval, within the scopes both name; only when the trust is
// bilateral; a revoked member and a withdrawn trust cut those contacts at
// once.
func TestOrgTrust(t *testing.T) {
	nt := nodetest.Start(t, 4)
	const x1, y1, x2 = 1, 2, 3 // x1 runs organisation X, y1 Y; x2 is X's
	x, y := newOrgKey(t, "Xco"), newOrgKey(t, "Yco")
	nt.Befriend(t, x2, x1) // an organisation enrols its members' nodes through a contact
	x.publish(t, nt, x1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(x1), Handle: "xavier"})
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(y1), Handle: "yann"})
	if n := x.publish(t, nt, x1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(x2), Handle: "xena"}); n != 1 {
		t.Fatalf("the new member's certificate reached %d peers, want 1", n)
	}
	// The certificate a contact pushed waits for x2's user, who takes it.
	nt.WaitFor(10*time.Second, func() bool { return len(nt.Node(x2).Org().Offers()) == 1 }, "node %d to hold the offered membership", x2)
	if nt.Node(x2).Org().Mine() != nil {
		t.Fatal("a pushed membership was taken without the user")
	}
	if _, err := nt.Node(x2).Org().Accept(context.Background(), x.id); err != nil {
		t.Fatal(err)
	}
	if m := nt.Node(x2).Org().Mine(); m == nil || m.Org != x.id || len(nt.Node(x2).Org().Offers()) != 0 {
		t.Fatalf("after accepting: membership %v, %d offers left", m, len(nt.Node(x2).Org().Offers()))
	}

	// Y trusts X, X not yet Y: a request from X's member waits for the user.
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: x.id, Scopes: []string{consent.ScopeAsk, consent.ScopePresence}})
	request(t, nt, x1, y1)
	nt.WaitFor(15*time.Second, func() bool {
		return counter(nt, y1, "parley_org_auto_approvals_total", "not_trusted") >= 1
	}, "node %d to decide the request is not trusted both ways", y1)
	if s := contactState(nt, y1, x1); s != consent.StatePendingIn {
		t.Fatalf("one-way trust: contact is %q, want pending-in", s)
	}

	// X trusts Y as well (pushed to its member x2): the request is approved.
	if n := x.publish(t, nt, x1, consent.OrgRecord{Kind: consent.OrgTrust, Subject: y.id, Scopes: []string{consent.ScopeAsk, consent.ScopeInvite}}); n != 1 {
		t.Fatalf("the trust reached %d members, want 1", n)
	}
	request(t, nt, x1, y1)
	nt.WaitFor(20*time.Second, func() bool {
		return contactState(nt, x1, y1) == consent.StateActive && contactState(nt, y1, x1) == consent.StateActive
	}, "the trusted request to be approved without the user")
	c, _ := nt.Node(y1).Contacts().Book().Get(nt.ID(x1), time.Now())
	if c.Cert == nil || !slices.Equal(c.Scopes, []string{consent.ScopeAsk}) {
		t.Fatalf("certificate scopes %v, want the scopes both trusts name: [ask]", c.Scopes)
	}
	// `parley contact list` shows the scopes and the organisation.
	api := localapi.NewClient(node.SocketPath(nt.Home(y1)))
	defer api.Close()
	es, err := api.Contacts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(es, func(e localapi.ContactEntry) bool { return e.PeerID == nt.ID(x1).String() }); i < 0 ||
		!slices.Equal(es[i].Scopes, []string{consent.ScopeAsk}) || es[i].Org != x.id.String() {
		t.Fatalf("contact list: %+v, want scopes [ask] and org %s", es, x.id)
	}
	// Its certificate grants no invites: an invite is sent all the same,
	// and waits for the user of x1 instead of opening the room.
	ctx := context.Background()
	room, err := nt.Node(y1).Rooms().Create(ctx, "narrow", identity.HumanAgent)
	if err != nil {
		t.Fatal(err)
	}
	if !nt.Node(y1).Rooms().InviteWaits(nt.ID(x1)) {
		t.Fatal("an invite of a contact without the invite scope should wait")
	}
	if _, err := nt.Node(y1).Rooms().Invite(ctx, room, nt.ID(x1), identity.HumanAgent); err != nil {
		t.Fatalf("invite of a contact without the invite scope: %v", err)
	}
	if w := nt.Node(x1).Rooms().Invites(); len(w) != 1 || w[0].Room != room {
		t.Fatalf("x1's waiting invites: %+v", w)
	}
	if _, err := nt.Node(x1).Rooms().Get(room); err == nil {
		t.Fatal("the invite opened the room without x1's user")
	}

	// X's second member is approved too, then X revokes it.
	nt.WaitFor(10*time.Second, func() bool { return len(nt.Node(x2).Org().Trusts()) == 1 }, "node %d to hold X's trust", x2)
	request(t, nt, x2, y1)
	nt.WaitFor(20*time.Second, func() bool { return contactState(nt, y1, x2) == consent.StateActive },
		"node %d's request to be approved", x2)
	x.publish(t, nt, x1, consent.OrgRecord{Kind: consent.OrgRevoke, Subject: nt.ID(x2)})
	nt.WaitFor(20*time.Second, func() bool { return contactState(nt, y1, x2) == consent.StateRevoked },
		"the revoked member's contact to be revoked")
	if s := contactState(nt, y1, x1); s != consent.StateActive {
		t.Fatalf("the other member's contact is %q", s)
	}

	// Y withdraws its trust: X's member's contact is revoked on both sides.
	y.publish(t, nt, y1, consent.OrgRecord{Kind: consent.OrgUntrust, Subject: x.id})
	nt.WaitFor(20*time.Second, func() bool {
		return contactState(nt, y1, x1) == consent.StateRevoked && contactState(nt, x1, y1) == consent.StateRevoked
	}, "the contact made through the withdrawn trust to be revoked")
	// Nobody denied X's member anything: it may ask again at once (and
	// its request, no longer trusted, waits for the user).
	request(t, nt, x1, y1)
	nt.WaitFor(15*time.Second, func() bool { return contactState(nt, y1, x1) == consent.StatePendingIn },
		"node %d to hold node %d's new request", y1, x1)

	// Each organisation decision is in the audit log of the node that
	// took it, and the log verifies.
	for _, w := range []struct {
		node   int
		action string
	}{{x1, "org.add " + nt.ID(x2).String()}, {y1, "org.trust " + x.id.String()}, {x1, "org.trust " + y.id.String()},
		{x1, "org.remove " + nt.ID(x2).String()}, {y1, "org.untrust " + x.id.String()}} {
		if got := strings.Join(auditActions(t, nt, w.node), "\n"); !strings.Contains(got, w.action) {
			t.Fatalf("node %d's audit log lacks %q:\n%s", w.node, w.action, got)
		}
	}
}

// TestOrgPushedMembershipWaitsForTheUser: a contact pushes a node that is
// in no organisation a membership of an organisation the contact made up,
// with that organisation's trust in a second one it also made up, whose
// member (a stranger) then asks to be a contact. The membership waits for
// the user: the node is in no organisation, the stranger's request waits
// for the user too, and more offers than MaxOffers are refused. Before,
// the pushed membership was taken at once and the stranger was approved
// without the user, with the invite scope.
func TestOrgPushedMembershipWaitsForTheUser(t *testing.T) {
	nt := nodetest.Start(t, 3)
	nt.ConnectAll()
	const victim, contact, stranger = 0, 1, 2
	nt.Befriend(t, contact, victim)
	o, z := newOrgKey(t, "Made up"), newOrgKey(t, "Puppet")
	push := func(recs ...[]byte) {
		t.Helper()
		s, err := nt.Node(contact).Host().NewStream(context.Background(), nt.ID(victim), org.ProtocolID)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		body, err := consent.EncodeOrgRecords(recs)
		if err != nil {
			t.Fatal(err)
		}
		if err := frame.Write(s, append([]byte{'p'}, body...)); err != nil {
			t.Fatal(err)
		}
		_ = s.CloseWrite()
		if _, err := frame.Read(s, 1<<20); err != nil { // the answer: the push was handled
			t.Fatal(err)
		}
	}
	scopes := []string{consent.ScopeAsk, consent.ScopeInvite, consent.ScopePresence}
	push(o.seal(t, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(victim), Handle: "victim"}),
		o.seal(t, consent.OrgRecord{Kind: consent.OrgTrust, Subject: z.id, Scopes: scopes}))
	offers := nt.Node(victim).Org().Offers()
	if len(offers) != 1 || offers[0].Member.Org != o.id || offers[0].From != nt.ID(contact) || len(offers[0].Trusts) != 1 {
		t.Fatalf("offers %+v, want the pushed membership of %s with its trust", offers, o.id)
	}
	if m := nt.Node(victim).Org().Mine(); m != nil {
		t.Fatalf("the node took a pushed membership of %s without its user", m.Org)
	}
	// A trust pushed on its own is about an organisation the node is not in.
	push(o.seal(t, consent.OrgRecord{Kind: consent.OrgTrust, Subject: z.id, Scopes: scopes}))
	if n := len(nt.Node(victim).Org().Trusts()); n != 0 {
		t.Fatalf("the node holds %d trusts of an organisation it is not in", n)
	}

	// The stranger shows a membership of Z, which trusts O back.
	z.publish(t, nt, stranger, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(stranger), Handle: "anyone"})
	z.publish(t, nt, stranger, consent.OrgRecord{Kind: consent.OrgTrust, Subject: o.id, Scopes: scopes})
	request(t, nt, stranger, victim)
	nt.WaitFor(15*time.Second, func() bool {
		return counter(nt, victim, "parley_org_auto_approvals_total", "not_trusted") >= 1
	}, "the node to decide the stranger's request")
	if s := contactState(nt, victim, stranger); s != consent.StatePendingIn {
		t.Fatalf("the stranger's request is %q, want it waiting for the user (pending-in)", s)
	}
	if nt.Node(victim).Contacts().TrustInvite(nt.ID(stranger)) {
		t.Fatal("the node trusts the stranger's invites")
	}

	// Offers are bounded: the contact pushes more organisations than fit.
	for k := range org.MaxOffers {
		extra := newOrgKey(t, fmt.Sprintf("extra %d", k))
		push(extra.seal(t, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(victim), Handle: "victim"}))
	}
	if n := len(nt.Node(victim).Org().Offers()); n != org.MaxOffers {
		t.Fatalf("%d offers held, want %d", n, org.MaxOffers)
	}
	if got := counter(nt, victim, "parley_org_records_refused_total", "offers_full"); got != 1 {
		t.Fatalf("offers refused as too many: %v, want 1", got)
	}

	// The user declines O: it is gone, and said in the audit log.
	if err := nt.Node(victim).Org().Decline(o.id); err != nil {
		t.Fatal(err)
	}
	for _, of := range nt.Node(victim).Org().Offers() {
		if of.Member.Org == o.id {
			t.Fatal("a declined membership still waits")
		}
	}
	if err := nt.Node(victim).Org().Decline(o.id); !errors.Is(err, org.ErrNoOffer) {
		t.Fatalf("declining twice: %v", err)
	}
	got := strings.Join(auditActions(t, nt, victim), "\n")
	for _, want := range []string{"org.offered " + nt.ID(victim).String(), "org.decline " + nt.ID(victim).String()} {
		if !strings.Contains(got, want) {
			t.Fatalf("the audit log lacks %q:\n%s", want, got)
		}
	}
}

// A record signed by another key, or about another organisation, is
// refused and counted.
func TestOrgRecordsRefused(t *testing.T) {
	nt := nodetest.Start(t, 2)
	x, y := newOrgKey(t, "Xco"), newOrgKey(t, "Yco")
	x.publish(t, nt, 1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(1), Handle: "me"})
	wire, err := consent.NewOrgRecord(y.priv, consent.OrgRecord{Name: "Yco", Kind: consent.OrgTrust, Subject: x.id,
		Scopes: []string{"ask"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), Seq: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := nt.Node(1).Org().Publish(context.Background(), wire); err == nil {
		t.Fatal("another organisation's record was taken")
	}
	if _, _, err := nt.Node(1).Org().Publish(context.Background(), append(wire[:len(wire)-1:len(wire)-1], wire[len(wire)-1]^1)); err == nil {
		t.Fatal("a damaged record was taken")
	}
	if got := counter(nt, 1, "parley_org_records_refused_total", "other_org") + counter(nt, 1, "parley_org_records_refused_total", "malformed"); got < 2 {
		t.Fatalf("refusals counted: %v", got)
	}
}

// orgExchange opens org.ProtocolID from node from to node to, sends op
// with recs, and returns the answer's op (0 when the stream was reset).
func orgExchange(t *testing.T, nt *nodetest.Net, from, to int, op byte, recs [][]byte) byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := nt.Node(from).Host().NewStream(ctx, nt.ID(to), org.ProtocolID)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	body, err := consent.EncodeOrgRecords(recs)
	if err != nil {
		t.Fatal(err)
	}
	if err := frame.Write(st, append([]byte{op}, body...)); err != nil {
		return 0
	}
	_ = st.CloseWrite()
	ans, err := frame.Read(st, 1<<20)
	if err != nil || len(ans) == 0 {
		return 0
	}
	return ans[0]
}

// Records are signed by their organisation: one of this node's
// organisation is taken whoever pushes it (the node that publishes may be
// a contact no longer), another's is counted and dropped. Peers the node
// does not know share a small budget of pushes; its introduction (its
// membership and its organisation's trusts) goes to contacts and to a node
// it asked for contact, not to a stranger; a contact that pushes too fast
// is cut off.
func TestOrgProtocolAndStrangers(t *testing.T) {
	nt := nodetest.Start(t, 3)
	nt.ConnectAll()
	x, y := newOrgKey(t, "Xco"), newOrgKey(t, "Yco")
	x.publish(t, nt, 0, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(0), Handle: "me"})
	foreign := y.seal(t, consent.OrgRecord{Kind: consent.OrgTrust, Subject: x.id, Scopes: []string{consent.ScopeAsk}})

	// A stranger hands node 0 a trust its own organisation signed: taken.
	ours := x.seal(t, consent.OrgRecord{Kind: consent.OrgTrust, Subject: y.id, Scopes: []string{consent.ScopeAsk}})
	if op := orgExchange(t, nt, 1, 0, 'p', [][]byte{ours}); op != 'a' {
		t.Fatalf("a push of the organisation's own record was answered %q", op)
	}
	if ts := nt.Node(0).Org().Trusts(); len(ts) != 1 || ts[0].Subject != y.id {
		t.Fatalf("node 0's trusts after the push: %v", ts)
	}
	// Another organisation's: read, counted, dropped.
	if op := orgExchange(t, nt, 1, 0, 'p', [][]byte{foreign}); op != 'n' {
		t.Fatalf("a stranger's push of another organisation's record was answered %q, want 'n' (none taken)", op)
	}
	if got := counter(nt, 0, "parley_org_records_refused_total", "other_org"); got != 1 {
		t.Fatalf("other_org refusals %v, want 1", got)
	}
	before := counter(nt, 0, "parley_org_records_refused_total", "not_contact")
	if op := orgExchange(t, nt, 1, 0, 'i', nil); op != 0 {
		t.Fatalf("a stranger's ask for the introduction was answered %q", op)
	}
	if got := counter(nt, 0, "parley_org_records_refused_total", "not_contact"); got != before+1 {
		t.Fatalf("not_contact refusals %v → %v, want 1 more", before, got)
	}
	// Strangers share a budget: a flood is mostly cut off.
	read := 0
	for range 40 {
		if orgExchange(t, nt, 1, 0, 'p', [][]byte{foreign}) != 0 {
			read++
		}
	}
	if read > 12 {
		t.Fatalf("a stranger's 40 quick pushes: %d read", read)
	}

	// Node 0 asks node 1 to be a contact: node 1 may now read node 0's
	// introduction.
	request(t, nt, 0, 1)
	nodetest.WaitFor(t, 20*time.Second, func() bool { return orgExchange(t, nt, 1, 0, 'i', nil) == 'r' }, "the node asked for contact to get the introduction")

	// A contact's pushes are read, up to a burst, then cut off.
	nt.Befriend(t, 0, 2)
	acked, limited := 0, 0
	for range 100 {
		if orgExchange(t, nt, 2, 0, 'p', [][]byte{foreign}) != 0 {
			acked++
		} else {
			limited++
		}
	}
	if acked < 20 || limited < 50 {
		t.Fatalf("a contact's 100 quick pushes: %d answered, %d cut off", acked, limited)
	}
}

// counter reads a counter of node i with the given label value.
func counter(nt *nodetest.Net, i int, name, label string) float64 {
	mfs, err := nt.Node(i).Registry().Gather()
	if err != nil {
		return 0
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == label {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// A node's card shows its membership certificate: its contacts read the
// organisation next to its name. A forged certificate, one for another
// node, an expired or a revoked one is not shown, and each is counted.
func TestOrgMembershipOnCard(t *testing.T) {
	t.Parallel() // waits on cards handed over; sets no package knob
	nt := nodetest.Start(t, 3)
	nt.Befriend(t, 0, 1)
	x, y := newOrgKey(t, "Xco"), newOrgKey(t, "Yco")
	nt.WaitFor(30*time.Second, func() bool {
		_, ok := nt.Node(0).Names().CardSeq(nt.ID(1))
		return ok
	}, "node 0 to hold node 1's card, without a membership")
	if m := nt.Node(0).Names().Member(nt.ID(1)); m != nil {
		t.Fatalf("node 1's card shows %+v before it is a member", m)
	}
	x.publish(t, nt, 1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(1), Handle: "bob"})
	if in := nt.Node(1).Org().Mine(); in == nil {
		t.Fatal("node 1 holds no membership")
	}
	// Node 1's card changed: it hands the new one to node 0, which asked
	// for its card when they connected and would not ask again for
	// names.RefetchAfter (10 minutes).
	nt.WaitFor(30*time.Second, func() bool {
		m := nt.Node(0).Names().Member(nt.ID(1))
		return m != nil && m.Org == x.id && m.Name == "Xco"
	}, "node 0 to read node 1's membership on its card")

	now := time.Now()
	seal := func(key orgKey, kind consent.OrgKind, subj peer.ID, from, until time.Time, seq uint64) []byte {
		t.Helper()
		w, err := consent.NewOrgRecord(key.priv, consent.OrgRecord{Name: key.name, Kind: kind, Subject: subj, Handle: "h",
			NotBefore: from, NotAfter: until, Seq: seq})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	good := seal(x, consent.OrgMember, nt.ID(2), now.Add(-time.Minute), now.Add(time.Hour), 1)
	forged := append([]byte(nil), good...)
	forged[len(forged)-1] ^= 1
	o := nt.Node(0).Org()
	if _, err := o.CheckCard(nt.ID(2), good); err != nil {
		t.Fatalf("a good certificate: %v", err)
	}
	for _, tc := range []struct {
		name, reason string
		wire         []byte
	}{
		{"forged", "forged", forged},
		{"another node's", "other_peer", seal(y, consent.OrgMember, nt.ID(1), now.Add(-time.Minute), now.Add(time.Hour), 1)},
		{"expired", "expired", seal(y, consent.OrgMember, nt.ID(2), now.Add(-2*time.Hour), now.Add(-time.Hour), 1)},
		{"not a membership", "malformed", seal(y, consent.OrgRevoke, nt.ID(2), time.Time{}, time.Time{}, 2)},
	} {
		before := counter(nt, 0, "parley_org_records_refused_total", tc.reason)
		if _, err := o.CheckCard(nt.ID(2), tc.wire); err == nil {
			t.Errorf("%s certificate shown", tc.name)
		}
		if got := counter(nt, 0, "parley_org_records_refused_total", tc.reason); got != before+1 {
			t.Errorf("%s certificate: %s refusals %v → %v", tc.name, tc.reason, before, got)
		}
	}
	// Node 1 is revoked by its organisation: node 0, a member of it now
	// too, holds the revocation and no longer shows node 1's certificate.
	card := nt.Node(1).Org().Mine()
	if _, err := o.CheckCard(nt.ID(1), card.Wire); err != nil {
		t.Fatalf("node 1's certificate before its revocation: %v", err)
	}
	x.publish(t, nt, 0, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(0), Handle: "alice"})
	x.publish(t, nt, 0, consent.OrgRecord{Kind: consent.OrgRevoke, Subject: nt.ID(1)})
	if _, err := o.CheckCard(nt.ID(1), card.Wire); err == nil {
		t.Fatal("a revoked member's certificate is shown")
	}
	if got := counter(nt, 0, "parley_org_records_refused_total", "revoked"); got < 1 {
		t.Fatalf("revoked refusals: %v", got)
	}
}

// An agent card in the DHT carries its node's membership certificate: a
// node that finds the agent reads the organisation, checked.
func TestOrgMembershipOnAgentCard(t *testing.T) {
	nt := nodetest.Start(t, 3)
	nt.WaitRouting()
	x := newOrgKey(t, "Xco")
	x.publish(t, nt, 1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(1), Handle: "bob"})
	ctx := context.Background()
	if _, err := nt.Node(1).Agents().Register(ctx, agents.RegisterRequest{Name: "coder", Capabilities: []string{"golang"}, TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	var member []byte
	nt.WaitFor(30*time.Second, func() bool {
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		cs, err := nt.Node(0).Agents().Find(fctx, "cap:golang")
		for _, c := range cs {
			if err == nil && c.PeerID == nt.ID(1).String() && c.Agent == "coder" {
				member = c.Member
				return len(member) > 0
			}
		}
		return false
	}, "node 0 to find node 1's agent with its certificate")
	r, err := nt.Node(0).Org().CheckCard(nt.ID(1), member)
	if err != nil || r.Org != x.id || r.Name != "Xco" {
		t.Fatalf("the agent card's certificate: %+v, %v", r, err)
	}
}

// A peer asking to be a contact shows its card while it asks: the user
// reads its organisation before deciding (the card is held in memory only,
// see internal/names).
func TestRequesterCardShowsWhileAsking(t *testing.T) {
	nt := nodetest.Start(t, 2)
	nt.ConnectAll()
	x := newOrgKey(t, "Xco")
	x.publish(t, nt, 1, consent.OrgRecord{Kind: consent.OrgMember, Subject: nt.ID(1), Handle: "bob"})
	request(t, nt, 1, 0)
	nt.WaitFor(30*time.Second, func() bool {
		m := nt.Node(0).Names().Member(nt.ID(1))
		return m != nil && m.Org == x.id
	}, "node 0 to read the requester's organisation on its card")
	if s := contactState(nt, 0, 1); s != consent.StatePendingIn {
		t.Fatalf("node 1's request is %q on node 0, want pending-in", s)
	}
}
