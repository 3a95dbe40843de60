// Package gitrepo finds the git repository around a folder and what the
// board needs of it: its root folder, the project key (from the root
// commit, so every clone has the same one) and paths relative to the root.
// It runs the git program.
package gitrepo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// NameHint ends ErrNotRepo's and ErrNoCommit's texts: how to name the
// project instead, for the CLI (which keeps the flag) and for agents (whose
// MCP server puts its tool argument in its place) alike.
const NameHint = "--project KEY, or project in a tool call"

var (
	// ErrNotRepo is returned when a folder is not inside a git repository.
	ErrNotRepo = errors.New("gitrepo: not inside a git repository")
	// ErrNoCommit is returned when the repository has no commit yet.
	ErrNoCommit = errors.New("gitrepo: the repository has no commit yet")
	// ErrOutside is returned for a path outside the repository.
	ErrOutside = errors.New("gitrepo: path outside the repository")
	// ErrShallow is returned in a shallow clone, which lacks the root
	// commit the project key is made from.
	ErrShallow = errors.New("gitrepo: a shallow clone lacks the root commit that names the project")
	// ErrBadKey is returned for a project key that is not acceptable.
	ErrBadKey = errors.New("gitrepo: bad project key")
)

// Repo is a git working copy.
type Repo struct {
	Root string // the working copy's top folder, absolute, symlinks resolved
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// Open finds the repository that holds dir.
func Open(ctx context.Context, dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("gitrepo: %w", err)
	}
	root, err := git(ctx, abs, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%w: %s (%v)", ErrNotRepo, abs, err)
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	return &Repo{Root: root}, nil
}

// ProjectKey is the repository's project key: the first 32 hex digits of
// SHA-256 of "parley-project:" and the root commit's hash (the smallest, if
// the history has several roots). Every clone of the repository has it,
// but a shallow one: git names the commits at its depth as its roots, so
// a key made from them would be a board of its own (and the guard would
// check commits against it); ErrShallow is returned there.
func (r *Repo) ProjectKey(ctx context.Context) (string, error) {
	if sh, err := git(ctx, r.Root, "rev-parse", "--is-shallow-repository"); err == nil && sh == "true" {
		return "", fmt.Errorf("%w: %s (git fetch --unshallow, or name the project: %s)", ErrShallow, r.Root, NameHint)
	}
	out, err := git(ctx, r.Root, "rev-list", "--max-parents=0", "HEAD")
	if err != nil || out == "" {
		return "", fmt.Errorf("%w: %s (name the project: %s)", ErrNoCommit, r.Root, NameHint)
	}
	roots := strings.Fields(out)
	slices.Sort(roots)
	sum := sha256.Sum256([]byte("parley-project:" + roots[0]))
	return hex.EncodeToString(sum[:16]), nil
}

var keyRe = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// CheckKey checks a project key given by hand: 1 to 64 of a-z 0-9 . _ -,
// starting with a letter or digit.
func CheckKey(key string) error {
	if !keyRe.MatchString(key) {
		return fmt.Errorf("%w: %q: 1 to 64 of a-z 0-9 . _ -", ErrBadKey, key)
	}
	return nil
}

// Rel makes path (absolute, or relative to cwd) a claim path: relative to
// the root, "/" between segments. A folder (an existing one, or a path
// ending in "/") becomes FOLDER/**, and the root itself "**". Glob
// characters are kept. A path outside the repository is refused.
func (r *Repo) Rel(cwd, path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("%w: empty path", ErrOutside)
	}
	dir := strings.HasSuffix(path, "/") || strings.HasSuffix(path, string(filepath.Separator))
	p := path
	if !filepath.IsAbs(p) {
		// Not filepath.Join, which cleans: a ".." goes up from what a
		// symlink before it leads to, as the system does.
		p = cwd + string(filepath.Separator) + p
	}
	resolved, err := resolve(p)
	if err != nil {
		return "", fmt.Errorf("gitrepo: %s: %w", path, err)
	}
	rel, err := filepath.Rel(r.Root, resolved)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%w: %s is outside %s", ErrOutside, path, r.Root)
	}
	rel = filepath.ToSlash(rel)
	if rel == "." {
		return "**", nil
	}
	if rel == ".git" || strings.HasPrefix(rel, ".git/") {
		return "", fmt.Errorf("%w: %s is inside .git", ErrOutside, path)
	}
	// A repository nested in this one (a submodule) holds its files: their
	// commits are made there, against its board. Before, a file in one was
	// claimed on this board, which no commit of it meets. The nested
	// repository's own folder is this one's (git commits it as one entry),
	// so it is claimed as the path itself, not as the files under it.
	// A linked worktree of this repository (.worktrees/NAME, which parley
	// worktree add claims as a whole) is not another repository.
	for d := filepath.Dir(resolved); len(d) > len(r.Root); d = filepath.Dir(d) {
		if r.nested(d) {
			return "", fmt.Errorf("%w: %s is inside the repository %s (a submodule?); claim it from there", ErrOutside, path, d)
		}
	}
	if r.nested(resolved) {
		return rel, nil
	}
	if !dir {
		if st, err := os.Stat(resolved); err == nil && st.IsDir() {
			dir = true
		}
	}
	if dir && !strings.HasSuffix(rel, "**") {
		rel += "/**"
	}
	return rel, nil
}

// nested reports whether dir is the working copy of another repository
// than r: it holds a .git of its own whose objects are not r's (a
// submodule, a repository made inside r), not a linked worktree of r.
func (r *Repo) nested(dir string) bool {
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err != nil {
		return false
	}
	c := commonDir(dir)
	return c == "" || c != commonDir(r.Root)
}

// commonDir is the git folder holding the objects of the working copy at
// root: its .git folder, or what its .git file names (a submodule's
// folder under the outer .git/modules, a linked worktree's under
// .git/worktrees, whose commondir file names the main .git); "" when it
// cannot be read.
func commonDir(root string) string {
	g := filepath.Join(root, ".git")
	fi, err := os.Stat(g)
	if err != nil {
		return ""
	}
	if !fi.IsDir() {
		b, err := os.ReadFile(g)
		line := strings.TrimSpace(string(b))
		if err != nil || !strings.HasPrefix(line, "gitdir: ") {
			return ""
		}
		if g = strings.TrimPrefix(line, "gitdir: "); !filepath.IsAbs(g) {
			g = filepath.Join(root, g)
		}
		if b, err := os.ReadFile(filepath.Join(g, "commondir")); err == nil {
			if c := strings.TrimSpace(string(b)); filepath.IsAbs(c) {
				g = c
			} else {
				g = filepath.Join(g, c)
			}
		}
	}
	if e, err := filepath.EvalSymlinks(g); err == nil {
		g = e
	}
	return filepath.Clean(g)
}

// Project finds the project for a command run in cwd: the key given
// (checked) or the key of the repository around cwd, and paths made claim
// paths (see Rel). Outside a repository, a given key is used and paths
// must already be relative to the project's root.
func Project(ctx context.Context, cwd, key string, paths []string) (string, []string, error) {
	if key != "" {
		if err := CheckKey(key); err != nil {
			return "", nil, err
		}
	}
	r, err := Open(ctx, cwd)
	if err != nil {
		if key == "" {
			return "", nil, fmt.Errorf("%w: %s (run in the repository, or name the project: %s)", ErrNotRepo, cwd, NameHint)
		}
		out := make([]string, 0, len(paths))
		for _, p := range paths {
			c := filepath.ToSlash(filepath.Clean(p))
			if filepath.IsAbs(p) || c == ".." || strings.HasPrefix(c, "../") {
				return "", nil, fmt.Errorf("%w: %s: outside a repository, paths are relative to the project's root", ErrOutside, p)
			}
			out = append(out, c)
		}
		return key, out, nil
	}
	if key == "" {
		if key, err = r.ProjectKey(ctx); err != nil {
			return "", nil, err
		}
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		rel, err := r.Rel(cwd, p)
		if err != nil {
			return "", nil, err
		}
		out = append(out, rel)
	}
	return key, out, nil
}

// maxLinks is how many symlinks resolve follows in one path.
const maxLinks = 255

// resolve makes the path p (absolute once made so) the one the system
// reaches: going through it a segment at a time, each symlink in the part
// that exists is resolved before a ".." after it goes up (so lnk/../x.go
// is x.go beside lnk's target, not beside lnk), and /tmp and
// /private/tmp and the like agree. A segment that does not exist (a new
// file, or a glob) is kept as written, and a ".." after it goes up from it.
func resolve(p string) (string, error) {
	if !filepath.IsAbs(p) {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		p = wd + string(filepath.Separator) + p // not filepath.Abs, which cleans
	}
	sep := string(filepath.Separator)
	vol := filepath.VolumeName(p)
	cur := vol + sep
	todo := strings.Split(filepath.FromSlash(p[len(vol):]), sep)
	links := 0
	for len(todo) > 0 {
		seg := todo[0]
		todo = todo[1:]
		switch seg {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, seg)
		cur = next
		if strings.ContainsAny(seg, "*?") {
			continue
		}
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("more than %d symlinks", maxLinks)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		cur = filepath.Dir(next)
		if filepath.IsAbs(target) {
			vol = filepath.VolumeName(target)
			cur, target = vol+sep, target[len(vol):]
		}
		todo = append(strings.Split(filepath.FromSlash(target), sep), todo...)
	}
	return cur, nil
}
