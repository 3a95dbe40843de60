package consent

import (
	"fmt"
	"slices"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
)

// OrgKind is the kind of an organisation record.
type OrgKind string

// Organisation records, each signed by the organisation's key (kept apart
// from any node key) under identity.DomainOrgRecord.
const (
	// OrgMember certifies that the node Subject is a member, with Handle,
	// from NotBefore until NotAfter.
	OrgMember OrgKind = "member"
	// OrgRevoke revokes the membership of Subject (every certificate of a
	// lower Seq).
	OrgRevoke OrgKind = "revoke"
	// OrgTrust says the organisation trusts the organisation Subject: its
	// live members may become contacts of this organisation's members
	// without approval one by one, within Scopes, until NotAfter, as long
	// as Subject trusts this organisation too.
	OrgTrust OrgKind = "trust"
	// OrgUntrust withdraws an OrgTrust of a lower Seq.
	OrgUntrust OrgKind = "untrust"
)

// Limits of organisation records.
const (
	MaxOrgName    = 64
	MaxOrgRecord  = 4096
	MaxOrgRecords = 256 // in one push
)

// OrgRecord is a decoded, verified organisation record.
type OrgRecord struct {
	Org       peer.ID // the organisation: the peer ID of its key
	Name      string  // the organisation's name
	Kind      OrgKind
	Subject   peer.ID // the member node, or the trusted organisation
	Handle    string  // member: the member's display name
	Scopes    []string
	NotBefore time.Time
	NotAfter  time.Time
	Seq       uint64 // grows with every record of one (Org, Group(), Subject)
	Wire      []byte // the sealed record
}

type orgPayload struct {
	Org       []byte   `cbor:"org"`
	Name      string   `cbor:"name"`
	Kind      string   `cbor:"kind"`
	Subject   []byte   `cbor:"subject"`
	Handle    string   `cbor:"handle,omitempty"`
	Scopes    []string `cbor:"scopes,omitempty"`
	NotBefore int64    `cbor:"not_before"`
	NotAfter  int64    `cbor:"not_after"`
	Seq       uint64   `cbor:"seq"`
}

var orgListMode = func() cbor.DecMode {
	m, err := cbor.DecOptions{
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		IndefLength:      cbor.IndefLengthForbidden,
		TagsMd:           cbor.TagsForbidden,
		MaxNestedLevels:  4,
		MaxArrayElements: MaxOrgRecords,
	}.DecMode()
	if err != nil {
		panic("consent: cbor decoder: " + err.Error())
	}
	return m
}()

// Group is what a record replaces: a member certificate and a revocation
// of one subject replace each other, and so do a trust and an untrust.
func (r *OrgRecord) Group() byte {
	if r.Kind == OrgMember || r.Kind == OrgRevoke {
		return 'm'
	}
	return 't'
}

// LiveAt reports whether a member or trust record holds at now.
func (r *OrgRecord) LiveAt(now time.Time) bool {
	return (r.Kind == OrgMember || r.Kind == OrgTrust) && !now.Before(r.NotBefore) && now.Before(r.NotAfter)
}

// NewOrgRecord builds and signs a record with the organisation's key.
// Seq should grow (the time in milliseconds does).
func NewOrgRecord(orgKey crypto.PrivKey, r OrgRecord) ([]byte, error) {
	org, err := identity.PeerID(orgKey)
	if err != nil {
		return nil, fmt.Errorf("consent: org record: %w", err)
	}
	p := orgPayload{
		Org: []byte(org), Name: r.Name, Kind: string(r.Kind), Subject: []byte(r.Subject), Handle: r.Handle,
		Scopes:    slices.Compact(slices.Sorted(slices.Values(r.Scopes))),
		NotBefore: r.NotBefore.UnixMilli(), NotAfter: r.NotAfter.UnixMilli(), Seq: r.Seq,
	}
	if len(p.Scopes) == 0 {
		p.Scopes = nil
	}
	if _, err := p.check(); err != nil {
		return nil, fmt.Errorf("consent: org record: %w", err)
	}
	payload, err := encMode.Marshal(&p)
	if err != nil {
		return nil, fmt.Errorf("consent: org record: %w", err)
	}
	sig, err := identity.Sign(orgKey, identity.DomainOrgRecord, payload)
	if err != nil {
		return nil, err
	}
	return encMode.Marshal(&signedWire{Payload: payload, Sig: sig})
}

// ParseOrgRecord decodes a sealed organisation record and checks its form
// and the organisation's signature. It does not check validity in time.
func ParseOrgRecord(b []byte) (*OrgRecord, error) {
	if len(b) > MaxOrgRecord {
		return nil, fmt.Errorf("consent: org record: %w: %d bytes", ErrMalformed, len(b))
	}
	w, err := decodeSigned(b)
	if err != nil {
		return nil, fmt.Errorf("consent: org record: %w", err)
	}
	var p orgPayload
	if err := decodeCanonical(w.Payload, &p); err != nil {
		return nil, fmt.Errorf("consent: org record payload: %w", err)
	}
	r, err := p.check()
	if err != nil {
		return nil, fmt.Errorf("consent: org record: %w", err)
	}
	if err := identity.Verify(r.Org, identity.DomainOrgRecord, w.Payload, w.Sig); err != nil {
		return nil, fmt.Errorf("consent: org record: %w", err)
	}
	r.Wire = append([]byte(nil), b...)
	return r, nil
}

func (p *orgPayload) check() (*OrgRecord, error) {
	org, err := peerFromBytes("org", p.Org)
	if err != nil {
		return nil, err
	}
	subj, err := peerFromBytes("subject", p.Subject)
	if err != nil {
		return nil, err
	}
	if org == subj {
		return nil, fmt.Errorf("%w: an organisation record about the organisation itself", ErrMalformed)
	}
	if p.Name == "" || len(p.Name) > MaxOrgName || !printable(p.Name) {
		return nil, fmt.Errorf("%w: organisation name must be 1 to %d printable characters", ErrMalformed, MaxOrgName)
	}
	if len(p.Handle) > MaxHandle || !printable(p.Handle) {
		return nil, fmt.Errorf("%w: handle", ErrMalformed)
	}
	kind := OrgKind(p.Kind)
	switch kind {
	case OrgMember, OrgTrust:
		if p.NotBefore < 0 || p.NotAfter <= p.NotBefore {
			return nil, fmt.Errorf("%w: validity %d..%d", ErrMalformed, p.NotBefore, p.NotAfter)
		}
	case OrgRevoke, OrgUntrust:
	default:
		return nil, fmt.Errorf("%w: org record kind %q", ErrMalformed, p.Kind)
	}
	if kind == OrgTrust && len(p.Scopes) == 0 {
		return nil, fmt.Errorf("%w: a trust names no scope", ErrMalformed)
	}
	if len(p.Scopes) > MaxScopes {
		return nil, fmt.Errorf("%w: %d scopes", ErrMalformed, len(p.Scopes))
	}
	for i, s := range p.Scopes {
		if err := checkScope(s); err != nil {
			return nil, err
		}
		if i > 0 && p.Scopes[i-1] >= s {
			return nil, fmt.Errorf("%w: scopes not sorted and unique", ErrMalformed)
		}
	}
	return &OrgRecord{
		Org: org, Name: p.Name, Kind: kind, Subject: subj, Handle: p.Handle, Scopes: p.Scopes,
		NotBefore: time.UnixMilli(p.NotBefore), NotAfter: time.UnixMilli(p.NotAfter), Seq: p.Seq,
	}, nil
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// EncodeOrgRecords encodes records for one push.
func EncodeOrgRecords(recs [][]byte) ([]byte, error) {
	if len(recs) > MaxOrgRecords {
		return nil, fmt.Errorf("consent: %d org records in one push, at most %d", len(recs), MaxOrgRecords)
	}
	if recs == nil {
		recs = [][]byte{}
	}
	return encMode.Marshal(recs)
}

// DecodeOrgRecords decodes one push; each record is parsed and verified.
// Records that fail are returned as errors beside the good ones.
func DecodeOrgRecords(b []byte) ([]*OrgRecord, []error, error) {
	var raw [][]byte
	if err := orgListMode.Unmarshal(b, &raw); err != nil {
		return nil, nil, fmt.Errorf("consent: org records: %w: %v", ErrMalformed, err)
	}
	if len(raw) > MaxOrgRecords {
		return nil, nil, fmt.Errorf("consent: org records: %w: %d records", ErrMalformed, len(raw))
	}
	var out []*OrgRecord
	var errs []error
	for _, r := range raw {
		rec, err := ParseOrgRecord(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, rec)
	}
	return out, errs, nil
}
