package install

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// --- the record of installs ---

// record is what Parley remembers of one client's install in one scope:
// the files it changed, how to undo each entry, and where the originals
// are. It lives in ParleyHome/install.
type record struct {
	Client  Client       `json:"client"`
	Scope   Scope        `json:"scope"`
	Project string       `json:"project,omitempty"`
	Command string       `json:"command"`
	Hooks   []string     `json:"hooks,omitempty"`
	Files   []fileRecord `json:"files"`
}

type fileRecord struct {
	Path string `json:"path"`
	// Existed is false when Parley created the file.
	Existed bool `json:"existed"`
	// Backup is the copy of the file before Parley first wrote it.
	Backup string `json:"backup,omitempty"`
	// Restorable is false once someone else changed the file between two
	// of Parley's writes: the original copy would undo their change too.
	Restorable bool `json:"restorable"`
	// After is the SHA-256 of the file as Parley last left it.
	After string `json:"after_sha256"`
	// Before is the SHA-256 of the file before Parley's latest write ("" for
	// a file it created): the record is written before the file is, so a
	// file that still holds it is one that write did not reach (an install
	// cut short), not one someone else changed.
	Before string     `json:"before_sha256,omitempty"`
	Dirs   []string   `json:"created_dirs,omitempty"`
	JSON   []jsonUndo `json:"json,omitempty"`
	TOML   []tomlUndo `json:"toml,omitempty"`
}

func (f *fileRecord) clone() fileRecord {
	c := *f
	c.Dirs = slices.Clone(f.Dirs)
	c.JSON = slices.Clone(f.JSON)
	c.TOML = slices.Clone(f.TOML)
	return c
}

func (f *fileRecord) afterSum() []byte {
	b, _ := hex.DecodeString(f.After)
	return b
}

func (f *fileRecord) jsonUndo(path []string) *jsonUndo {
	for i := range f.JSON {
		if slices.Equal(f.JSON[i].Path, path) {
			return &f.JSON[i]
		}
	}
	return nil
}

func (f *fileRecord) setJSON(u jsonUndo) {
	if r := f.jsonUndo(u.Path); r != nil {
		*r = u
		return
	}
	f.JSON = append(f.JSON, u)
}

// hookBack reports whether the user's hook that Parley's replaced for event
// is back in its place: that event's hooks are the user's.
func (f *fileRecord) hookBack(event string) bool {
	u := f.jsonUndo([]string{"hooks", event})
	return u != nil && u.Back
}

func (f *fileRecord) tomlUndo(path []string) *tomlUndo {
	for i := range f.TOML {
		if slices.Equal(f.TOML[i].Path, path) {
			return &f.TOML[i]
		}
	}
	return nil
}

func (f *fileRecord) setTOML(u tomlUndo) {
	if r := f.tomlUndo(u.Path); r != nil {
		*r = u
		return
	}
	f.TOML = append(f.TOML, u)
}

func (f *fileRecord) dropTOML(path []string) {
	f.TOML = slices.DeleteFunc(f.TOML, func(u tomlUndo) bool { return slices.Equal(u.Path, path) })
}

func (r *record) file(path string) *fileRecord {
	if r == nil {
		return nil
	}
	for i := range r.Files {
		if r.Files[i].Path == path {
			return &r.Files[i]
		}
	}
	return nil
}

// Lock takes the install lock of a Parley home: installs and uninstalls of
// one home run one at a time (each reads the record, plans from the
// clients' files and writes the record back, so two at once would each
// record what they saw, and the last one's record would say Parley found
// a file it had created itself). The lock is an flock, let go when the
// process ends.
func Lock(parleyHome string) (unlock func(), err error) {
	dir := filepath.Join(parleyHome, "install")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("install: lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil // closing lets the flock go
}

// recordPath names the record of a client's install in a scope (one per
// project folder for the project scope). A project is named by its folder
// with the symbolic links on the way resolved, so that the same folder
// reached through a link has the same record; a record an earlier Parley
// named by the folder as given (a link in it) is found under that name
// when there is none under the resolved one.
func recordPath(env Env, client Client, scope Scope) string {
	named := func(dir string) string {
		name := string(client) + "-" + string(scope)
		if scope == Project {
			h := sha256.Sum256([]byte(dir))
			name += "-" + hex.EncodeToString(h[:6])
		}
		return filepath.Join(env.ParleyHome, "install", name+".json")
	}
	if scope != Project {
		return named("")
	}
	real := realProject(env.ProjectDir)
	p := named(real)
	if real != env.ProjectDir {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			if old := named(env.ProjectDir); fileExists(old) {
				return old
			}
		}
	}
	return p
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// realProject returns a project folder with the symbolic links on the way
// resolved (dir as given when it cannot be resolved).
func realProject(dir string) string {
	if dir == "" {
		return dir
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return dir
}

// projectEnv returns env with its project folder resolved (realProject),
// for the project scope: the files and the record are then named the same
// whichever link the folder was reached through.
func projectEnv(env Env, scope Scope) Env {
	if scope == Project {
		env.ProjectDir = realProject(env.ProjectDir)
	}
	return env
}

// rebase renames the files of a record made with the project folder as
// given (a link in it) into the resolved folder dir, so that they match
// the files a plan looks at.
func (r *record) rebase(dir string) {
	if r == nil || r.Project == "" || r.Project == dir {
		return
	}
	move := func(p string) string {
		rel, err := filepath.Rel(r.Project, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return p
		}
		return filepath.Join(dir, rel)
	}
	for i := range r.Files {
		f := &r.Files[i]
		if r.file(move(f.Path)) != nil && move(f.Path) != f.Path {
			continue
		}
		f.Path = move(f.Path)
		for j := range f.Dirs {
			f.Dirs[j] = move(f.Dirs[j])
		}
	}
	r.Project = dir
}

func loadRecord(path string) (*record, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("install: read %s: %w", path, err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("install: the record %s is damaged (%v); move it away to start afresh", path, err)
	}
	return &r, nil
}

func saveRecord(path string, r *record) error {
	sort.SliceStable(r.Files, func(i, j int) bool { return r.Files[i].Path < r.Files[j].Path })
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeNew(path, append(b, '\n'))
}
