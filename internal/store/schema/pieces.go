package schema

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Records a peer can make a node write over and over (contact records
// c/<peer>, node cards n/<peer>) are kept in pieces, each under the
// store's value threshold (internal/store.ValueThreshold): they live in
// Badger's tables, whose compaction drops what the node overwrote or
// deleted, rather than in the value log, which is never collected.
//
//	<key>          a value of at most PieceSize bytes that does not begin
//	               with pieceMark: the value itself (the only form older
//	               Parleys wrote, whatever the size)
//	<key>          pieceMark, count:1, length:uvarint, crc32c:4BE of the
//	               whole value, then its first PieceSize bytes
//	<key><i:1>     piece i (1 ≤ i < count) of the value: its next
//	               PieceSize bytes
//
// <key> is prefix + PeerBytes(peer): a key one byte longer is a piece of
// it, and no other peer's key (a different length byte, or different
// bytes within the same length) can be one.
const (
	// PieceSize is the most bytes of a value one piece holds.
	PieceSize = 900
	// MaxPieces is the most pieces a record has: a longer value is kept
	// whole under its key, in the value log.
	MaxPieces = 16
)

// pieceMark begins a pieced record's first value. The values kept in
// pieces are CBOR maps (0xa0–0xbf), which never begin with it.
const pieceMark = 0x00

// ErrDamagedPieces marks a record whose pieces do not make a whole value.
var ErrDamagedPieces = errors.New("schema: damaged record pieces")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// piece is the key of piece i of the record at key.
func piece(key []byte, i int) []byte {
	return append(append(make([]byte, 0, len(key)+1), key...), byte(i))
}

// SetPieces returns the ops that write val as the record at key: a value
// of at most PieceSize bytes whole, a longer one in pieces of at most
// PieceSize bytes (one more key for every PieceSize bytes), and deletes of
// every piece key the value does not use, so no piece of a longer
// version written before stays behind. A value over MaxPieces pieces is
// written whole (to the value log) with the same deletes. It fails only
// for a value it could not tell from pieces, which no caller writes.
func SetPieces(key, val []byte) ([]Op, error) {
	n := (len(val) + PieceSize - 1) / PieceSize
	marked := len(val) > 0 && val[0] == pieceMark
	if n > MaxPieces || (!marked && n <= 1) {
		if marked {
			return nil, fmt.Errorf("schema: a value of %d bytes beginning with %#x cannot be kept", len(val), pieceMark)
		}
		return append([]Op{{Key: key, Val: val}}, deletePieces(key, 1)...), nil
	}
	ops := make([]Op, 0, MaxPieces)
	head := []byte{pieceMark, byte(n)}
	head = binary.AppendUvarint(head, uint64(len(val)))
	head = binary.BigEndian.AppendUint32(head, crc32.Checksum(val, castagnoli))
	for i := range n {
		chunk := val[i*PieceSize : min((i+1)*PieceSize, len(val))]
		if i == 0 {
			ops = append(ops, Op{Key: key, Val: append(head, chunk...)})
			continue
		}
		ops = append(ops, Op{Key: piece(key, i), Val: chunk})
	}
	return append(ops, deletePieces(key, n)...), nil
}

// DeletePieces returns the ops that delete the record at key and all its
// pieces.
func DeletePieces(key []byte) []Op {
	return append([]Op{{Key: key, Delete: true}}, deletePieces(key, 1)...)
}

func deletePieces(key []byte, from int) []Op {
	ops := make([]Op, 0, MaxPieces-from)
	for i := max(from, 1); i < MaxPieces; i++ {
		ops = append(ops, Op{Key: piece(key, i), Delete: true})
	}
	return ops
}

// Joiner puts the records of a prefix scan (keys prefix + PeerBytes(peer),
// written by SetPieces or whole by an older Parley) back together. Feed it
// every key and value of the scan in key order with Add, then call Done.
type Joiner struct {
	prefix  []byte
	records []Joined
	damaged []error

	cur    []byte // the record being put together; nil: none
	whole  bool   // cur was written whole: no piece may follow
	bad    bool   // cur is damaged already (reported)
	count  int    // cur's pieces
	length uint64 // cur's value's length
	sum    uint32 // cur's value's crc32c
	next   int    // the piece expected next
	val    []byte
}

// Joined is one record put back together.
type Joined struct {
	Key, Val []byte
}

// NewJoiner returns a Joiner of the records under prefix.
func NewJoiner(prefix []byte) *Joiner { return &Joiner{prefix: prefix} }

// Add takes the next key and value of the scan; it copies both.
func (j *Joiner) Add(key, val []byte) {
	rest, ok := bytes.CutPrefix(key, j.prefix)
	if !ok || len(rest) < 1 || len(rest) < 1+int(rest[0]) || len(rest) > 2+int(rest[0]) {
		j.finish()
		j.fail(key, "a key of no record")
		return
	}
	if len(rest) == 1+int(rest[0]) {
		j.finish()
		j.start(key, val)
		return
	}
	base, i := key[:len(key)-1], int(key[len(key)-1])
	switch {
	case j.cur == nil || !bytes.Equal(base, j.cur):
		j.finish()
		j.fail(key, "a piece without its record")
	case j.bad:
	case j.whole:
		j.fail(key, "a piece of a record kept whole")
	case i != j.next || i >= j.count:
		j.failCur(fmt.Sprintf("piece %d where piece %d of %d was due", i, j.next, j.count))
	default:
		j.val = append(j.val, val...)
		j.next++
	}
}

func (j *Joiner) start(key, val []byte) {
	j.cur, j.whole, j.bad, j.next = bytes.Clone(key), false, false, 1
	if len(val) == 0 || val[0] != pieceMark {
		j.whole = true
		j.records = append(j.records, Joined{Key: j.cur, Val: bytes.Clone(val)})
		return
	}
	if len(val) < 2 || val[1] < 1 || val[1] > MaxPieces {
		j.failCur("a first piece with no count")
		return
	}
	j.count = int(val[1])
	l, n := binary.Uvarint(val[2:])
	if n <= 0 || len(val) < 2+n+4 || l > MaxPieces*PieceSize {
		j.failCur("a first piece with no length")
		return
	}
	j.length = l
	j.sum = binary.BigEndian.Uint32(val[2+n:])
	j.val = append(make([]byte, 0, l), val[2+n+4:]...)
}

// finish ends the record being put together.
func (j *Joiner) finish() {
	if j.cur == nil || j.whole || j.bad {
		j.cur = nil
		return
	}
	switch {
	case j.next != j.count:
		j.failCur(fmt.Sprintf("%d of %d pieces", j.next, j.count))
	case uint64(len(j.val)) != j.length:
		j.failCur(fmt.Sprintf("%d bytes where %d were written", len(j.val), j.length))
	case crc32.Checksum(j.val, castagnoli) != j.sum:
		j.failCur("the pieces do not match their checksum")
	default:
		j.records = append(j.records, Joined{Key: j.cur, Val: j.val})
	}
	j.cur, j.val = nil, nil
}

func (j *Joiner) failCur(why string) {
	j.fail(j.cur, why)
	j.bad = true
}

func (j *Joiner) fail(key []byte, why string) {
	j.damaged = append(j.damaged, fmt.Errorf("%w: %q: %s", ErrDamagedPieces, key, why))
}

// Done returns the whole records, in key order, and an error for each
// record or key that does not make one (wrapping ErrDamagedPieces): a
// record with a piece missing, out of place or not matching is reported,
// never returned cut short.
func (j *Joiner) Done() (records []Joined, damaged []error) {
	j.finish()
	return j.records, j.damaged
}
