package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/y"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// DB is an open Parley database.
type DB struct {
	bdb   *badger.DB
	dir   string
	space *space
	j     *journal // nil: Sync syncs Badger itself (no room for a journal at Open)

	closeOnce sync.Once
	closeErr  error

	syncMu      sync.Mutex
	syncRunning bool         // a sync round runs (Sync)
	syncWaiters []chan error // callers waiting for the next round
	fsync       func() error // Badger's Sync; tests slow it down

	t *timings
}

// Config configures a database. Zero values are documented.
type Config struct {
	// Dir is the database folder; it is created (mode 0700) if missing.
	Dir string
	// Logger receives Badger's log lines; nil discards them.
	Logger *slog.Logger
	// MinFree is the free-space floor in bytes: below it writes fail with
	// ErrDiskFull and reads go on. Zero means DefaultMinFree; negative
	// turns the floor (and the reserve file) off.
	MinFree int64
	// MemTableSize is Badger's memtable size: writes fill one in memory
	// (and its write-ahead log) before it is flushed as a table. Zero
	// means DefaultMemTableSize. Keep it for a folder, or let it only
	// grow: a memtable a crash left unflushed is replayed into one of the
	// new size, and Badger stops if it does not fit.
	MemTableSize int64

	// freeSpace replaces the statfs of the database's disk in tests.
	freeSpace func(dir string) (int64, error)
	// journalMax replaces journalMax in tests.
	journalMax int64
}

// DefaultMemTableSize is the memtable size of Options.
const DefaultMemTableSize = 4 << 20

// ValueThreshold is the size from which a value is kept in the value log
// rather than in the table.
const ValueThreshold = 1 << 10

// Options returns Badger options sized for a laptop: small memtables and
// caches, so an idle node's heap stays near 24 MiB instead of ~88 MiB.
// Every block read from a table and every value read from a value log is
// checked against its checksum, so damage reads as an error (ErrCorrupt),
// never as data. Transactions are not checked for conflicts: Apply's only
// read nothing, so none could conflict, and the check costs every write.
//
// A memtable's arena (4 MiB and 15 % for a batch, 5.2 MiB) is allocated
// whole from the Go heap but becomes resident only as it fills, so a
// node's RSS climbs until its memtables have cycled once and then
// saw-tooths around its level (the flush frees the full arena): at 20
// events a second a memtable cycles every 3–4 minutes (at 8 MiB it took
// twice as long, and the GC's heap goal counted twice the bigger arena).
// A value from 1 KiB on goes to the value log, so an event whose body is
// over ~850 bytes dirties two files, and the fsync of a post flushes both.
// A 4 KiB threshold flushed one (fanout say p50 1.9 -> 1.3 ms) but kept
// bodies in the tables: memtables filled three times as fast and their
// flushes and compactions fell behind in the soak (50 nodes, 100 msg/s:
// anonymous RSS +180 MiB/min and Say p99 1.4 s, against flat and 44 ms).
// The largest write Badger takes in one transaction is 15 % of a memtable
// (629 KB): a room writes its batches in transactions of at most 320 KiB
// and one event (rooms.writeChunk).
func Options(dir string, log *slog.Logger) badger.Options {
	return badger.DefaultOptions(dir).
		WithLogger(badgerLogger{log}).
		WithMemTableSize(DefaultMemTableSize).
		WithNumMemtables(2).
		WithBaseTableSize(2 << 20).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(8).
		WithValueLogFileSize(64 << 20).
		WithValueThreshold(ValueThreshold).
		WithBlockCacheSize(8 << 20).
		WithIndexCacheSize(4 << 20).
		WithNumCompactors(2).
		WithChecksumVerificationMode(options.OnBlockRead).
		WithVerifyValueChecksum(true).
		WithMetricsEnabled(false).
		WithDetectConflicts(false)
}

// Open opens (or creates) the database in dir with the default floor.
func Open(dir string, log *slog.Logger) (*DB, error) {
	return OpenConfig(Config{Dir: dir, Logger: log})
}

// OpenConfig opens (or creates) the database cfg.Dir. It first runs Check:
// a damaged database is refused with an error wrapping ErrCorrupt, and
// nothing in the folder is changed. Below the free-space floor the
// database opens for reading, and writes fail with ErrDiskFull until space
// is freed.
func OpenConfig(cfg Config) (_ *DB, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.MinFree == 0 {
		cfg.MinFree = DefaultMinFree
	}
	known, err := checkSchema(cfg.Dir)
	if err != nil {
		return nil, err
	}
	if err := Check(cfg.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: create %s: %w", cfg.Dir, err)
	}
	sp := newSpace(cfg.Dir, cfg.MinFree, cfg.freeSpace, log)
	sp.open()
	defer recoverCorrupt(&err, "open "+cfg.Dir)
	opts := Options(cfg.Dir, log)
	if cfg.MemTableSize > 0 {
		opts = opts.WithMemTableSize(cfg.MemTableSize)
	}
	bdb, err := badger.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", cfg.Dir, classify(err))
	}
	db := &DB{bdb: bdb, dir: cfg.Dir, space: sp, fsync: bdb.Sync, t: newTimings()}
	jmax := cfg.journalMax
	if jmax == 0 {
		jmax = journalMax
	}
	j, err := openJournal(cfg.Dir, bdb, log, jmax, db.t.epoch)
	switch {
	case err == nil:
		db.j, db.fsync = j, j.sync
	case errors.Is(err, errNoRoom):
		// Badger's Sync covers only the memtable being written: a full
		// one waiting to be flushed has its log synced here, as a new
		// epoch does.
		db.fsync = func() error {
			if err := bdb.Sync(); err != nil {
				return err
			}
			return syncLogs(cfg.Dir)
		}
		log.Warn("no room for the write journal: every durable write syncs the database itself until a restart finds room", "err", err)
	default:
		bdb.Close()
		return nil, err
	}
	if !known {
		// Without the file the folder is schema 1 all the same: a failure
		// here costs nothing but the next open's second try.
		if err := writeSchema(cfg.Dir); err != nil {
			log.Warn("the database's schema file was not written", "err", err)
		}
	}
	return db, nil
}

// Dir is the database folder.
func (db *DB) Dir() string { return db.dir }

// Full reports whether writes are refused for lack of disk space.
func (db *DB) Full() bool { return db.space.isFull() }

// Get returns a copy of the value at key, or ErrNotFound.
func (db *DB) Get(key []byte) (_ []byte, err error) {
	defer recoverCorrupt(&err, "read")
	var out []byte
	err = db.bdb.View(func(txn *badger.Txn) error {
		it, err := txn.Get(key)
		if err != nil {
			return err
		}
		out, err = it.ValueCopy(nil)
		if err == nil {
			err = checkValue(it, out)
		}
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if errors.Is(err, badger.ErrDBClosed) {
		return nil, ErrClosed
	}
	if err != nil {
		return nil, fmt.Errorf("store: read: %w", classify(err))
	}
	return out, nil
}

// Set writes one key.
func (db *DB) Set(key, val []byte) error {
	return db.Apply([]schema.Op{{Key: key, Val: val}}, false)
}

// Delete removes one key.
func (db *DB) Delete(key []byte) error {
	return db.Apply([]schema.Op{{Key: key, Delete: true}}, false)
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
func (db *DB) ScanFrom(prefix, start []byte, reverse bool, fn func(key, val []byte) bool) (err error) {
	defer recoverCorrupt(&err, "scan")
	err = db.bdb.View(func(txn *badger.Txn) error {
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
				if err := checkValue(item, v); err != nil {
					return err
				}
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
	if errors.Is(err, badger.ErrDBClosed) {
		return ErrClosed
	}
	if err != nil {
		return fmt.Errorf("store: scan: %w", classify(err))
	}
	return nil
}

// CheckSpace returns the error Apply would return for a write of about n
// bytes of keys and values (32 more an op) because the disk is nearly full
// (wrapping ErrDiskFull), or because a queued write failed the store, so a
// caller can find out before it acts on a write it has yet to make.
func (db *DB) CheckSpace(n int) error {
	if db.j != nil {
		if err := db.j.failure(); err != nil {
			return err
		}
	}
	return db.space.check(n)
}

// Problem returns why the store refuses writes now, or nil: a queued
// write failed (writes stay refused until a restart replays the journal),
// or the disk is below the free-space floor (wrapping ErrDiskFull; writes
// go on once there is space). A node shows it in its status and metrics,
// so an operator learns of it before an agent's post is refused.
func (db *DB) Problem() error { return db.CheckSpace(0) }

// Apply writes ops atomically (one transaction; keep batches to a few
// thousand keys). With durable set it returns only once the
// batch is on disk (fsync), so a crash cannot lose it. Below the
// free-space floor it writes nothing and returns an error wrapping
// ErrDiskFull.
func (db *DB) Apply(ops []schema.Op, durable bool) error {
	return db.apply(ops, durable, false)
}

// ApplyQueued writes ops atomically like Apply without durable, but
// returns once Badger has their transaction queued rather than written:
// the caller goes on while Badger writes. Every read that begins after it
// returns sees ops. The write journal holds them already, so a later Sync
// makes them durable as usual. A failure Badger reports later fails the
// store: every later write returns it, and a restart replays the journal,
// this write included. Badger keeps ops' keys and values until it has
// written them: they must not change after the call. Without a journal it
// is Apply.
func (db *DB) ApplyQueued(ops []schema.Op) error {
	return db.apply(ops, false, true)
}

func (db *DB) apply(ops []schema.Op, durable, queue bool) (err error) {
	defer recoverCorrupt(&err, "write")
	size := 0
	for _, op := range ops {
		size += len(op.Key) + len(op.Val) + 32
	}
	if err := db.space.check(size); err != nil {
		return err
	}
	start := time.Now()
	if db.j != nil {
		err = db.j.write(ops, queue)
	} else {
		err = applyOps(db.bdb, ops)
	}
	since(db.t.write, start)
	if errors.Is(err, badger.ErrDBClosed) {
		return ErrClosed
	}
	if err != nil {
		return fmt.Errorf("store: write %d keys: %w", len(ops), classify(err))
	}
	if durable {
		if err := db.Sync(); err != nil {
			return fmt.Errorf("store: sync: %w", classify(err))
		}
	}
	return nil
}

// Sync makes every write so far durable. Concurrent callers share the
// fsync (group commit): a caller that arrives while one runs waits for the
// next, which starts once it ends and covers every caller that came
// meanwhile, so N rooms syncing at once cost about two fsyncs, not N.
func (db *DB) Sync() error {
	ch := make(chan error, 1)
	db.syncMu.Lock()
	db.syncWaiters = append(db.syncWaiters, ch)
	lead := !db.syncRunning
	db.syncRunning = true
	db.syncMu.Unlock()
	if lead {
		db.syncRounds()
	}
	return <-ch
}

// syncRounds runs an fsync round for the callers waiting when it starts.
// If more came meanwhile, another goroutine runs their round, so the
// caller that led this one returns.
func (db *DB) syncRounds() {
	db.syncMu.Lock()
	waiters := db.syncWaiters
	db.syncWaiters = nil
	db.syncMu.Unlock()
	err := db.syncOnce()
	for _, ch := range waiters {
		ch <- err
	}
	db.syncMu.Lock()
	more := len(db.syncWaiters) > 0
	db.syncRunning = more
	db.syncMu.Unlock()
	if more {
		go db.syncRounds()
	}
}

func (db *DB) syncOnce() (err error) {
	defer recoverCorrupt(&err, "sync")
	defer since(db.t.flush, time.Now())
	return db.fsync()
}

// Close closes the database. It is safe to call more than once. Below the
// free-space floor the reserve file is given to Badger first, for the
// memtable it flushes on the way out.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		defer recoverCorrupt(&db.closeErr, "close")
		var jerr error
		if db.j != nil {
			jerr = db.j.close()
		}
		db.space.close()
		db.closeErr = errors.Join(jerr, db.bdb.Close())
	})
	return db.closeErr
}

// applyOps writes ops to bdb in one transaction.
func applyOps(bdb *badger.DB, ops []schema.Op) error {
	return bdb.Update(func(txn *badger.Txn) error { return setOps(txn, ops) })
}

// setOps adds ops to txn.
func setOps(txn *badger.Txn, ops []schema.Op) error {
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
}

// checkValue catches a value Badger could not read from its value log: it
// logs the failure (a checksum mismatch, a pointer past the end of a log
// cut short) and hands back an empty value, where the key says there is
// one.
func checkValue(item *badger.Item, v []byte) error {
	if len(v) == 0 && item.ValueSize() > 0 {
		return fmt.Errorf("%w: the value of a key cannot be read from the value log (checksum mismatch or a log cut short)", ErrCorrupt)
	}
	return nil
}

// classify wraps Badger's checksum and truncation errors in ErrCorrupt.
func classify(err error) error {
	if errors.Is(err, y.ErrChecksumMismatch) || errors.Is(err, badger.ErrTruncateNeeded) {
		return fmt.Errorf("%w: %s", ErrCorrupt, firstLine(err))
	}
	return err
}

// recoverCorrupt turns a panic inside Badger, on the caller's goroutine,
// into an error wrapping ErrCorrupt: Badger panics on some damage it meets
// while reading.
func recoverCorrupt(err *error, op string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: Badger failed to %s (%s)", ErrCorrupt, op, firstLine(fmt.Errorf("%v", r)))
	}
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
func (b badgerLogger) Infof(f string, a ...any) { b.debug(f, a) }

func (b badgerLogger) Debugf(f string, a ...any) { b.debug(f, a) }

// debug formats a line only when debug lines are logged: Badger writes one
// for every write.
func (b badgerLogger) debug(f string, a []any) {
	if b.l.Enabled(context.Background(), slog.LevelDebug) {
		b.l.Debug(fmt.Sprintf(f, a...), "component", "badger")
	}
}
