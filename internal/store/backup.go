package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/dgraph-io/badger/v4"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// Backup writes a consistent copy of every key to w, as one read sees them
// (Badger's backup stream). Writes go on meanwhile; those after the read
// began are not in the copy.
func (db *DB) Backup(w io.Writer) (err error) {
	defer recoverCorrupt(&err, "backup")
	if _, err := db.bdb.Backup(w, 0); err != nil {
		if errors.Is(err, badger.ErrDBClosed) {
			return ErrClosed
		}
		return fmt.Errorf("store: backup: %w", classify(err))
	}
	return nil
}

// Restore makes a new database in dir from r, a stream Backup wrote, for
// node (the peer ID bytes its m/node key must hold). dir must hold no
// database. The copy's write-journal epoch is dropped: the new folder has
// no journal to match it. On an error the folder may hold part of the copy;
// the caller removes it.
func Restore(dir string, r io.Reader, node []byte) (err error) {
	c, err := Inspect(dir)
	if err != nil {
		return err
	}
	if !c.Empty() {
		return fmt.Errorf("store: restore: %s already holds a database", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("store: create %s: %w", dir, err)
	}
	defer recoverCorrupt(&err, "restore into "+dir)
	bdb, err := badger.Open(Options(dir, slog.New(slog.DiscardHandler)))
	if err != nil {
		return fmt.Errorf("store: open %s: %w", dir, classify(err))
	}
	defer func() {
		if cerr := bdb.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("store: close %s: %w", dir, cerr)
		}
	}()
	if err := bdb.Load(r, 256); err != nil {
		return fmt.Errorf("store: restore: the copy does not read as a database backup: %w", err)
	}
	err = bdb.Update(func(txn *badger.Txn) error {
		it, err := txn.Get(schema.KeyNode())
		if errors.Is(err, badger.ErrKeyNotFound) {
			return errors.New("store: restore: the copy holds no node's database (no m/node key)")
		}
		if err != nil {
			return err
		}
		owner, err := it.ValueCopy(nil)
		if err != nil {
			return err
		}
		if !bytes.Equal(owner, node) {
			return errors.New("store: restore: the copy's database is another node's than its key's")
		}
		return txn.Delete(schema.KeyJournal())
	})
	if err != nil {
		return err
	}
	if err := bdb.Sync(); err != nil {
		return fmt.Errorf("store: sync %s: %w", dir, err)
	}
	return writeSchema(dir)
}
