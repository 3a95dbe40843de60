package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/atomicfile"
)

// OrgKey is an organisation's key, kept in a file of the user's choosing,
// apart from any node's key: it signs the organisation's records, which
// the command line hands to the local node.
type OrgKey struct {
	Name string
	ID   peer.ID // the organisation's key as a peer ID (ORGKEY)
	priv crypto.PrivKey
	// after: records are signed with a Seq above it (see After).
	after uint64
}

// After returns the key signing records with a Seq above seq, the Seq of
// a record a node holds: one signed on a machine whose clock was ahead
// holds a Seq from the future, and a record of a lower Seq is refused as
// stale.
func (k *OrgKey) After(seq uint64) *OrgKey {
	c := *k
	c.after = max(c.after, seq)
	return &c
}

type orgKeyFile struct {
	Name string `json:"name"`
	Key  []byte `json:"key"` // libp2p-marshalled private key
}

// CreateOrgKey writes a new organisation key named name to path (mode
// 0600). An existing file is never replaced.
func CreateOrgKey(path, name string) (*OrgKey, error) {
	if name == "" || len(name) > consent.MaxOrgName || strings.ContainsAny(name, "\x00\n\r\t") {
		return nil, fmt.Errorf("organisation name must be 1 to %d printable characters", consent.MaxOrgName)
	}
	priv, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		return nil, err
	}
	raw, err := crypto.MarshalPrivateKey(priv)
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(orgKeyFile{Name: name, Key: raw}, "", "  ")
	if err != nil {
		return nil, err
	}
	// Whole or absent after a crash: a partial file would be refused by
	// init (never overwritten) and unreadable by every other command.
	if err := atomicfile.CreateNew(path, append(b, '\n'), 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%s exists: an organisation key is never overwritten (choose another file)", path)
		}
		return nil, fmt.Errorf("cannot create %s: %v", path, err)
	}
	return LoadOrgKey(path)
}

// LoadOrgKey reads an organisation key file; one readable by others is
// refused.
func LoadOrgKey(path string) (*OrgKey, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no organisation key at %s (a path mistyped? `parley org init NAME --key %s` makes one): %w", path, path, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("organisation key: %v", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("organisation key %s is readable by others (mode %v): chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("organisation key: %v", err)
	}
	var kf orgKeyFile
	if err := json.Unmarshal(b, &kf); err != nil {
		return nil, fmt.Errorf("organisation key %s is not a Parley organisation key: %v", path, err)
	}
	priv, err := crypto.UnmarshalPrivateKey(kf.Key)
	if err != nil {
		return nil, fmt.Errorf("organisation key %s: %v", path, err)
	}
	id, err := identity.PeerID(priv)
	if err != nil {
		return nil, err
	}
	return &OrgKey{Name: kf.Name, ID: id, priv: priv}, nil
}

func (k *OrgKey) sign(r consent.OrgRecord) ([]byte, error) {
	r.Name = k.Name
	r.Seq = max(uint64(time.Now().UnixMicro()), k.after+1)
	return consent.NewOrgRecord(k.priv, r)
}

// Member signs a membership certificate for node p with handle, valid for
// validFor (zero: a year).
func (k *OrgKey) Member(p peer.ID, handle string, validFor time.Duration) ([]byte, error) {
	if validFor <= 0 {
		validFor = 365 * 24 * time.Hour
	}
	now := time.Now()
	return k.sign(consent.OrgRecord{Kind: consent.OrgMember, Subject: p, Handle: handle,
		NotBefore: now.Add(-5 * time.Minute), NotAfter: now.Add(validFor)})
}

// Revoke signs the revocation of node p's membership.
func (k *OrgKey) Revoke(p peer.ID) ([]byte, error) {
	return k.sign(consent.OrgRecord{Kind: consent.OrgRevoke, Subject: p})
}

// Trust signs the trust of organisation org within scopes (nil: every
// scope) for validFor (zero: a year).
func (k *OrgKey) Trust(org peer.ID, scopes []string, validFor time.Duration) ([]byte, error) {
	if len(scopes) == 0 {
		scopes = consent.DefaultScopes
	}
	if validFor <= 0 {
		validFor = 365 * 24 * time.Hour
	}
	now := time.Now()
	return k.sign(consent.OrgRecord{Kind: consent.OrgTrust, Subject: org, Scopes: scopes,
		NotBefore: now.Add(-5 * time.Minute), NotAfter: now.Add(validFor)})
}

// Untrust signs the withdrawal of the trust in organisation org.
func (k *OrgKey) Untrust(org peer.ID) ([]byte, error) {
	return k.sign(consent.OrgRecord{Kind: consent.OrgUntrust, Subject: org})
}
