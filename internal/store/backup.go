package store

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/dgraph-io/badger/v4"

	"github.com/parley-mesh/parley/internal/store/schema"
)

// A backup stream is backupMagic, then each key and its value, as
// uvarint(len(key)) key uvarint(len(value)) value, in key order, then
// uvarint(0) and uvarint(the number of keys): a stream cut short has no
// end, and no key is empty.
const (
	backupMagic    = "PARLEYKV1\n"
	maxBackupValue = 256 << 20
)

// ErrBadBackupStream is returned by Restore for a stream that is not a
// whole backup.
var ErrBadBackupStream = errors.New("store: not a whole database backup")

// Backup writes a copy of every key to w, as one read transaction sees
// them: writes go on meanwhile, and those that come after the read began
// are not in the copy. The write journal's epoch is left out (a restored
// folder has no journal to match it).
func (db *DB) Backup(w io.Writer) (err error) {
	defer recoverCorrupt(&err, "backup")
	bw := bufio.NewWriterSize(w, 256<<10)
	var buf [binary.MaxVarintLen64]byte
	put := func(b []byte) error {
		if _, err := bw.Write(buf[:binary.PutUvarint(buf[:], uint64(len(b)))]); err != nil {
			return err
		}
		_, err := bw.Write(b)
		return err
	}
	if _, err := bw.WriteString(backupMagic); err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	var n uint64
	err = db.bdb.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			if bytes.Equal(item.Key(), schema.KeyJournal()) {
				continue
			}
			if err := put(item.Key()); err != nil {
				return err
			}
			if err := item.Value(func(v []byte) error {
				if err := checkValue(item, v); err != nil {
					return err
				}
				return put(v)
			}); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if errors.Is(err, badger.ErrDBClosed) {
		return ErrClosed
	}
	if err == nil {
		_, err = bw.Write(buf[:binary.PutUvarint(buf[:], 0)])
	}
	if err == nil {
		_, err = bw.Write(buf[:binary.PutUvarint(buf[:], n)])
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("store: backup: %w", classify(err))
	}
	return nil
}

// Restore makes a new database in dir from r, a stream Backup wrote, for
// node (the peer ID bytes its m/node key must hold). dir must hold no
// database. On an error the folder may hold part of the copy; the caller
// removes it.
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
	wb := bdb.NewWriteBatch()
	defer wb.Cancel()
	owner, err := readBackup(r, wb.Set)
	if err != nil {
		return err
	}
	if owner == nil {
		return fmt.Errorf("%w: it holds no node's database (no m/node key)", ErrBadBackupStream)
	}
	if !bytes.Equal(owner, node) {
		return fmt.Errorf("%w: its database is another node's than its key's", ErrBadBackupStream)
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("store: restore: %w", classify(err))
	}
	if err := bdb.Sync(); err != nil {
		return fmt.Errorf("store: sync %s: %w", dir, err)
	}
	return writeSchema(dir)
}

// readBackup reads a backup stream whole, handing each key and value to
// set, and returns the value of m/node (nil if none). It reads nothing
// after the stream's end and refuses a stream cut short, with bytes after
// its end, keys out of order, or a key or value over Badger's limits.
func readBackup(r io.Reader, set func(k, v []byte) error) (owner []byte, err error) {
	br := bufio.NewReaderSize(r, 256<<10)
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadBackupStream}, a...)...)
	}
	magic := make([]byte, len(backupMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != backupMagic {
		return nil, bad("it does not begin as one")
	}
	field := func(max uint64, what string) ([]byte, error) {
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, bad("cut short in a %s's length", what)
		}
		if n > max {
			return nil, bad("a %s of %d bytes, over %d", what, n, max)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, bad("cut short in a %s", what)
		}
		return b, nil
	}
	var n uint64
	var prev []byte
	for {
		k, err := field(maxKeySize, "key")
		if err != nil {
			return nil, err
		}
		if len(k) == 0 {
			break
		}
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return nil, bad("its keys are out of order")
		}
		v, err := field(maxBackupValue, "value")
		if err != nil {
			return nil, err
		}
		if bytes.Equal(k, schema.KeyJournal()) {
			continue // the copy's epoch means nothing without its journal
		}
		if bytes.Equal(k, schema.KeyNode()) {
			owner = v
		}
		if err := set(k, v); err != nil {
			return nil, fmt.Errorf("store: restore: %w", classify(err))
		}
		prev = k
		n++
	}
	count, err := binary.ReadUvarint(br)
	if err != nil {
		return nil, bad("cut short at its end")
	}
	if count != n {
		return nil, bad("it says it holds %d keys and holds %d", count, n)
	}
	switch _, err := br.ReadByte(); {
	case err == nil:
		return nil, bad("bytes follow its end")
	case err != io.EOF:
		return nil, bad("it does not read to its end: %v", err) // a checksum that fails at the end
	}
	return owner, nil
}
