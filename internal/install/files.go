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
)

// --- files ---

func readFile(path string) ([]byte, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("install: read %s: %w", path, err)
	}
	return b, true, nil
}

// writeFileAtomic replaces path's content in one rename, keeping its mode;
// a symbolic link is followed, so the file it points at is the one written.
func writeFileAtomic(path string, data []byte, perm fs.FileMode) error {
	return replaceFile(path, data, perm, nil)
}

// beforeReplace, when set (by tests), runs just before replaceFile checks
// the file a last time: after the new text is written and synced, before
// the rename. It stands for the client writing its file at that moment.
var beforeReplace func(path string)

// replaceFile is writeFileAtomic with a last look: unchanged, when not nil,
// runs after the new text is written and synced, right before the rename,
// and an error from it (the file changed meanwhile) stops the write.
func replaceFile(path string, data []byte, perm fs.FileMode, unchanged func() error) error {
	real, err := linkTarget(path)
	if err != nil {
		return err
	}
	if err := hardLinked(path); err != nil {
		return err
	}
	if st, err := os.Stat(real); err == nil {
		perm = st.Mode().Perm()
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
	// look would be parted from it by the rename.
	if err := hardLinked(path); err != nil {
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

// removeFile removes a config file: for a symbolic link, the file it
// points at (the link stays, as it was before Parley created the file).
func removeFile(path string) error {
	real, err := linkTarget(path)
	if err != nil {
		return err
	}
	return os.Remove(real)
}

// writable refuses to change a file whose owner may not write it (a rename
// into its folder would replace it all the same): a file made read-only
// is one its user keeps as it is.
func writable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return nil // missing: created; unreadable: the read said so already
	}
	if st.Mode().Perm()&0o200 == 0 {
		return fmt.Errorf("%w: %s (mode %04o): Parley will not change it; make it writable (chmod u+w) to go on", ErrReadOnly, path, st.Mode().Perm())
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

// maxLinks is how many symbolic links linkTarget follows.
const maxLinks = 40

// linkTarget returns the file path stands for: path, or when it is a
// symbolic link, the file at the end of its links. A link to a file that
// is not there is refused: Parley never creates a file through a link (as
// for git hooks), since the place is whoever made the link's choice, and a
// repository can track such a link into a project's config folder.
func linkTarget(path string) (string, error) {
	p := path
	for range maxLinks {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			if p != path {
				return "", fmt.Errorf("install: %s is a symbolic link to %s, which does not exist: Parley does not create a file through a link; create the file it points to (empty will do), or remove the link, and try again", path, p)
			}
			return p, nil
		}
		if err != nil {
			return "", fmt.Errorf("install: %w", err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		to, err := os.Readlink(p)
		if err != nil {
			return "", fmt.Errorf("install: %w", err)
		}
		if !filepath.IsAbs(to) {
			// Relative to the link's folder, as the system reads it.
			dir, err := filepath.EvalSymlinks(filepath.Dir(p))
			if err != nil {
				return "", fmt.Errorf("install: %w", err)
			}
			to = filepath.Join(dir, to)
		}
		p = to
	}
	return "", fmt.Errorf("install: %s: more than %d symbolic links in a row (a loop?); Parley will not write it", path, maxLinks)
}

// projectFile refuses a project's config file (path, inside the project
// folder root) that is, or lies in a folder that is or lies inside, a
// symbolic link leading out of the project or to nothing: a repository
// can track such a link (.gemini -> ../elsewhere, .mcp.json ->
// ~/.claude.json), and Parley would write wherever its author chose. A
// link that stays inside the project is followed. (Your own config
// folder or file may well be a link, ~/.claude -> dotfiles: only a
// project's is checked.)
func projectFile(root, path string) error {
	rel, err := filepath.Rel(root, path)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil // the project folder itself, or not in it
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("install: %w", err)
	}
	parts := strings.Split(rel, string(filepath.Separator))
	cur := root
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // Parley creates it (and the folders to it)
		}
		if err != nil {
			return fmt.Errorf("install: %w", err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		file := i == len(parts)-1
		what, fix := "folder", "make "+cur+" a folder in the project"
		if file {
			what, fix = "file", "put a copy of the file it points to in its place"
		}
		to, _ := os.Readlink(cur)
		real, err := filepath.EvalSymlinks(cur)
		if err != nil && file {
			return nil // a file link to nothing: linkTarget refuses it
		}
		if err != nil {
			return fmt.Errorf("install: %s is a symbolic link to %s, which does not exist: Parley does not create a project's config through a link; make %s a folder, and try again", cur, to, cur)
		}
		if r, err := filepath.Rel(realRoot, real); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return fmt.Errorf("install: %s is a symbolic link to %s, outside the project folder %s: Parley does not write a project's config %s through a link that leads out of the project (whoever made the link chose the place, and a repository can track such a link); %s, or install into your own config (without --project)", cur, real, root, what, fix)
		}
	}
	return nil
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
