package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
)

// Names of the files Badger keeps in its folder.
const (
	manifestName  = "MANIFEST"
	vlogHeaderLen = 20 // a value log file holding no entries
)

// Contents is what a database folder holds, by kind of file.
type Contents struct {
	Manifest bool     // MANIFEST exists
	Tables   []uint64 // IDs of the .sst files
	Logs     int      // value logs (.vlog) and write-ahead logs (.mem) holding entries
	Other    int      // any other file (KEYREGISTRY, DISCARD, LOCK, …), not counting ReserveName, JournalName and SchemaName
}

// Empty reports whether the folder holds no database at all.
func (c Contents) Empty() bool {
	return !c.Manifest && len(c.Tables) == 0 && c.Logs == 0 && c.Other == 0
}

// HasData reports whether the folder holds tables or logs with entries.
func (c Contents) HasData() bool { return len(c.Tables) > 0 || c.Logs > 0 }

// Inspect lists what the database folder dir holds without opening it. A
// missing folder is empty.
func Inspect(dir string) (Contents, error) {
	var c Contents
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("store: read %s: %w", dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == manifestName:
			c.Manifest = true
		case strings.HasSuffix(name, ".sst"):
			if id, ok := table.ParseFileID(name); ok {
				c.Tables = append(c.Tables, id)
			} else {
				c.Other++
			}
		case strings.HasSuffix(name, ".vlog"), strings.HasSuffix(name, ".mem"):
			info, err := e.Info()
			if err != nil {
				return c, fmt.Errorf("store: read %s: %w", dir, err)
			}
			if info.Size() > vlogHeaderLen {
				c.Logs++
			}
		case name == ReserveName, name == JournalName, name == SchemaName:
		default:
			c.Other++
		}
	}
	slices.Sort(c.Tables)
	return c, nil
}

// Check looks at the database in dir before it is opened and returns an
// error wrapping ErrCorrupt if Badger would lose data opening it: MANIFEST
// missing or unreadable while tables or logs remain (Badger would start
// empty and delete the tables), MANIFEST listing no tables while tables
// remain, or a listed table missing, cut short or failing its checksums
// (Badger would panic in one of its own goroutines). A missing or empty
// folder is fine. Tables not listed in a MANIFEST that lists others are
// left to Badger, which removes them: they are what an interrupted
// compaction leaves behind.
func Check(dir string) error {
	c, err := Inspect(dir)
	if err != nil {
		return err
	}
	if !c.Manifest {
		if c.HasData() {
			return fmt.Errorf("%w: %s is missing, while the folder still holds %s", ErrCorrupt,
				filepath.Join(dir, manifestName), describe(c))
		}
		return nil
	}
	m, err := readManifest(dir)
	if err != nil {
		return err
	}
	if len(m.Tables) == 0 && len(c.Tables) > 0 {
		return fmt.Errorf("%w: %s lists no tables, while the folder still holds %s", ErrCorrupt,
			filepath.Join(dir, manifestName), describe(c))
	}
	ids := make([]uint64, 0, len(m.Tables))
	for id := range m.Tables {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := checkTable(dir, id, m.Tables[id]); err != nil {
			return err
		}
	}
	return nil
}

func describe(c Contents) string {
	var parts []string
	if n := len(c.Tables); n > 0 {
		parts = append(parts, plural(n, "table"))
	}
	if c.Logs > 0 {
		parts = append(parts, plural(c.Logs, "log file"))
	}
	return strings.Join(parts, " and ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func readManifest(dir string) (badger.Manifest, error) {
	path := filepath.Join(dir, manifestName)
	f, err := os.Open(path)
	if err != nil {
		return badger.Manifest{}, fmt.Errorf("store: read %s: %w", path, err)
	}
	defer f.Close()
	m, _, err := badger.ReplayManifestFile(f, 0, badger.DefaultOptions(dir))
	if err != nil {
		return badger.Manifest{}, fmt.Errorf("%w: %s cannot be read: %v", ErrCorrupt, path, err)
	}
	return m, nil
}

// checkTable opens one table with Badger's own reader, read-only, and
// verifies every block's checksum. Badger panics on some damage (a table
// cut short); the panic is caught here, in the caller's goroutine.
func checkTable(dir string, id uint64, tm badger.TableManifest) (err error) {
	path := table.NewFilename(id, dir)
	if tm.KeyID != 0 {
		return nil // encrypted tables need their key; Parley does not encrypt
	}
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: table %s listed in %s is missing", ErrCorrupt, path, manifestName)
	}
	if err != nil {
		return fmt.Errorf("%w: table %s cannot be opened: %v", ErrCorrupt, path, firstLine(err))
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: table %s is cut short or garbled (its index cannot be read)", ErrCorrupt, path)
		}
		// OpenTable closes the file itself on some errors; a second close
		// only reports that, so its error says nothing about the table.
		_ = mf.Close(-1)
	}()
	if len(mf.Data) == 0 {
		return fmt.Errorf("%w: table %s is empty", ErrCorrupt, path)
	}
	_, err = table.OpenTable(mf, table.Options{
		ReadOnly:    true,
		ChkMode:     options.OnTableRead,
		BlockSize:   4 << 10,
		Compression: tm.Compression,
	})
	if err != nil {
		return fmt.Errorf("%w: table %s fails its checks: %s", ErrCorrupt, path, firstLine(err))
	}
	return nil
}

// firstLine keeps an error to its first line: Badger's messages and panics
// can run to many.
func firstLine(err error) string {
	s := strings.TrimSpace(err.Error())
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
