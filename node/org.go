package node

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/names"
	"github.com/parley-mesh/parley/internal/org"
)

// Org is the node's organisation service (nil before Start).
func (n *Node) Org() *org.Service { return n.org }

func (n *Node) newOrg() error {
	o, err := org.New(org.Config{
		Host:     n.host,
		Store:    n.db,
		Contacts: orgContacts{n},
		FindPeer: n.findPeer,
		Logger:   n.log,
		Registry: n.reg,
		Audit:    n.Audit,
	})
	if err != nil {
		return err
	}
	n.org = o
	return nil
}

// autoApprove decides a contact request by organisation trust.
func (n *Node) autoApprove(ctx context.Context, p peer.ID) ([]string, time.Time, bool) {
	if n.org == nil {
		return nil, time.Time{}, false
	}
	d := n.org.AutoApprove(ctx, p)
	if !d.OK {
		return nil, time.Time{}, false
	}
	if err := n.org.Tag(p, d.Org); err != nil {
		n.log.Warn("tagging a contact made through organisation trust failed", "remote", p.String(), "err", err)
		return nil, time.Time{}, false
	}
	return d.Scopes, d.Until, true
}

// untagOrgContact forgets that the contact with p was made through
// organisation trust: the user decided about it since.
func (n *Node) untagOrgContact(p peer.ID) {
	if n.org == nil {
		return
	}
	if err := n.org.Untag(p); err != nil {
		n.log.Warn("dropping a contact's organisation tag failed", "remote", p.String(), "err", err)
	}
}

// contactsAPI is the local API's contacts, with the organisation each
// contact was made through and the name each reads by.
func (n *Node) contactsAPI() contactsAPI {
	return contactsAPI{cs: n.contacts, org: func(p peer.ID) peer.ID {
		if n.org == nil {
			return ""
		}
		return n.org.TaggedWith(p)
	}, name: func(p peer.ID) string {
		if n.names == nil {
			return names.Short(p)
		}
		return n.names.Name(p)
	}, fresh: func() {
		if n.names != nil {
			n.names.RefreshLists()
		}
	}, revoked: n.kickRelaySweep, resolve: func(name string) (peer.ID, error) {
		if n.names == nil {
			return "", names.ErrUnknown
		}
		return n.names.Resolve(name)
	}}
}

type orgContacts struct{ n *Node }

func (c orgContacts) ActivePeers() []peer.ID { return c.n.activeContacts() }

func (c orgContacts) Active(p peer.ID) bool {
	ct, ok := c.n.contacts.Book().Get(p, time.Now())
	return ok && ct.State == consent.StateActive
}

func (c orgContacts) Requested(p peer.ID) bool {
	ct, ok := c.n.contacts.Book().Get(p, time.Now())
	return ok && ct.State == consent.StatePendingOut
}

func (c orgContacts) Granted(p peer.ID) ([]string, time.Time, bool) {
	ct, ok := c.n.contacts.Book().Get(p, time.Now())
	if !ok || ct.State != consent.StateActive {
		return nil, time.Time{}, false
	}
	return ct.Scopes, ct.Expires, true
}

func (c orgContacts) Revoke(ctx context.Context, p peer.ID) error {
	_, err := c.n.contacts.RevokeBy(ctx, p.String(), "org")
	return err
}

// orgAPI serves the organisation endpoints of the local API.
type orgAPI struct{ n *Node }

func (a orgAPI) Publish(ctx context.Context, req localapi.OrgRecordRequest) (localapi.OrgRecordResult, error) {
	r, delivered, err := a.n.org.Publish(ctx, req.Record)
	var stale *org.StaleError
	switch {
	case err == nil:
	case errors.As(err, &stale):
		e := localapi.Errorf(http.StatusConflict, localapi.CodeStale, "%v", err)
		e.Seq = stale.Held
		return localapi.OrgRecordResult{}, e
	case errors.Is(err, consent.ErrMalformed), errors.Is(err, org.ErrOtherOrg), errors.Is(err, org.ErrNotLive),
		errors.Is(err, org.ErrTooMany), errors.Is(err, identity.ErrBadSignature):
		return localapi.OrgRecordResult{}, localapi.Errorf(http.StatusBadRequest, "bad_record", "%v", err)
	default:
		// The node's own failure (a store that refuses writes): a 500.
		return localapi.OrgRecordResult{}, err
	}
	return localapi.OrgRecordResult{Org: r.Org.String(), Kind: string(r.Kind), Subject: r.Subject.String(), Delivered: delivered}, nil
}

func (a orgAPI) Status(context.Context) localapi.OrgStatus {
	o := a.n.org
	st := localapi.OrgStatus{Members: []localapi.OrgMember{}, Trusts: []localapi.OrgTrust{}, Contacts: map[string]string{},
		Offers: []localapi.OrgOffer{}}
	for _, of := range o.Offers() {
		m := of.Member
		v := localapi.OrgOffer{Org: m.Org.String(), Name: m.Name, Handle: m.Handle, From: of.From.String(),
			Expires: m.NotAfter.UTC(), Trusts: []string{}}
		for _, t := range of.Trusts {
			if t.Kind == consent.OrgTrust {
				v.Trusts = append(v.Trusts, t.Subject.String())
			}
		}
		st.Offers = append(st.Offers, v)
	}
	mine := o.Mine()
	if mine == nil {
		return st
	}
	st.Org, st.Name, st.Handle, st.Expires = mine.Org.String(), mine.Name, mine.Handle, mine.NotAfter.UTC()
	for _, m := range o.Members() {
		st.Members = append(st.Members, localapi.OrgMember{PeerID: m.Subject.String(), Handle: m.Handle, Expires: m.NotAfter.UTC()})
	}
	for _, t := range o.Trusts() {
		st.Trusts = append(st.Trusts, localapi.OrgTrust{Org: t.Subject.String(), Name: t.Name, Trusted: t.Kind == consent.OrgTrust,
			Scopes: t.Scopes, Expires: t.NotAfter.UTC()})
	}
	for _, c := range a.n.contacts.Book().List(time.Now()) {
		if via := o.TaggedWith(c.Peer); via != "" {
			st.Contacts[c.Peer.String()] = via.String()
		}
	}
	return st
}

func (a orgAPI) Accept(ctx context.Context, req localapi.OrgRequest) (localapi.OrgStatus, error) {
	org, err := peer.Decode(req.Org)
	if err != nil {
		return localapi.OrgStatus{}, localapi.Errorf(http.StatusBadRequest, "bad_org", "organisation key %q: %v", req.Org, err)
	}
	if _, err := a.n.org.Accept(ctx, org); err != nil {
		return localapi.OrgStatus{}, orgError(err)
	}
	return a.Status(ctx), nil
}

func (a orgAPI) Decline(ctx context.Context, req localapi.OrgRequest) (localapi.OrgStatus, error) {
	org, err := peer.Decode(req.Org)
	if err != nil {
		return localapi.OrgStatus{}, localapi.Errorf(http.StatusBadRequest, "bad_org", "organisation key %q: %v", req.Org, err)
	}
	if err := a.n.org.Decline(org); err != nil {
		return localapi.OrgStatus{}, orgError(err)
	}
	return a.Status(ctx), nil
}

func orgError(err error) error {
	switch {
	case errors.Is(err, org.ErrNoOffer):
		return localapi.Errorf(http.StatusNotFound, "no_offer", "%v", err)
	case errors.Is(err, org.ErrOtherOrg):
		return localapi.Errorf(http.StatusConflict, "other_org", "%v (this node is in an organisation already)", err)
	}
	return err
}
