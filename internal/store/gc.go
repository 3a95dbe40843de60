package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// Values of ValueThreshold or more live in Badger's value logs, and an
// overwritten or deleted one keeps its bytes there until the log is
// collected: Badger rewrites a log's live values at the head of the value
// log and deletes the log. It writes them without a sync (the store runs
// without Badger's synced writes) and would delete the old log at once,
// so a power loss right after could lose values the write journal, which
// holds only the writes since its epoch, cannot give back. Badger defers
// deleting a collected log while an iterator is open, so CollectGarbage
// holds one open (a pin) until Badger is durable: the pin holds every log
// collected meanwhile, and closing it deletes them.

// gcDiscardRatio is the share of a value log that must be garbage for
// Badger to rewrite it (Badger's recommendation).
const gcDiscardRatio = 0.5

// logPin holds Badger's value logs: while its iterator is open, Badger
// deletes no log it has collected.
type logPin struct {
	txn *badger.Txn
	it  *badger.Iterator
}

// pinPrefix selects no table: the pin's iterator is never moved, and it
// need not hold the tables of the keys.
var pinPrefix = []byte{0xff, 0xff, 0xff, 0xff, 'p', 'i', 'n'}

// pinLogs opens a pin. Badger must be open.
func (db *DB) pinLogs() *logPin {
	txn := db.bdb.NewTransaction(false)
	return &logPin{txn: txn, it: txn.NewIterator(badger.IteratorOptions{Prefix: pinPrefix})}
}

// releasePins closes pins, oldest first: once no iterator is open, Badger
// deletes the logs it collected.
func releasePins(pins []*logPin) {
	for _, p := range pins {
		p.it.Close()
		p.txn.Discard()
	}
}

// CollectGarbage reclaims the disk space of overwritten and deleted values
// in the value log: it has Badger rewrite up to max value-log files of
// which half or more is garbage, makes Badger durable (a new journal
// epoch), and only then lets Badger delete the files it rewrote. It
// returns how many files were rewritten. While the store refuses writes
// (Problem) it does nothing; after Close it returns ErrClosed. Collections
// run one at a time, and Close waits for one running.
//
// If Badger cannot be made durable, the rewritten files are kept (the
// error says why) until a later collection or Close makes it durable.
func (db *DB) CollectGarbage(max int) (rewritten int, err error) {
	db.gcMu.Lock()
	defer db.gcMu.Unlock()
	if db.gcClosed {
		return 0, ErrClosed
	}
	if max <= 0 || db.Problem() != nil {
		return 0, nil
	}
	defer recoverCorrupt(&err, "collect garbage")
	// Held at once: should Badger panic below, the files it rewrote stay
	// until a later collection or Close.
	db.gcPins = append(db.gcPins, db.pinLogs())
	var gcErr error
	for rewritten < max {
		err := db.bdb.RunValueLogGC(gcDiscardRatio)
		if err == nil {
			rewritten++
			continue
		}
		if !quietGCStop(err) {
			gcErr = fmt.Errorf("store: collect the value log: %w", classify(err))
		}
		break
	}
	if rewritten == 0 && len(db.gcPins) == 1 {
		releasePins(db.gcPins) // nothing for Badger to delete
		db.gcPins = nil
		return 0, gcErr
	}
	if db.gcHook != nil {
		db.gcHook()
	}
	if err := db.gcDurable(); err != nil {
		return rewritten, errors.Join(gcErr, fmt.Errorf("store: collect the value log: the rewritten files are kept: %w", err))
	}
	releasePins(db.gcPins)
	db.gcPins = nil
	return rewritten, gcErr
}

// quietGCStop reports whether err from RunValueLogGC only ends a
// collection: no file is worth rewriting (ErrNoRewrite), another
// collection runs (ErrRejected), or the file picked is one this
// collection rewrote already, whose deletion the pin defers (Badger then
// says "value log file already marked for deletion").
func quietGCStop(err error) bool {
	return errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) ||
		strings.Contains(err.Error(), "already marked for deletion")
}

// gcDurable makes every write Badger took durable, a collection's
// rewrites among them, as a new epoch of the journal does (without a
// journal, the same syncs), and the folder's entries too: a rewrite may
// have begun a new value-log file.
func (db *DB) gcDurable() error {
	var err error
	if db.j != nil {
		err = db.j.epochNow()
	} else {
		err = syncBadger(db.bdb, db.dir)
	}
	if err != nil {
		return err
	}
	return syncDir(db.dir)
}
