package node

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/atomicfile"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/config"
	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// A backup is a zip archive of what a home needs to become the node again:
// its key, its config, its audit log and a consistent copy of its database.
// What the node makes again by itself (the recovery file, the dashboard's
// token and port, the log) is left out.
const (
	backupManifestName = "parley-backup.json"
	backupDataName     = "data.kv" // the database, as store.Backup writes it
	backupFormat       = 1

	maxBackupSmallFile = 16 << 20 // key, config, manifest, audit head
)

// backupManifest describes a backup.
type backupManifest struct {
	Format int       `json:"format"`
	Peer   string    `json:"peer"`
	Schema int       `json:"schema"`
	Made   time.Time `json:"made"`
	// Home is the folder of the node copied (a backup made before it
	// was recorded has none).
	Home string `json:"home,omitempty"`
	// Loopback says the node copied last ran with --loopback (reachable
	// from this machine only), so the restored one is started so too.
	Loopback bool `json:"loopback,omitempty"`
}

// Restored is what Restore made: the node, and when and from which home
// its copy was taken (Home empty for a backup that does not say).
type Restored struct {
	Peer peer.ID
	Made time.Time
	Home string
	// Loopback: the node copied last ran with --loopback, and the
	// restored home is marked so (LastRanLoopback).
	Loopback bool
}

// WriteBackup writes a backup of the running node to w: a zip archive of
// its key, config, audit log and a consistent copy of its database (as one
// read sees it; posts go on meanwhile). It holds the node's private key.
func (n *Node) WriteBackup(ctx context.Context, w io.Writer) error {
	if n.db == nil {
		return ErrClosed
	}
	zw := zip.NewWriter(w)
	man, err := json.Marshal(backupManifest{Format: backupFormat, Peer: n.id.String(), Schema: schema.Version, Made: time.Now().UTC(), Home: n.cfg.Home,
		Loopback: LastRanLoopback(n.cfg.Home)})
	if err != nil {
		return err
	}
	if err := zipFile(zw, backupManifestName, bytes.NewReader(man)); err != nil {
		return err
	}
	for _, name := range []string{KeyFileName, config.FileName} {
		f, err := os.Open(filepath.Join(n.cfg.Home, name))
		if errors.Is(err, fs.ErrNotExist) && name != KeyFileName {
			continue
		}
		if err != nil {
			return fmt.Errorf("node: backup: %w", err)
		}
		st, err := f.Stat()
		if err == nil && st.Size() > maxBackupSmallFile {
			err = fmt.Errorf("node: backup: %s is %d bytes, over the %d a backup takes", name, st.Size(), maxBackupSmallFile)
		}
		if err == nil {
			err = zipFile(zw, name, io.LimitReader(f, maxBackupSmallFile+1))
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	err = audit.Snapshot(n.cfg.Home, func(name string, size int64, r io.Reader) error {
		return zipFile(zw, name, r)
	})
	if err != nil {
		return fmt.Errorf("node: backup: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	fw, err := zw.Create(backupDataName)
	if err != nil {
		return fmt.Errorf("node: backup: %w", err)
	}
	if err := n.db.Backup(fw); err != nil {
		return fmt.Errorf("node: backup: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("node: backup: %w", err)
	}
	return nil
}

func zipFile(zw *zip.Writer, name string, r io.Reader) error {
	fw, err := zw.Create(name)
	if err != nil {
		return fmt.Errorf("node: backup: %w", err)
	}
	if _, err := io.Copy(fw, r); err != nil {
		return fmt.Errorf("node: backup %s: %w", name, err)
	}
	return nil
}

// restoreFree is the space free on a folder's disk (tests replace it).
var restoreFree = store.FreeBytes

// ErrBadBackup is returned by Restore for a file that is not a whole
// Parley backup.
var ErrBadBackup = errors.New("node: not a whole Parley backup")

// Restore makes home the node a backup (made by WriteBackup) holds: its
// key, config, audit log and database. home must be new: missing or an
// empty folder. The home is made beside it and renamed into place once
// whole, so a failed restore leaves nothing behind. It returns the node's
// peer ID, and when and from which home the copy was taken. The restored node is an older copy of that node: started, it
// learns its own later events from its rooms' members (see README, "When
// the node will not start").
func Restore(home, backup string) (Restored, error) {
	var man backupManifest
	id, err := restoreHome(home, backup, &man)
	if err != nil {
		return Restored{}, err
	}
	return Restored{Peer: id, Made: man.Made, Home: man.Home, Loopback: man.Loopback}, nil
}

// restoreHome is Restore; man is set to the backup's manifest.
func restoreHome(home, backup string, man *backupManifest) (peer.ID, error) {
	home = filepath.Clean(home)
	if err := newHome(home); err != nil {
		return "", err
	}
	if _, err := os.Stat(backup); err != nil {
		// Not a backup of any kind: say so plainly.
		return "", fmt.Errorf("node: restore: %w", err)
	}
	zr, err := zip.OpenReader(backup)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrBadBackup, backup, err)
	}
	defer zr.Close()
	files := map[string]*zip.File{}
	for _, f := range zr.File {
		switch f.Name {
		case backupManifestName, KeyFileName, config.FileName, audit.FileName, audit.HeadName, backupDataName:
		default:
			return "", fmt.Errorf("%w: %s holds %q, which no backup holds", ErrBadBackup, backup, f.Name)
		}
		if files[f.Name] != nil {
			return "", fmt.Errorf("%w: %s holds %q twice", ErrBadBackup, backup, f.Name)
		}
		files[f.Name] = f
	}
	for _, need := range []string{backupManifestName, KeyFileName, backupDataName} {
		if files[need] == nil {
			return "", fmt.Errorf("%w: %s holds no %s (cut short, or not made by `parley backup`)", ErrBadBackup, backup, need)
		}
	}
	raw, err := readZipped(files[backupManifestName], maxBackupSmallFile)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrBadBackup, backup, err)
	}
	if err := json.Unmarshal(raw, man); err != nil {
		return "", fmt.Errorf("%w: %s: its %s does not read: %v", ErrBadBackup, backup, backupManifestName, err)
	}
	switch {
	case man.Format != backupFormat:
		return "", fmt.Errorf("%w: %s is a backup of format %d, and this Parley reads format %d: restore it with the Parley that made it, or a newer one",
			ErrBadBackup, backup, man.Format, backupFormat)
	case man.Schema > schema.Version:
		return "", fmt.Errorf("%w: %s holds a database of schema %d, and this Parley reads schema %d: restore it with the Parley that made it, or a newer one",
			store.ErrNewerSchema, backup, man.Schema, schema.Version)
	}
	keyRaw, err := readZipped(files[KeyFileName], maxBackupSmallFile)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrBadBackup, backup, err)
	}
	priv, err := crypto.UnmarshalPrivateKey(keyRaw)
	if err != nil {
		return "", fmt.Errorf("%w: %s: its key does not read: %v", ErrBadBackup, backup, err)
	}
	id, err := identity.PeerID(priv)
	if err != nil {
		return "", err
	}
	if id.String() != man.Peer {
		return "", fmt.Errorf("%w: %s: its key is node %s, but it says it is node %s", ErrBadBackup, backup, id, man.Peer)
	}

	parent := filepath.Dir(home)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", fmt.Errorf("node: restore: %w", err)
	}
	// Before, a disk too small for the copy filled up under the database
	// (which may fault on a full disk) and left the half-made home; now
	// the restore is refused first.
	var size uint64
	for _, f := range files {
		size += f.UncompressedSize64
	}
	need := int64(min(size, math.MaxInt64/2))/4*5 + store.DefaultMinFree
	if free, err := restoreFree(parent); err == nil && free < need {
		return "", fmt.Errorf("node: restore: %s has %d MiB free, and this backup needs about %d MiB (its %d MiB and room to work): free space there, or restore into a home on another disk",
			parent, free>>20, need>>20, size>>20)
	}
	// A restore killed before its rename left its half-made home (a copy
	// of the key among it) under this name: nothing else will remove it.
	prefix := filepath.Base(home) + ".restoring-"
	if ents, err := os.ReadDir(parent); err == nil {
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
				os.RemoveAll(filepath.Join(parent, e.Name()))
			}
		}
	}
	tmp, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return "", fmt.Errorf("node: restore: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	data, err := files[backupDataName].Open()
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrBadBackup, backup, err)
	}
	err = store.Restore(filepath.Join(tmp, DataDirName), data, []byte(id))
	data.Close()
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrBadBackup, backup, err)
	}
	for _, name := range []string{config.FileName, audit.FileName, audit.HeadName, KeyFileName} {
		f := files[name]
		if f == nil {
			continue
		}
		limit := int64(maxBackupSmallFile)
		if name == audit.FileName {
			limit = math.MaxInt64 // as long as the log grew; copied, not held in memory
		}
		if err := unzipFile(f, filepath.Join(tmp, name), limit); err != nil {
			if errors.Is(err, errZipped) {
				return "", fmt.Errorf("%w: %s: %v", ErrBadBackup, backup, err)
			}
			return "", fmt.Errorf("node: restore: %w", err)
		}
	}
	if man.Loopback {
		// Marked as a node that last ran with --loopback, on ports the
		// system chooses (the copied node's may be in use): the hints
		// that start it say --loopback, where a plain `up` would listen
		// on every interface, announce itself over mDNS and ask the
		// router for a port.
		if err := os.WriteFile(filepath.Join(tmp, LoopbackPortsFileName), nil, 0o600); err != nil {
			return "", fmt.Errorf("node: restore: %w", err)
		}
	}
	// The home is made durable before it takes its name (its files, the
	// database's among them, and every folder's entries), so a power loss
	// after the rename leaves no home with files missing or empty.
	if err := syncTree(tmp); err != nil {
		return "", fmt.Errorf("node: restore: %w", err)
	}
	// An empty folder at home (checked above) gives way to the whole one.
	if err := os.Remove(home); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("node: restore: %w", err)
	}
	if err := os.Rename(tmp, home); err != nil {
		return "", fmt.Errorf("node: restore: %w", err)
	}
	done = true
	if err := atomicfile.SyncDir(parent); err != nil {
		return id, fmt.Errorf("node: restore: %w", err)
	}
	return id, nil
}

// syncTree syncs every file and folder under root (root too).
func syncTree(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return atomicfile.SyncDir(path)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
}

// newHome returns nil if home can take a restored node: it does not exist,
// or it is an empty folder that is safe to use.
func newHome(home string) error {
	st, err := os.Lstat(home)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("node: restore: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("node: restore: %s is not a folder: restore into a new home (a path that does not exist yet)", home)
	}
	if err := CheckHome(home); err != nil {
		return err
	}
	ents, err := os.ReadDir(home)
	if err != nil {
		return fmt.Errorf("node: restore: %w", err)
	}
	if len(ents) > 0 {
		return fmt.Errorf("node: restore: %s is not empty (it holds %s): restore into a new home, such as `--home %s.restored`; nothing was changed",
			home, ents[0].Name(), home)
	}
	return nil
}

// readZipped reads a file of the archive whole, up to limit bytes; its
// checksum is checked at its end.
func readZipped(f *zip.File, limit int64) ([]byte, error) {
	if f.UncompressedSize64 > uint64(limit) {
		return nil, fmt.Errorf("%s is %d bytes, over %d", f.Name, f.UncompressedSize64, limit)
	}
	r, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is over %d bytes", f.Name, limit)
	}
	return b, nil
}

// errZipped marks an error in a backup's file, as opposed to one writing it
// out.
var errZipped = errors.New("in the backup")

// unzipFile copies a file of the archive, up to limit bytes, to a new file
// at path (mode 0600), synced; its checksum is checked at its end.
func unzipFile(f *zip.File, path string, limit int64) error {
	if f.UncompressedSize64 > uint64(limit) {
		return fmt.Errorf("%w: %s is %d bytes, over %d", errZipped, f.Name, f.UncompressedSize64, limit)
	}
	r, err := f.Open()
	if err != nil {
		return fmt.Errorf("%w: %s: %v", errZipped, f.Name, err)
	}
	defer r.Close()
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	src := &readErr{r: io.LimitReader(r, limit)}
	if _, err := io.Copy(out, src); err != nil {
		if src.err != nil {
			return fmt.Errorf("%w: %s: %v", errZipped, f.Name, src.err)
		}
		return err
	}
	if err := out.Sync(); err != nil {
		return err
	}
	return out.Close()
}

// readErr keeps the error of the reader a copy reads from, to tell it from
// the writer's.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}
