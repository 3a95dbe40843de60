package identity

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/internal/atomicfile"
)

// KeyFile is the name of the key file inside a node's home.
const KeyFile = "identity.key"

// LoadOrCreate reads the Ed25519 key at path, or creates one (mode 0600) if
// the file does not exist. The parent folder must exist. A key file readable
// or writable by group or others is refused with ErrKeyPermissions; an
// existing file is never rewritten.
func LoadOrCreate(path string) (crypto.PrivKey, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return create(path)
	case err != nil:
		return nil, fmt.Errorf("identity: read key %s: %w", path, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o (run: chmod 600 %s)", ErrKeyPermissions, path, st.Mode().Perm(), path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("identity: read key %s: %w", path, err)
	}
	priv, err := crypto.UnmarshalPrivateKey(raw)
	if err != nil {
		return nil, fmt.Errorf("identity: key %s is damaged (%v); move it away to make a new identity", path, err)
	}
	if priv.Type() != crypto.Ed25519 {
		return nil, fmt.Errorf("%w: %s", ErrKeyType, path)
	}
	return priv, nil
}

// create makes a new key and writes it atomically: a crash leaves either no
// key file or a whole one.
func create(path string) (crypto.PrivKey, error) {
	priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("identity: generate key: %w", err)
	}
	raw, err := crypto.MarshalPrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("identity: encode key: %w", err)
	}
	// Created whole or not at all; never replacing a key, so that two
	// processes racing to create it cannot both win: the loser reads the
	// winner's key.
	if err := atomicfile.CreateNew(path, raw, 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return LoadOrCreate(path)
		}
		return nil, fmt.Errorf("identity: write key: %w", err)
	}
	return priv, nil
}

// PeerID returns the peer ID of a private key.
func PeerID(priv crypto.PrivKey) (peer.ID, error) {
	id, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		return "", fmt.Errorf("identity: peer id: %w", err)
	}
	return id, nil
}
