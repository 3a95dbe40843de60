package store

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/dgraph-io/badger/v4"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// DB is an open Parley database.
type DB struct {
	bdb *badger.DB

	closeOnce sync.Once
	closeErr  error
}

// Options returns Badger options sized for a laptop: small memtables and
// caches, so an idle node's heap stays near 24 MiB instead of ~88 MiB.
func Options(dir string, log *slog.Logger) badger.Options {
	return badger.DefaultOptions(dir).
		WithLogger(badgerLogger{log}).
		WithMemTableSize(8 << 20).
		WithNumMemtables(2).
		WithBaseTableSize(2 << 20).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(8).
		WithValueLogFileSize(64 << 20).
		WithValueThreshold(1 << 10).
		WithBlockCacheSize(8 << 20).
		WithIndexCacheSize(4 << 20).
		WithNumCompactors(2).
		WithMetricsEnabled(false)
}

// Open opens (or creates) the database in dir.
func Open(dir string, log *slog.Logger) (*DB, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bdb, err := badger.Open(Options(dir, log))
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dir, err)
	}
	return &DB{bdb: bdb}, nil
}

// Badger returns the underlying database for packages that keep their own
// keys under the schema in keys.go.
func (db *DB) Badger() *badger.DB { return db.bdb }

// Get returns a copy of the value at key, or ErrNotFound.
func (db *DB) Get(key []byte) ([]byte, error) {
	var out []byte
	err := db.bdb.View(func(txn *badger.Txn) error {
		it, err := txn.Get(key)
		if err != nil {
			return err
		}
		out, err = it.ValueCopy(nil)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if errors.Is(err, badger.ErrDBClosed) {
		return nil, ErrClosed
	}
	return out, err
}

// Set writes one key.
func (db *DB) Set(key, val []byte) error {
	err := db.bdb.Update(func(txn *badger.Txn) error { return txn.Set(key, val) })
	if errors.Is(err, badger.ErrDBClosed) {
		return ErrClosed
	}
	return err
}

// Delete removes one key.
func (db *DB) Delete(key []byte) error {
	err := db.bdb.Update(func(txn *badger.Txn) error { return txn.Delete(key) })
	if errors.Is(err, badger.ErrDBClosed) {
		return ErrClosed
	}
	return err
}

// Lookup returns a copy of the value at key and whether it exists.
func (db *DB) Lookup(key []byte) ([]byte, bool, error) {
	v, err := db.Get(key)
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

// Scan calls fn for each key with the prefix, in key order, until fn returns
// false. Key and value are valid only during the call.
func (db *DB) Scan(prefix []byte, fn func(key, val []byte) bool) error {
	return db.ScanFrom(prefix, nil, false, fn)
}

// ScanFrom is Scan starting at start (a key with the prefix; nil for the
// first, or with reverse, the last), in reverse key order if reverse is set.
func (db *DB) ScanFrom(prefix, start []byte, reverse bool, fn func(key, val []byte) bool) error {
	return db.bdb.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, Reverse: reverse})
		defer it.Close()
		seek := start
		if seek == nil {
			seek = prefix
			if reverse {
				seek = append(append([]byte(nil), prefix...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
			}
		}
		for it.Seek(seek); it.ValidForPrefix(prefix); it.Next() {
			item := it.Item()
			var cont bool
			if err := item.Value(func(v []byte) error {
				cont = fn(item.Key(), v)
				return nil
			}); err != nil {
				return err
			}
			if !cont {
				return nil
			}
		}
		return nil
	})
}

// Apply writes ops atomically (one transaction; keep batches to a few
// thousand keys). With durable set it returns only once the
// batch is on disk (fsync), so a crash cannot lose it.
func (db *DB) Apply(ops []schema.Op, durable bool) error {
	err := db.bdb.Update(func(txn *badger.Txn) error {
		for _, op := range ops {
			var err error
			if op.Delete {
				err = txn.Delete(op.Key)
			} else {
				err = txn.Set(op.Key, op.Val)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, badger.ErrDBClosed) {
		return ErrClosed
	}
	if err != nil {
		return fmt.Errorf("store: write %d keys: %w", len(ops), err)
	}
	if durable {
		if err := db.bdb.Sync(); err != nil {
			return fmt.Errorf("store: sync: %w", err)
		}
	}
	return nil
}

// Sync makes every write so far durable.
func (db *DB) Sync() error { return db.bdb.Sync() }

// Close closes the database. It is safe to call more than once.
func (db *DB) Close() error {
	db.closeOnce.Do(func() { db.closeErr = db.bdb.Close() })
	return db.closeErr
}

// badgerLogger sends Badger's log lines to slog; its chatty info lines go to
// debug.
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) Errorf(f string, a ...any) {
	b.l.Error(fmt.Sprintf(f, a...), "component", "badger")
}
func (b badgerLogger) Warningf(f string, a ...any) {
	b.l.Warn(fmt.Sprintf(f, a...), "component", "badger")
}
func (b badgerLogger) Infof(f string, a ...any) {
	b.l.Debug(fmt.Sprintf(f, a...), "component", "badger")
}
func (b badgerLogger) Debugf(f string, a ...any) {
	b.l.Debug(fmt.Sprintf(f, a...), "component", "badger")
}
