package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/parley-mesh/parley/internal/atomicfile"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// SchemaName is the file in the database folder that names the key schema
// its keys follow ("parley schema 1"). It is read before Badger opens the
// folder, so a Parley that does not know the schema refuses it without
// changing a byte; a folder without it is schema 1 (every database made
// before the file), and it is written at the first open.
const SchemaName = "parley.schema"

const schemaPrefix = "parley schema "

// ErrNewerSchema is returned by OpenConfig when the database was written by
// a newer Parley, whose key schema this one does not know.
var ErrNewerSchema = errors.New("store: the database was written by a newer Parley")

// readSchema returns the schema version the folder's SchemaName names, or 0
// when the file is missing.
func readSchema(dir string) (int, error) {
	path := filepath.Join(dir, SchemaName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: read %s: %w", path, err)
	}
	text := strings.TrimSpace(string(b))
	n, err := strconv.Atoi(strings.TrimPrefix(text, schemaPrefix))
	if !strings.HasPrefix(text, schemaPrefix) || err != nil || n < 1 {
		return 0, fmt.Errorf("%w: %s does not name a schema (%q); a database of schema %d holds %q",
			ErrCorrupt, path, cut(text, 40), schema.Version, schemaPrefix+strconv.Itoa(schema.Version))
	}
	return n, nil
}

// checkSchema refuses a folder of another schema than schema.Version
// before anything in it is changed.
func checkSchema(dir string) (known bool, err error) {
	n, err := readSchema(dir)
	if err != nil {
		return false, err
	}
	if n > schema.Version {
		return false, fmt.Errorf("%w: %s holds a database of schema %d, and this Parley reads schema %d: run the Parley that wrote it, or a newer one; nothing in the folder was changed",
			ErrNewerSchema, dir, n, schema.Version)
	}
	// An older schema's folder is read as it is (schema 2 reads schema 1's
	// whole records) and recorded as this one once open.
	return n == schema.Version, nil
}

// writeSchema records schema.Version in the folder, atomically.
func writeSchema(dir string) error {
	return atomicfile.Replace(filepath.Join(dir, SchemaName), []byte(schemaPrefix+strconv.Itoa(schema.Version)+"\n"), 0o600)
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
