package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// A write that must be durable (Sync) used to flush Badger itself: two
// msyncs of memory-mapped logs. The journal makes that one fdatasync of a
// plain file: every Apply appends its operations to the journal (a write,
// no flush) and then writes them to Badger, in the same order under one
// lock, and Sync flushes the journal only. The journal thus holds every
// write since Badger was last made durable; after a crash or a power loss
// Open writes them all to Badger again, in order, makes Badger durable and
// starts an empty journal. It starts empty again the same way (a new
// epoch) whenever it fills, at Open and at Close: Badger's DB.Sync, which
// covers only the memtable being written, then an fsync of every
// write-ahead log and value log in the folder (a memtable waiting to be
// flushed as a table has its log unsynced), then the next epoch stored at
// schema.KeyJournal and synced, then the header rewritten.
//
// The file is written in place, never sparse: 1 MiB of zeros at a time
// up to journalMax, and from the start again after each new epoch, so an
// fdatasync flushes data and no block allocation. Each record carries its
// epoch, its number and a CRC-32C; a replay reads the header's epoch's
// records from the start and stops at the first that is not whole (a
// write the crash cut short: not acknowledged, as no Sync had returned).
//
// Every whole record is replayed, whatever Badger holds: after a power
// loss Badger's logs are not a prefix of its writes (the value log and
// each memtable's log lose pages apart), so a write the journal
// acknowledged may be missing or unreadable there although later ones
// are not. Writing a record again sets its keys to what the write set;
// a later write Badger kept but the journal lost (never acknowledged) may
// then lose some of its keys. A journal is replayed only if its epoch is
// Badger's: one restored from an older copy (or beside an older database)
// holds writes that may have been overwritten since, and is left
// unreplayed, with a warning.

// JournalName is the write journal in the database folder.
const JournalName = "parley.journal"

const (
	journalMagic     = "PARLEYJ1"
	journalHeaderLen = 512 // one sector: written whole or not at all
	journalChunk     = 1 << 20
	journalMax       = 4 << 20
	recordMark       = 0xA7
	recordHeaderLen  = 1 + 4 + 8 + 8 + 4 // mark, payload length, epoch, number, CRC
	maxKeySize       = 65000             // Badger's
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// journal is the write journal of one database.
type journal struct {
	bdb *badger.DB
	log *slog.Logger
	max int64 // file size at which a new epoch starts (journalMax; tests lower it)

	flush  func() error        // fdatasync of f (journal_linux.go)
	epochs prometheus.Observer // how long each new epoch takes

	mu      sync.Mutex
	f       *os.File
	epoch   uint64
	seq     uint64 // the number of the epoch's last record
	off     int64  // where the next record goes
	size    int64  // bytes of the file written (records or zeros)
	stale   bool   // a failed write may have left part of a record: start a new epoch first
	closed  bool
	started int // new epochs started since open (tests)

	// Queued writes (applyQueued) that Badger has not finished. A new
	// epoch waits for them: it must not drop a record Badger lacks.
	queued sync.WaitGroup
	// failed is the first error Badger gave a queued write. Its record
	// stays in the journal, and so does every later one: no new epoch
	// starts and no write is taken until a restart replays them.
	failMu sync.Mutex
	failed error
	// commitFault, if set, stands for Badger's answer to a queued write
	// (tests).
	commitFault func() error
}

// openJournal opens (or creates) the journal of dir, writes to bdb what
// it holds of the current epoch and starts a new epoch.
func openJournal(dir string, bdb *badger.DB, log *slog.Logger, max int64, epochs prometheus.Observer) (*journal, error) {
	path := filepath.Join(dir, JournalName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: open journal: %w", err)
	}
	j := &journal{bdb: bdb, log: log, max: max, f: f, epochs: epochs}
	j.flush = newFlusher(f)
	noReadahead(f)
	if err := j.recover(); err != nil {
		f.Close()
		return nil, err
	}
	return j, nil
}

// recover replays the journal's current epoch into Badger and starts the
// next one.
func (j *journal) recover() error {
	data, err := io.ReadAll(io.NewSectionReader(j.f, 0, j.max))
	if err != nil {
		return fmt.Errorf("store: read journal: %w", err)
	}
	info, err := j.f.Stat()
	if err != nil {
		return fmt.Errorf("store: read journal: %w", err)
	}
	j.size = info.Size()
	stored, err := j.storedEpoch()
	if err != nil {
		return err
	}
	epoch, ok := parseJournalHeader(data)
	var recs []byte // the records to replay, of epoch
	switch {
	case !ok && len(data) == 0:
		if stored > 0 {
			j.log.Warn("the write journal is missing; writes since the database was last synced may be lost", "file", j.f.Name())
		}
	case !ok && stored > 0 && len(data) > journalHeaderLen && len(readRecords(data[journalHeaderLen:], stored)) > 0:
		// Each record carries its epoch and CRC: those of Badger's epoch
		// are this database's, acknowledged perhaps.
		j.log.Error("the write journal's header is damaged; its records of this database's epoch are replayed", "file", j.f.Name())
		epoch, recs = stored, data[journalHeaderLen:]
	case !ok:
		j.log.Warn("the write journal's header is unreadable; not replayed", "file", j.f.Name())
	case epoch != stored:
		j.log.Warn("the write journal is not of this database's epoch; not replayed (the database was made durable as the journal's epoch ended, or one of them was restored from another copy)",
			"journal_epoch", epoch, "database_epoch", stored)
	default:
		recs = data[journalHeaderLen:]
	}
	if recs != nil {
		n := 0
		whole := readRecords(recs, epoch)
		if wholeRecordAfter(recs, epoch, uint64(len(whole))) {
			j.log.Error("the write journal is damaged: a record is unreadable and later ones are whole; only the writes before it are replayed, and writes acknowledged after it may be lost",
				"file", j.f.Name(), "replayed", len(whole))
		}
		for _, ops := range whole {
			err := applyOps(j.bdb, ops)
			if errors.Is(err, badger.ErrTxnTooBig) || errors.Is(err, badger.ErrEmptyKey) || errors.Is(err, badger.ErrInvalidKey) {
				// Refused when it was written too; the crash came before
				// its record was taken out.
				j.log.Warn("a write in the journal that the database refuses is skipped", "err", err)
				continue
			}
			if err != nil {
				return fmt.Errorf("store: replay the write journal: %w", classify(err))
			}
			n++
		}
		if n > 0 {
			j.log.Info("write journal replayed", "writes", n)
		}
	}
	j.epoch = max(epoch, stored)
	if err := j.newEpoch(); err != nil {
		if errors.Is(err, ErrDiskFull) && !ok {
			return fmt.Errorf("%w: %w", errNoRoom, err)
		}
		return err
	}
	if first := min(j.max, journalHeaderLen+journalChunk); j.size < first {
		// The new epoch holds nothing, so a store that goes on without a
		// journal leaves nothing to replay.
		if err := j.extend(first); err != nil {
			if errors.Is(err, ErrDiskFull) {
				return fmt.Errorf("%w: %w", errNoRoom, err)
			}
			return fmt.Errorf("store: make journal: %w", err)
		}
	}
	// The file's name in its folder must be as durable as what it holds.
	return syncDir(filepath.Dir(j.f.Name()))
}

// errNoRoom is a journal that could not be made for lack of disk space.
var errNoRoom = errors.New("store: no room for the write journal")

// storedEpoch is the journal's epoch recorded in Badger (0 if none).
func (j *journal) storedEpoch() (uint64, error) {
	var e uint64
	err := j.bdb.View(func(txn *badger.Txn) error {
		item, err := txn.Get(schema.KeyJournal())
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if len(v) != 8 {
				return fmt.Errorf("%w: the journal's epoch is %d bytes, want 8", ErrCorrupt, len(v))
			}
			e = binary.BigEndian.Uint64(v)
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("store: read the journal's epoch: %w", classify(err))
	}
	return e, nil
}

// newEpoch makes every write so far durable in Badger and starts an empty
// journal. Called with mu held (or before the journal is shared). If it
// fails, Badger may hold the next epoch while the header holds this one:
// the journal is stale, and takes no record before a new epoch starts (a
// record of this epoch would not be replayed).
func (j *journal) newEpoch() (err error) {
	defer since(j.epochs, time.Now())
	defer func() {
		if err != nil {
			j.stale = true
		}
	}()
	j.queued.Wait()
	if err := j.failure(); err != nil {
		return err
	}
	// A failed fsync may have dropped Badger's pages, and the next one
	// succeeds: the journal is then the only copy of acknowledged
	// writes, kept for a restart to replay.
	if err := j.bdb.Sync(); err != nil {
		return j.fail(fmt.Errorf("store: sync: %w", classify(err)))
	}
	if err := syncLogs(filepath.Dir(j.f.Name())); err != nil {
		if errors.Is(err, errFsync) {
			return j.fail(fmt.Errorf("store: sync: %w", err))
		}
		return fmt.Errorf("store: sync: %w", err)
	}
	next := j.epoch + 1
	if err := applyOps(j.bdb, []schema.Op{{Key: schema.KeyJournal(), Val: schema.BE8(next)}}); err != nil {
		return fmt.Errorf("store: write the journal's epoch: %w", classify(err))
	}
	if err := j.bdb.Sync(); err != nil {
		return fmt.Errorf("store: sync: %w", classify(err))
	}
	if _, err := j.f.WriteAt(journalHeader(next), 0); err != nil {
		return fmt.Errorf("store: write journal header: %w", diskFull(err))
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("store: sync journal: %w", err)
	}
	j.epoch, j.seq, j.off, j.stale = next, 0, journalHeaderLen, false
	j.size = max(j.size, journalHeaderLen)
	j.started++
	return nil
}

// syncLogs fsyncs every write-ahead log (.mem) and value log (.vlog) in
// Badger's folder: DB.Sync covers only the memtable being written, and a
// full one waiting to be flushed as a table has its log unsynced. A log
// removed meanwhile was flushed as a table (synced) first.
func syncLogs(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if filepath.Ext(name) != ".mem" && filepath.Ext(name) != ".vlog" {
			continue
		}
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		err = fileSync(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%w: %s: %w", errFsync, name, err)
		}
	}
	return nil
}

// errFsync is an fsync of one of Badger's logs that failed.
var errFsync = errors.New("fsync")

// fail fails the journal with err, unless it failed already, and returns
// err: no write is taken and no new epoch starts (which would drop
// records Badger may lack) until a restart replays the journal.
func (j *journal) fail(err error) error {
	j.failMu.Lock()
	first := j.failed == nil
	if first {
		j.failed = fmt.Errorf("store: the database failed to sync; no write is taken until a restart replays the journal: %w", err)
	}
	j.failMu.Unlock()
	if first {
		j.log.Error("the database failed to sync; the store takes no more writes, and a restart replays the write journal", "err", err)
	}
	return err
}

// fileSync is f.Sync but in tests.
var fileSync = (*os.File).Sync

// extendFault, if set, stands for the disk's answer to the journal's
// growth (tests).
var extendFault func() error

// syncDir makes the folder's entries durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("store: sync folder: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("store: sync folder: %w", err)
	}
	return nil
}

// diskFull wraps an error of a full disk or quota in ErrDiskFull.
func diskFull(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w (journal: %v)", ErrDiskFull, err)
	}
	return err
}

// zeroWrite is the size of extend's writes: one page. The page cache
// makes a file's pages as large as the writes that create them (ext4 on
// Linux 6.16 on), and every later small write into a large page walks all
// its blocks: with 1 MiB writes here, a record's write cost ~17 µs more
// CPU (perf, -n 12 fanout).
const zeroWrite = 4 << 10

// extend writes zeros from the file's end up to size.
func (j *journal) extend(size int64) error {
	if extendFault != nil {
		if err := extendFault(); err != nil {
			return diskFull(err)
		}
	}
	zeros := make([]byte, zeroWrite)
	for j.size < size {
		n := min(int64(len(zeros)), size-j.size)
		if _, err := j.f.WriteAt(zeros[:n], j.size); err != nil {
			return diskFull(err)
		}
		j.size += n
	}
	return nil
}

// write appends ops to the journal and then writes them to Badger, both
// under the lock, so the journal's order is Badger's. With queue set it
// returns once Badger has the transaction queued (applyQueued).
func (j *journal) write(ops []schema.Op, queue bool) error {
	if err := checkOps(ops); err != nil {
		return err
	}
	rec := newRecord(ops)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrClosed
	}
	if err := j.failure(); err != nil {
		return err
	}
	if j.stale {
		if err := j.newEpoch(); err != nil {
			return err
		}
	}
	n := int64(len(rec))
	if n > j.max-journalHeaderLen {
		// Too big for any journal: written to Badger between two new
		// epochs, so no replay can write older writes over it.
		if err := j.newEpoch(); err != nil {
			return err
		}
		if err := applyOps(j.bdb, ops); err != nil {
			return err
		}
		return j.newEpoch()
	}
	if j.off+n > j.max {
		if err := j.newEpoch(); err != nil {
			return err
		}
	}
	if end := j.off + n; end > j.size {
		if err := j.extend(min(j.max, (end+journalChunk-1)/journalChunk*journalChunk)); err != nil {
			return fmt.Errorf("store: extend journal: %w", err)
		}
	}
	seq := j.seq + 1
	sealRecord(rec, j.epoch, seq)
	if _, err := j.f.WriteAt(rec, j.off); err != nil {
		j.stale = true // part of it may be there
		return fmt.Errorf("store: write journal: %w", diskFull(err))
	}
	apply := applyOps
	if queue {
		apply = j.applyQueued
	}
	if err := apply(j.bdb, ops); err != nil {
		// Badger refused it: the record must not be replayed, and the
		// next write goes in its place.
		if _, zerr := j.f.WriteAt([]byte{0}, j.off); zerr != nil {
			j.stale = true
		}
		return err
	}
	j.seq, j.off = seq, j.off+n
	return nil
}

// applyQueued hands ops to Badger as one transaction and returns without
// waiting for Badger to write it. Badger gives the transaction its commit
// timestamp here, and every read that begins later waits until the
// transactions before its own timestamp are written, so a read after
// this call sees ops. What Badger refuses before queueing (a transaction
// too big, a bad key) comes back here; a failure after (the disk) comes
// to committed, and fails the journal.
func (j *journal) applyQueued(bdb *badger.DB, ops []schema.Op) error {
	txn := bdb.NewTransaction(true)
	if err := setOps(txn, ops); err != nil {
		txn.Discard()
		return err
	}
	j.queued.Add(1) // CommitWith always calls back, unless it panics
	called := false
	defer func() {
		if !called {
			j.queued.Done() // a panic, passed on: a new epoch must not wait for it
		}
	}()
	txn.CommitWith(j.committed)
	called = true
	return nil
}

// committed is Badger's answer to a queued write.
func (j *journal) committed(err error) {
	defer j.queued.Done()
	if j.commitFault != nil {
		err = j.commitFault()
	}
	if err == nil {
		return
	}
	j.failMu.Lock()
	first := j.failed == nil
	if first {
		j.failed = fmt.Errorf("store: a queued write failed; no write is taken until a restart replays the journal: %w", classify(diskFull(err)))
	}
	j.failMu.Unlock()
	if first {
		j.log.Error("the database failed a queued write; the store takes no more writes, and a restart replays the write journal", "err", err)
	}
}

// failure is the error that failed the journal, if any.
func (j *journal) failure() error {
	j.failMu.Lock()
	defer j.failMu.Unlock()
	return j.failed
}

// checkOps refuses, before they reach the journal, writes Badger would
// refuse for their keys.
func checkOps(ops []schema.Op) error {
	for _, op := range ops {
		switch {
		case len(op.Key) == 0:
			return badger.ErrEmptyKey
		case len(op.Key) > maxKeySize:
			return fmt.Errorf("store: a key of %d bytes (at most %d)", len(op.Key), maxKeySize)
		}
	}
	return nil
}

// sync flushes the journal: every write that returned before it began is
// durable once it returns. If the flush fails (the kernel may have
// dropped the pages it could not write, and the journal may have a hole
// that would end a replay early), Badger is made durable instead and a
// new epoch begins.
func (j *journal) sync() error {
	j.mu.Lock()
	closed := j.closed
	j.mu.Unlock()
	if closed {
		return ErrClosed
	}
	err := j.flush()
	if err == nil {
		return nil
	}
	if errors.Is(err, os.ErrClosed) {
		return ErrClosed
	}
	j.log.Error("write journal flush failed; making the database durable instead", "err", err)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return ErrClosed
	}
	if nerr := j.newEpoch(); nerr != nil {
		j.stale = true
		return fmt.Errorf("store: sync journal: %w (and the database: %v)", err, nerr)
	}
	return nil
}

// close syncs Badger, starts an empty epoch (nothing to replay at the next
// Open) and closes the file. Writes after it fail with ErrClosed.
func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	err := j.newEpoch()
	if j.failure() != nil {
		// The records stay for the next Open to replay.
		j.log.Warn("the write journal is kept for the next start to replay", "file", j.f.Name())
	}
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// journalHeader is the header of an epoch's journal.
func journalHeader(epoch uint64) []byte {
	h := make([]byte, journalHeaderLen)
	copy(h, journalMagic)
	binary.BigEndian.PutUint64(h[8:], epoch)
	binary.BigEndian.PutUint32(h[16:], crc32.Checksum(h[:16], castagnoli))
	return h
}

// parseJournalHeader reads the epoch of a journal's header.
func parseJournalHeader(b []byte) (uint64, bool) {
	if len(b) < journalHeaderLen || string(b[:8]) != journalMagic {
		return 0, false
	}
	if crc32.Checksum(b[:16], castagnoli) != binary.BigEndian.Uint32(b[16:]) {
		return 0, false
	}
	return binary.BigEndian.Uint64(b[8:]), true
}

// A record is: mark, payload length (4 bytes), epoch (8), seq (8),
// CRC-32C of length, epoch, seq and payload (4), payload.

// newRecord returns a record whose payload holds ops (appendOps), its
// header left for sealRecord: encoded outside the journal's lock, in one
// allocation.
func newRecord(ops []schema.Op) []byte {
	return appendOps(make([]byte, recordHeaderLen, recordHeaderLen+opsSize(ops)), ops)
}

// sealRecord writes rec's header, as record seq of epoch.
func sealRecord(rec []byte, epoch, seq uint64) {
	payload := rec[recordHeaderLen:]
	rec[0] = recordMark
	binary.BigEndian.PutUint32(rec[1:], uint32(len(payload)))
	binary.BigEndian.PutUint64(rec[5:], epoch)
	binary.BigEndian.PutUint64(rec[13:], seq)
	crc := crc32.Update(crc32.Checksum(rec[1:21], castagnoli), castagnoli, payload)
	binary.BigEndian.PutUint32(rec[21:], crc)
}

// readRecords returns the operations of each whole record of epoch in b,
// numbered 1, 2, … from its start, until one is not: zeros, a record of
// another epoch or out of turn, one cut short or failing its CRC, or one
// whose operations do not decode.
func readRecords(b []byte, epoch uint64) [][]schema.Op {
	var recs [][]schema.Op
	for len(b) >= recordHeaderLen && b[0] == recordMark {
		size := uint64(binary.BigEndian.Uint32(b[1:]))
		if binary.BigEndian.Uint64(b[5:]) != epoch || binary.BigEndian.Uint64(b[13:]) != uint64(len(recs))+1 ||
			size > uint64(len(b)-recordHeaderLen) {
			break
		}
		payload := b[recordHeaderLen : recordHeaderLen+size]
		crc := crc32.Update(crc32.Checksum(b[1:21], castagnoli), castagnoli, payload)
		if crc != binary.BigEndian.Uint32(b[21:]) {
			break
		}
		ops, err := decodeOps(payload)
		if err != nil {
			break
		}
		recs = append(recs, ops)
		b = b[recordHeaderLen+size:]
	}
	return recs
}

// wholeRecordAfter reports whether b holds, anywhere, a whole record of
// epoch numbered after n: one that a damaged record before it kept from
// being replayed.
func wholeRecordAfter(b []byte, epoch, n uint64) bool {
	for i := 0; i+recordHeaderLen <= len(b); i++ {
		r := b[i:]
		if r[0] != recordMark || binary.BigEndian.Uint64(r[5:]) != epoch || binary.BigEndian.Uint64(r[13:]) <= n {
			continue
		}
		size := uint64(binary.BigEndian.Uint32(r[1:]))
		if size > uint64(len(r)-recordHeaderLen) {
			continue
		}
		crc := crc32.Update(crc32.Checksum(r[1:21], castagnoli), castagnoli, r[recordHeaderLen:recordHeaderLen+size])
		if crc == binary.BigEndian.Uint32(r[21:]) {
			return true
		}
	}
	return false
}

// opsSize bounds the size of ops encoded (appendOps).
func opsSize(ops []schema.Op) int {
	n := binary.MaxVarintLen64
	for _, op := range ops {
		n += 1 + 2*binary.MaxVarintLen64 + len(op.Key) + len(op.Val)
	}
	return n
}

// appendOps appends ops encoded as a record's payload: the number of
// operations, then each as a kind byte (0 set, 1 delete), the key (uvarint
// length, bytes) and, for a set, the value (uvarint length, bytes).
func appendOps(b []byte, ops []schema.Op) []byte {
	b = binary.AppendUvarint(b, uint64(len(ops)))
	for _, op := range ops {
		if op.Delete {
			b = append(b, 1)
			b = appendBytes(b, op.Key)
			continue
		}
		b = append(b, 0)
		b = appendBytes(b, op.Key)
		b = appendBytes(b, op.Val)
	}
	return b
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// errRecord is a payload that does not decode.
var errRecord = errors.New("store: journal record malformed")

// decodeOps reads a payload written by appendOps; every byte must be used.
func decodeOps(b []byte) ([]schema.Op, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)) {
		return nil, errRecord
	}
	b = b[n:]
	ops := make([]schema.Op, 0, min(count, uint64(len(b))/3)) // an op takes 3 bytes or more
	for range count {
		if len(b) == 0 || b[0] > 1 {
			return nil, errRecord
		}
		del := b[0] == 1
		key, rest, ok := readBytes(b[1:])
		if !ok || len(key) == 0 {
			return nil, errRecord
		}
		op := schema.Op{Key: key, Delete: del}
		if !del {
			if op.Val, rest, ok = readBytes(rest); !ok {
				return nil, errRecord
			}
		}
		ops = append(ops, op)
		b = rest
	}
	if len(b) != 0 {
		return nil, errRecord
	}
	return ops, nil
}

func readBytes(b []byte) (v, rest []byte, ok bool) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return nil, nil, false
	}
	end := n + int(l)
	return b[n:end:end], b[end:], true
}
