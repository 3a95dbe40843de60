package node

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/atomicfile"
	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/config"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/store"
)

// CheckHome returns an error wrapping ErrHomeUnsafe if the home folder
// exists and is not safe to use: owned by another user, writable by its
// group or by others (who could swap the local API socket for their own and
// read what agents send), not a folder, or holding a parley.sock that is
// not a socket of this user. A home that does not exist yet is fine. The
// node checks its home before it writes anything there; the CLI checks it
// before it connects to the socket.
func CheckHome(home string) error {
	st, err := os.Stat(home)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("node: home %s: %w", home, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%w: %s is not a folder; pass a folder with --home", ErrHomeUnsafe, home)
	}
	if uid, ok := ownerOf(st); ok && uid != os.Geteuid() {
		return fmt.Errorf("%w: %s belongs to user %d, not to you (user %d); use a home of your own with --home",
			ErrHomeUnsafe, home, uid, os.Geteuid())
	}
	if m := st.Mode().Perm(); m&0o022 != 0 {
		return fmt.Errorf("%w: %s can be written by other users (mode %04o); run `chmod go-w %s` and try again",
			ErrHomeUnsafe, home, m, home)
	}
	sock := SocketPath(home)
	sst, err := os.Lstat(sock)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("node: %s: %w", sock, err)
	case sst.Mode().Type() != fs.ModeSocket:
		return fmt.Errorf("%w: %s is not a socket; remove it and try again", ErrHomeUnsafe, sock)
	}
	if uid, ok := ownerOf(sst); ok && uid != os.Geteuid() {
		return fmt.Errorf("%w: %s belongs to user %d, not to you (user %d): someone else may be listening; remove it and try again",
			ErrHomeUnsafe, sock, uid, os.Geteuid())
	}
	return nil
}

// MakeHome creates home (mode 0700) if it does not exist, and checks it
// (CheckHome) once it does: a home another user made at the path between
// an earlier check and the creation (one under /tmp, say) is refused
// before anything is written there, where MkdirAll alone would take it.
func MakeHome(home string) error {
	afterHomeCheck(home)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("node: create home %s: %w", home, err)
	}
	return CheckHome(home)
}

// afterHomeCheck runs in MakeHome before the home is created: tests make
// the home there as another user would.
var afterHomeCheck = func(string) {}

func ownerOf(st fs.FileInfo) (int, bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(sys.Uid), true
}

// privateFiles are the files Parley writes in a home, each readable by its
// owner only (mode 0600). identity.key is not among them: a key others may
// read is refused (identity.LoadOrCreate), as ssh does; nor is ui.token: one
// others may read is replaced by a new token (ui.LoadToken).
var privateFiles = []string{config.FileName, LogFileName, LockFileName, RecoveryFileName, audit.FileName, audit.HeadName,
	UIPortFileName, UIOpenFileName, LoopbackPortsFileName}

// tightenHome makes private what Parley keeps in home that other users may
// read or write: the database folder data/ (and the folders --recover and
// --new-identity set aside beside it) becomes mode 0700, and each of
// privateFiles and of the recovery files set aside loses its group and
// other bits. A home restored from a backup or copied, or files a
// permissive umask made, would otherwise stay open; so would a group mode
// the user set (Parley's files are the user's alone: it is taken away at
// each start too). Badger makes its files with the process umask (0644
// under the usual 022) and has no setting for their mode: the private
// data/ is what keeps them to the user, so they are left as they are. A
// data/ that is a symbolic link (the database on another disk) has the
// folder it points to made private; other links are left alone (the user
// chose where such a file goes).
//
// Each change is logged as a warning. A file that is not the user's (a
// config a root shell provisioned, a node.log a `sudo parley up` left)
// cannot be made private by the user: when others can only read it, that
// is logged as a warning naming the chown that lets the next start make it
// private, and the start goes on; when others can write it, what Parley
// reads from it cannot be trusted, and the start stops with that chown. A
// chmod of the user's own file that fails stops the start with the chmod
// to run.
func tightenHome(home string, log *slog.Logger) error {
	ents, err := os.ReadDir(home)
	if err != nil {
		return fmt.Errorf("node: home %s: %w", home, err)
	}
	for _, e := range ents {
		name, path := e.Name(), filepath.Join(home, e.Name())
		switch {
		case name == DataDirName || strings.HasPrefix(name, DataDirName+"."):
			switch e.Type() {
			case fs.ModeDir:
				if err := tighten(path, 0o700, log); err != nil {
					return err
				}
			case fs.ModeSymlink:
				target, err := filepath.EvalSymlinks(path)
				if err != nil {
					continue // a link to nothing: the database says so when it opens
				}
				if st, err := os.Stat(target); err != nil || !st.IsDir() {
					continue
				}
				if err := tighten(target, 0o700, log.With("link", path)); err != nil {
					return err
				}
			}
		case slices.Contains(privateFiles, name) || strings.HasPrefix(name, RecoveryFileName+"."):
			if e.Type().IsRegular() {
				if err := tighten(path, 0o600, log); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// tighten takes from path's mode every bit beyond want's (for want 0600:
// all group and other bits); path is not a symbolic link.
func tighten(path string, want fs.FileMode, log *slog.Logger) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("node: %s: %w", path, err)
	}
	m := st.Mode().Perm()
	if m&^want == 0 {
		return nil
	}
	err = os.Chmod(path, m&want)
	if uid, ok := ownerOf(st); err != nil && ok && uid != os.Geteuid() {
		chown := chownCommand(path, st.IsDir())
		if m&0o022 != 0 {
			return fmt.Errorf("node: %s belongs to user %d, not to you, and other users can write it (mode %04o), so what the node reads there cannot be trusted: make it yours with `%s` (the node then makes it private), or move it away, and try again",
				path, uid, m, chown)
		}
		log.Warn("other users can read this file of the home and it is not yours, so it cannot be made private: make it yours and the next start makes it private",
			"path", path, "owner", uid, "mode", fmt.Sprintf("%04o", m), "run", chown)
		return nil
	}
	if err != nil {
		return fmt.Errorf("node: %s can be read or written by other users (mode %04o) and could not be made private (%v): run `chmod go-rwx %s` and try again",
			path, m, err, path)
	}
	log.Warn("made private: other users could read or write it", "path", path, "mode_was", fmt.Sprintf("%04o", m), "mode", fmt.Sprintf("%04o", m&want))
	return nil
}

// chownCommand is the command that makes path the user's.
func chownCommand(path string, dir bool) string {
	who := strconv.Itoa(os.Geteuid())
	if u, err := user.Current(); err == nil && u.Username != "" {
		who = u.Username
	}
	if dir {
		return fmt.Sprintf("sudo chown -R %s %s", who, path)
	}
	return fmt.Sprintf("sudo chown %s %s", who, path)
}

// listenSocket serves the local API socket of home (localapi.Listen: bound
// in a private folder, made 0600 and then moved into place, so it is never
// open to other users, not even for the moment between bind and chmod).
func listenSocket(home string) (net.Listener, error) {
	return localapi.Listen(SocketPath(home))
}

// Names of what --recover and --new-identity set aside, beside data/.
const (
	brokenPrefix = DataDirName + ".broken-"
	oldPrefix    = DataDirName + ".old-"
)

// setAside renames a folder or file of the home to name+prefix+time,
// keeping every byte of it, and returns the new path.
func setAside(path, prefix string) (string, error) {
	base := filepath.Join(filepath.Dir(path), prefix+time.Now().UTC().Format("20060102T150405Z"))
	dst := base
	for i := 1; ; i++ {
		if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
			break
		}
		dst = fmt.Sprintf("%s-%d", base, i)
	}
	if err := os.Rename(path, dst); err != nil {
		return "", fmt.Errorf("node: set aside %s: %w", path, err)
	}
	// Made durable before anything new takes the old name (a new
	// database, say), so a power loss does not undo it.
	if err := atomicfile.SyncDir(filepath.Dir(path)); err != nil {
		return "", fmt.Errorf("node: set aside %s as %s: %w", path, dst, err)
	}
	// The reserve file is the store's own padding, not the user's data.
	_ = os.Remove(filepath.Join(dst, store.ReserveName))
	return dst, nil
}

// prepareIdentity decides, before a key is loaded or made, whether this
// home may go on: a home whose database (or recovery file) remains without
// its key is refused, unless cfg.NewIdentity asks for a new identity, in
// which case the old database and recovery file are set aside.
func prepareIdentity(cfg Config) error {
	keyPath := filepath.Join(cfg.Home, KeyFileName)
	_, err := os.Lstat(keyPath)
	keyThere := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("node: %s: %w", keyPath, err)
	}
	if keyThere {
		if cfg.NewIdentity {
			return fmt.Errorf("%w: %s is present; a new identity is only made for a home whose key is lost (move the key away first if you mean to become a new node)",
				ErrBadConfig, keyPath)
		}
		return nil
	}
	dataDir := filepath.Join(cfg.Home, DataDirName)
	contents, err := store.Inspect(dataDir)
	if err != nil {
		return err
	}
	recPath := filepath.Join(cfg.Home, RecoveryFileName)
	_, err = os.Lstat(recPath)
	recThere := err == nil
	if contents.Empty() && !recThere {
		return nil // a fresh home
	}
	switch {
	case cfg.NewIdentity:
	case cfg.Recover:
		return fmt.Errorf("%w: %s is missing; --recover keeps this node's identity and cannot make it again: put the key back from a backup, or start with --new-identity to become a new node",
			ErrIdentityMissing, keyPath)
	default:
		return fmt.Errorf("%w: %s is missing, but this home holds its node's database: put the key back from a backup, or start with --new-identity to become a new node (the old database is kept aside; contacts and rooms do not carry over)",
			ErrIdentityMissing, keyPath)
	}
	if !contents.Empty() {
		dst, err := setAside(dataDir, oldPrefix)
		if err != nil {
			return err
		}
		cfg.Logger.Warn("new identity: the old database is kept aside", "path", dst)
	}
	if recThere {
		if _, err := setAside(recPath, RecoveryFileName+".old-"); err != nil {
			return err
		}
	}
	return nil
}

// HomePeer returns the peer ID of the home's key without making one: for
// tools that check what a home holds (the audit log's signer) whether or not
// its node runs.
func HomePeer(home string) (peer.ID, error) {
	path := filepath.Join(home, KeyFileName)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: %s has no key", ErrIdentityMissing, home)
	}
	priv, err := identity.LoadOrCreate(path)
	if err != nil {
		return "", err
	}
	return identity.PeerID(priv)
}

// DiskBelowFloor reports the free bytes on the disk of home when they are
// below the store's default free-space floor (a node started there serves
// reads only), and the floor.
func DiskBelowFloor(home string) (free, floor int64, below bool) {
	free, err := store.FreeBytes(home)
	return free, store.DefaultMinFree, err == nil && free < store.DefaultMinFree
}
