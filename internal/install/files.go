package install

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// --- files ---

func readFile(path string) ([]byte, bool, error) {
	if err := regular(path); err != nil {
		return nil, false, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("install: read %s: %w", path, err)
	}
	return b, true, nil
}

// regular refuses a file that is there and is not a regular file (a
// device: a config linked to /dev/null; a pipe, whose read would wait):
// Parley's rename would replace the device itself (the system's /dev/null,
// for root), and a read of a pipe would never end.
func regular(path string) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().IsRegular() || fi.IsDir() {
		return nil // missing: created; a folder: the read says so
	}
	return fmt.Errorf("%w: %s is a %s, not a file: Parley will not read or replace it (a config linked to a device is one its user keeps from being written); to install, make the config a regular file, and do not remove the device", ErrNotRegular, path, fileKind(fi.Mode()))
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	}
	return "special file"
}

// writeFileAtomic replaces path's content in one rename, keeping its mode;
// a symbolic link is followed, so the file it points at is the one written.
func writeFileAtomic(path string, data []byte, perm fs.FileMode) error {
	return replaceFile(path, "", "", data, perm, nil)
}

// beforeReplace, when set (by tests), runs just before replaceFile checks
// the file a last time: after the new text is written and synced, before
// the rename. It stands for the client writing its file at that moment.
var beforeReplace func(path string)

// reach returns the file a write to path reaches now (writeTarget, with
// root the project folder path must stay in, or ""): when planned is not
// "" and path reaches another file now (a link changed since the plan),
// ErrRaced.
func reach(path, root, planned string) (string, error) {
	real, err := writeTarget(path, root)
	if err != nil {
		return "", err
	}
	if planned != "" && real != planned {
		return "", fmt.Errorf("%w: %s leads to %s now, not to %s as it did when the changes were planned", ErrRaced, path, real, planned)
	}
	return real, nil
}

// replaceFile is writeFileAtomic with a last look: unchanged, when not nil,
// runs after the new text is written and synced, right before the rename,
// and an error from it (the file changed meanwhile) stops the write. The
// file written is the one path reaches (reach, with root and planned),
// looked at again right before the rename.
func replaceFile(path, root, planned string, data []byte, perm fs.FileMode, unchanged func() error) error {
	real, err := reach(path, root, planned)
	if err != nil {
		return err
	}
	if err := hardLinked(path); err != nil {
		return err
	}
	if err := regular(real); err != nil {
		return err
	}
	uid, gid := -1, -1 // the file's owner and group, to keep
	if st, err := os.Stat(real); err == nil {
		perm = st.Mode().Perm()
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			uid, gid = int(sys.Uid), int(sys.Gid)
		}
	}
	dir := filepath.Dir(real)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(real)+".parley-*")
	if err != nil {
		return fmt.Errorf("install: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("install: write %s: %w", path, err)
	}
	if err := keepOwner(tmp, uid, gid); err != nil {
		tmp.Close()
		return fmt.Errorf("install: write %s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("install: write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("install: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("install: write %s: %w", path, err)
	}
	if unchanged != nil {
		if beforeReplace != nil {
			beforeReplace(path)
		}
		if err := unchanged(); err != nil {
			return err
		}
	}
	// Again, as late as can be: a name linked to the file since the first
	// look would be parted from it by the rename, and a link changed since
	// would lead the rename elsewhere.
	if err := hardLinked(path); err != nil {
		return err
	}
	if _, err := reach(path, root, real); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), real); err != nil {
		return fmt.Errorf("install: write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the rename is durable on most systems without it; best effort
		d.Close()
	}
	return nil
}

// keepOwner gives the new text of a file the owner and group of the file
// it replaces (uid, gid; -1 for a file Parley creates): the rename would
// otherwise give it this user's, and a file an install run with sudo, or
// a project file shared through a group, would no longer be readable by
// the client or the group it is for. When the owner or group cannot be
// kept, the write is refused rather than change them.
func keepOwner(f *os.File, uid, gid int) error {
	if uid < 0 && gid < 0 {
		return nil
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || (int(sys.Uid) == uid && int(sys.Gid) == gid) {
		return nil
	}
	if err := f.Chown(uid, gid); err != nil {
		return fmt.Errorf("it is owned by %d:%d, and Parley cannot give its new text that owner and group (%v); Parley will not change a file's owner: run the install as its owner, or apply the changes of --dry-run by hand", uid, gid, err)
	}
	return nil
}

// isLink reports whether path itself is a symbolic link.
func isLink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&fs.ModeSymlink != 0
}

// removeFile removes a config file: for a symbolic link, the file it
// points at (the link stays, as it was before Parley created the file);
// root and planned as for replaceFile.
func removeFile(path, root, planned string) error {
	real, err := reach(path, root, planned)
	if err != nil {
		return err
	}
	return os.Remove(real)
}

// writable refuses to change a file whose owner may not write it, or that
// this user may not write (a rename into its folder would replace it all
// the same): a file made read-only is one its user keeps as it is, and one
// owned by someone else (an admin's fixed settings) is theirs.
func writable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return nil // missing: created; unreadable: the read said so already
	}
	if st.Mode().Perm()&0o200 == 0 {
		return fmt.Errorf("%w: %s (mode %04o): Parley will not change it; make it writable (chmod u+w) to go on", ErrReadOnly, path, st.Mode().Perm())
	}
	err = unix.Faccessat(unix.AT_FDCWD, path, unix.W_OK, unix.AT_EACCESS)
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS) {
		return fmt.Errorf("%w: %s: you may not write it (%v), so Parley will not replace it; ask its owner, or run the install as a user who may write it", ErrReadOnly, path, err)
	}
	return nil
}

// noteHardLinked notes in the plan that Apply will refuse to change path,
// a file with hard links: the plan is still made, so that --dry-run shows
// the changes a user can make by hand.
func (p *Plan) noteHardLinked(path string) {
	if err := hardLinked(path); err != nil {
		p.Notes = append(p.Notes, "applying this is refused: "+strings.TrimPrefix(err.Error(), "install: "))
	}
}

// hardLinked refuses to change a file that has more than one name (a hard
// link: a dotfiles copy, say). Replacing it in one rename, as Parley does,
// would give this name a new file and leave the other with the old text;
// writing it in place instead would keep the names together, but a crash
// or a full disk halfway would leave the user's config cut short, and the
// client may read it half-written. So neither: the user makes the other
// name a symbolic link (written through), or applies the diff by hand.
func hardLinked(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return nil // missing: created; unreadable: the read says so
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && st.Mode().IsRegular() && sys.Nlink > 1 {
		return fmt.Errorf("%w: %s has %d hard links (other names for the same file): Parley replaces a file in one step, which would leave the other names with the old text, and will not write it in place, where an interruption would leave it cut short; "+
			"make the other names symbolic links to it (Parley writes through links), or apply the changes of --dry-run by hand", ErrHardLinked, path, sys.Nlink)
	}
	return nil
}

// maxLinks is how many symbolic links resolve follows, as the system's
// limit (40 on Linux).
const maxLinks = 40

// linkError is a symbolic link that leads to nothing (or loops): Parley
// never creates a file through a link, since the place is whoever made
// the link's choice (a repository can track such a link into a
// project's config folder).
type linkError struct {
	link    string // the link, as path names it
	missing string // where it leads that does not exist; "" for a loop
	file    bool   // the link is the file itself, not one of its folders
}

func (e *linkError) Error() string {
	if e.missing == "" {
		return fmt.Sprintf("install: %s: more than %d symbolic links in a row (a loop?); Parley will not write it", e.link, maxLinks)
	}
	return fmt.Sprintf("install: %s is a symbolic link leading to %s, which does not exist: Parley does not create a file through a link; create the file it points to (empty will do), or remove the link, and try again", e.link, e.missing)
}

// resolve returns the file path names as the system finds it: component
// by component, each symbolic link replaced by its target where it is met,
// so that a ".." after a link steps out of the folder the link led to
// (filepath.EvalSymlinks does the same, for a path that exists; joining a
// link's folder and its target as text would collapse the ".." first and
// lead elsewhere). The end of path that does not exist yet is kept as
// named: Parley creates it. A link that leads to nothing is refused
// (*linkError).
func resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("install: %w", err)
	}
	type part struct {
		name   string
		linked bool // from a link's target, not from path
	}
	split := func(p string, linked bool) []part {
		var out []part
		for _, n := range strings.Split(p, string(filepath.Separator)) {
			if n != "" && n != "." {
				out = append(out, part{n, linked})
			}
		}
		return out
	}
	rest := split(abs, false)
	cur := string(filepath.Separator)
	named := cur // path's components taken so far, as path names them
	link := ""   // the last of them that is a link
	links := 0
	for len(rest) > 0 {
		p := rest[0]
		rest = rest[1:]
		if !p.linked {
			named = filepath.Join(named, p.name)
		}
		if p.name == ".." {
			cur = filepath.Dir(cur) // cur holds no link: the system's ".."
			continue
		}
		next := filepath.Join(cur, p.name)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			if p.linked {
				return "", &linkError{link: link, missing: next, file: link == abs}
			}
			for _, q := range rest {
				next = filepath.Join(next, q.name) // path's own names: none is ".."
			}
			return next, nil
		}
		if err != nil {
			return "", fmt.Errorf("install: %w", err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if !p.linked {
			link = named
		}
		if links++; links > maxLinks {
			return "", &linkError{link: link}
		}
		to, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("install: %w", err)
		}
		if filepath.IsAbs(to) {
			cur = string(filepath.Separator)
		}
		rest = append(split(to, true), rest...)
	}
	return cur, nil
}

// writeTarget returns the file a write to path reaches (resolve), the one
// place that finds it, for the plan and again for the write itself. For a
// project's config (root, the project folder, not ""), it refuses a path
// that is, or lies in a folder that is, a symbolic link leading out of the
// project or to nothing, and a file that is not in the project in the
// end: a repository can track such a link (.gemini -> ../elsewhere,
// .mcp.json -> ~/.claude.json), and Parley would write wherever its author
// chose. A link that stays inside the project is followed. (Your own
// config folder or file may well be a link, ~/.claude -> dotfiles: only a
// project's is checked.)
func writeTarget(path, root string) (string, error) {
	real, err := resolve(path)
	rel, relErr := filepath.Rel(root, path)
	if root == "" || relErr != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return real, err // not a project's file
	}
	var le *linkError
	if errors.As(err, &le) && le.missing != "" {
		what := "file"
		if !le.file {
			what = "folder"
		}
		return "", fmt.Errorf("install: %s is a symbolic link leading to %s, which does not exist: Parley does not create a project's config through a link (whoever made the link chose the place, and a repository can track such a link); remove the link from the project (Parley then creates the %s in its place), or install into your own config (without --project)", le.link, le.missing, what)
	}
	if err != nil {
		return "", err
	}
	realRoot, err := resolve(root)
	if err != nil {
		return "", err
	}
	in := func(p string) bool {
		r, err := filepath.Rel(realRoot, p)
		return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator))
	}
	// Each link on the way, to name the one that leads out.
	parts := strings.Split(rel, string(filepath.Separator))
	cur := root
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			break // Parley creates it (and the folders to it)
		}
		if err != nil {
			return "", fmt.Errorf("install: %w", err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		to, err := resolve(cur)
		if err != nil {
			return "", err
		}
		if in(to) {
			continue
		}
		if i == len(parts)-1 {
			return "", fmt.Errorf("install: %s is a symbolic link to %s, outside the project folder %s: Parley does not write a project's config file through a link that leads out of the project (whoever made the link chose the place, and a repository can track such a link); remove the link from the project (Parley then creates the file in its place; not a copy of the file it leads to, which may be your own config, with your account and other projects' settings, in a file the repository tracks), or install into your own config (without --project)", cur, to, root)
		}
		return "", fmt.Errorf("install: %s is a symbolic link to %s, outside the project folder %s: Parley does not write a project's config folder through a link that leads out of the project (whoever made the link chose the place, and a repository can track such a link); make %s a folder in the project, or install into your own config (without --project)", cur, to, root, cur)
	}
	if !in(real) {
		return "", fmt.Errorf("install: %s leads to %s, outside the project folder %s: Parley does not write a project's config out of the project; install into your own config (without --project)", path, real, root)
	}
	return real, nil
}

// writeNew writes a private file, creating its folders.
func writeNew(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("install: %w", err)
	}
	return writeFileAtomic(path, data, 0o600)
}

// missingDirs lists the folders of dir that do not exist, outermost first.
func missingDirs(dir string) []string {
	var out []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		out = append(out, d)
	}
	slices.Reverse(out)
	return out
}

// removeEmptyDirs removes the folders (innermost first) that are empty.
func removeEmptyDirs(dirs []string) {
	for i := len(dirs) - 1; i >= 0; i-- {
		if ents, err := os.ReadDir(dirs[i]); err == nil && len(ents) == 0 {
			_ = os.Remove(dirs[i]) // only an empty folder Parley created
		}
	}
}

func appendNew(a []string, b ...string) []string {
	for _, x := range b {
		if !slices.Contains(a, x) {
			a = append(a, x)
		}
	}
	return a
}

func sum(b []byte) []byte {
	h := sha256.Sum256(b)
	return h[:]
}

func hexSum(b []byte) string { return hex.EncodeToString(sum(b)) }
