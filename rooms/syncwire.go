package rooms

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/fxamacker/cbor/v2"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/canon"
	"github.com/parley-mesh/parley/internal/frame"
)

// ProtocolSync is the stream protocol of room catch-up.
const ProtocolSync protocol.ID = "/parley/sync/1"

// Limits of the sync protocol.
const (
	// MaxFrame is the largest sync frame body, in bytes.
	MaxFrame = 1 << 20
	// MaxHeads is the most heads a Hello carries.
	MaxHeads = 64
	// MaxVV is the most version-vector entries a Hello carries.
	MaxVV = 4096
	// MaxWant is the most specific event IDs a Hello asks for.
	MaxWant = 256
	// MaxBatchEvents is the most events in one Batch frame.
	MaxBatchEvents = 1024
)

// Hello is the request of /parley/sync/1: what the requester has of Room,
// and what it wants. The responder answers with the events the requester
// lacks, as Batch frames in display order, and a final Batch with End set.
//
// A room can have more authors than one Hello lists. The requester then
// asks for a part of them at a time: From and To bound, by their bytes,
// the authors the Hello speaks of (From ≤ author < To; empty: no bound),
// VV lists what it holds of those alone, and the responder serves their
// events alone (and the wanted ones).
type Hello struct {
	Room  identity.RoomID
	Heads []ID               // the requester's heads (≤ MaxHeads)
	VV    map[peer.ID]uint64 // author → highest contiguous seq held (≤ MaxVV, seqs ≥ 1)
	Want  []ID               // specific events wanted, e.g. missing parents (≤ MaxWant)
	Limit uint32             // most events to send; 0 lets the responder choose
	From  peer.ID            // the least author spoken of; "" for none
	To    peer.ID            // authors from To on are not spoken of; "" for none
}

// Covers reports whether author a is one the Hello speaks of.
func (h *Hello) Covers(a peer.ID) bool {
	return a >= h.From && (h.To == "" || a < h.To)
}

// Batch is a response frame of /parley/sync/1. A data frame carries 1 to
// MaxBatchEvents event wire forms in display order; the last frame carries
// none and has End set, with More set if the responder stopped at a limit
// and the requester should ask again.
type Batch struct {
	Events [][]byte `cbor:"1,keyasint,omitempty"`
	End    bool     `cbor:"2,keyasint,omitempty"`
	More   bool     `cbor:"3,keyasint,omitempty"`
}

// Fits reports whether one more event of n bytes keeps b within MaxFrame
// and MaxBatchEvents. A responder appends while it fits and writes the
// batch when it does not.
func (b *Batch) Fits(n int) bool {
	if len(b.Events) >= MaxBatchEvents {
		return false
	}
	size := 16 // map and array headers, keys, End and More
	for _, ev := range b.Events {
		size += 5 + len(ev)
	}
	return size+5+n <= MaxFrame
}

func (b *Batch) validate() error {
	switch {
	case b.End && len(b.Events) > 0:
		return fmt.Errorf("%w: end frame carries events", ErrMalformed)
	case !b.End && b.More:
		return fmt.Errorf("%w: more without end", ErrMalformed)
	case !b.End && len(b.Events) == 0:
		return fmt.Errorf("%w: empty batch", ErrMalformed)
	case len(b.Events) > MaxBatchEvents:
		return fmt.Errorf("%w: %d events in a batch, limit %d", ErrTooLarge, len(b.Events), MaxBatchEvents)
	}
	for i, ev := range b.Events {
		if len(ev) == 0 {
			return fmt.Errorf("%w: event %d is empty", ErrMalformed, i)
		}
		if len(ev) > MaxWire {
			return fmt.Errorf("%w: event %d is %d bytes, limit %d", ErrTooLarge, i, len(ev), MaxWire)
		}
	}
	return nil
}

// helloWire is the CBOR form of a Hello.
type helloWire struct {
	Room  string    `cbor:"1,keyasint,omitempty"`
	Heads [][]byte  `cbor:"2,keyasint,omitempty"`
	VV    []vvEntry `cbor:"3,keyasint,omitempty"`
	Want  [][]byte  `cbor:"4,keyasint,omitempty"`
	Limit uint32    `cbor:"5,keyasint,omitempty"`
	From  []byte    `cbor:"6,keyasint,omitempty"`
	To    []byte    `cbor:"7,keyasint,omitempty"`
}

// vvEntry is one version-vector entry: [author peer ID bytes, seq].
type vvEntry struct {
	_      struct{} `cbor:",toarray"`
	Author []byte
	Seq    uint64
}

func (h *Hello) validate() error {
	if _, err := identity.ParseRoomID(string(h.Room)); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	switch {
	case len(h.Heads) > MaxHeads:
		return fmt.Errorf("%w: %d heads, limit %d", ErrTooLarge, len(h.Heads), MaxHeads)
	case len(h.VV) > MaxVV:
		return fmt.Errorf("%w: %d version vector entries, limit %d", ErrTooLarge, len(h.VV), MaxVV)
	case len(h.Want) > MaxWant:
		return fmt.Errorf("%w: %d wanted events, limit %d", ErrTooLarge, len(h.Want), MaxWant)
	case h.To != "" && h.From >= h.To:
		return fmt.Errorf("%w: authors from %s to %s", ErrMalformed, h.From, h.To)
	}
	for _, b := range []peer.ID{h.From, h.To} {
		if _, err := peer.IDFromBytes([]byte(b)); b != "" && err != nil {
			return fmt.Errorf("%w: bound of authors: %v", ErrMalformed, err)
		}
	}
	for a, seq := range h.VV {
		if seq == 0 {
			return fmt.Errorf("%w: version vector seq 0 for %s", ErrMalformed, a)
		}
		if _, err := peer.IDFromBytes([]byte(a)); err != nil {
			return fmt.Errorf("%w: version vector author: %v", ErrMalformed, err)
		}
		if !h.Covers(a) {
			return fmt.Errorf("%w: version vector author %s outside the authors spoken of", ErrMalformed, a)
		}
	}
	return nil
}

func (h *Hello) wire() helloWire {
	w := helloWire{Room: string(h.Room), Heads: idBytes(h.Heads), Want: idBytes(h.Want), Limit: h.Limit,
		From: []byte(h.From), To: []byte(h.To)}
	if len(h.VV) > 0 {
		w.VV = make([]vvEntry, 0, len(h.VV))
		for a, seq := range h.VV {
			w.VV = append(w.VV, vvEntry{Author: []byte(a), Seq: seq})
		}
		slices.SortFunc(w.VV, func(x, y vvEntry) int { return bytes.Compare(x.Author, y.Author) })
	}
	return w
}

func (w *helloWire) hello() (*Hello, error) {
	h := &Hello{Room: identity.RoomID(w.Room), Limit: w.Limit, From: peer.ID(w.From), To: peer.ID(w.To)}
	var err error
	if h.Heads, err = bytesIDs(w.Heads, MaxHeads, "heads"); err != nil {
		return nil, err
	}
	if h.Want, err = bytesIDs(w.Want, MaxWant, "want"); err != nil {
		return nil, err
	}
	if len(w.VV) > MaxVV {
		return nil, fmt.Errorf("%w: %d version vector entries, limit %d", ErrTooLarge, len(w.VV), MaxVV)
	}
	if len(w.VV) > 0 {
		h.VV = make(map[peer.ID]uint64, len(w.VV))
		for _, en := range w.VV {
			a, err := peer.IDFromBytes(en.Author)
			if err != nil {
				return nil, fmt.Errorf("%w: version vector author: %v", ErrMalformed, err)
			}
			if _, dup := h.VV[a]; dup {
				return nil, fmt.Errorf("%w: version vector repeats %s", ErrMalformed, a)
			}
			h.VV[a] = en.Seq
		}
	}
	if err := h.validate(); err != nil {
		return nil, err
	}
	return h, nil
}

func idBytes(ids []ID) [][]byte {
	if len(ids) == 0 {
		return nil
	}
	out := make([][]byte, len(ids))
	for i := range ids {
		out[i] = ids[i][:]
	}
	return out
}

func bytesIDs(bs [][]byte, limit int, what string) ([]ID, error) {
	if len(bs) > limit {
		return nil, fmt.Errorf("%w: %d %s, limit %d", ErrTooLarge, len(bs), what, limit)
	}
	if len(bs) == 0 {
		return nil, nil
	}
	out := make([]ID, len(bs))
	for i, b := range bs {
		if len(b) != len(ID{}) {
			return nil, fmt.Errorf("%w: %s %d is %d bytes", ErrMalformed, what, i, len(b))
		}
		out[i] = ID(b)
	}
	return out, nil
}

// frameDec decodes sync frames: no tags, no indefinite lengths, no
// duplicate or unknown keys, bounded counts (a frame's size bounds the rest).
var frameDec = canon.StrictDec(MaxVV)

// WriteFrame writes v as one sync frame: its length as a uvarint, then its
// CBOR encoding. v must be a Hello or a Batch (or a pointer to one) within
// the limits its reader enforces, and encode to at most MaxFrame bytes.
// The frame goes out in a single Write.
func WriteFrame(w io.Writer, v any) error {
	var body any
	switch m := v.(type) {
	case Hello:
		return WriteFrame(w, &m)
	case Batch:
		return WriteFrame(w, &m)
	case *Hello:
		if m == nil {
			return fmt.Errorf("rooms: write sync frame: %w: nil hello", ErrMalformed)
		}
		if err := m.validate(); err != nil {
			return fmt.Errorf("rooms: write sync frame: %w", err)
		}
		body = m.wire()
	case *Batch:
		if m == nil {
			return fmt.Errorf("rooms: write sync frame: %w: nil batch", ErrMalformed)
		}
		if err := m.validate(); err != nil {
			return fmt.Errorf("rooms: write sync frame: %w", err)
		}
		body = m
	default:
		return fmt.Errorf("rooms: write sync frame: %w: unsupported type %T", ErrMalformed, v)
	}
	b, err := encMode.Marshal(body)
	if err != nil {
		return fmt.Errorf("rooms: write sync frame: %w: %v", ErrMalformed, err)
	}
	if len(b) > MaxFrame {
		return fmt.Errorf("rooms: write sync frame: %w: %d bytes, limit %d", ErrTooLarge, len(b), MaxFrame)
	}
	if err := frame.Write(w, b); err != nil {
		return fmt.Errorf("rooms: write sync frame: %w", err)
	}
	return nil
}

// ReadHello reads one Hello frame of at most max bytes (MaxFrame if max is
// not in 1..MaxFrame). It returns io.EOF, wrapped, if r ends before the frame.
func ReadHello(r io.Reader, max int) (*Hello, error) {
	if max <= 0 || max > MaxFrame {
		max = MaxFrame
	}
	b, err := readFrame(r, max)
	if err != nil {
		return nil, fmt.Errorf("rooms: read hello: %w", err)
	}
	var w helloWire
	if err := frameDec.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("rooms: read hello: %w", cborErr(err))
	}
	h, err := w.hello()
	if err != nil {
		return nil, fmt.Errorf("rooms: read hello: %w", err)
	}
	return h, nil
}

// ReadBatch reads one response frame. The caller reads until a Batch with
// End set, and still runs Decode on every event. It returns io.EOF, wrapped,
// if r ends before the frame: a response cut short before its end frame.
func ReadBatch(r io.Reader) (*Batch, error) {
	b, err := readFrame(r, MaxFrame)
	if err != nil {
		return nil, fmt.Errorf("rooms: read batch: %w", err)
	}
	var bt Batch
	if err := frameDec.Unmarshal(b, &bt); err != nil {
		return nil, fmt.Errorf("rooms: read batch: %w", cborErr(err))
	}
	if err := bt.validate(); err != nil {
		return nil, fmt.Errorf("rooms: read batch: %w", err)
	}
	return &bt, nil
}

// readFrame reads one frame (see internal/frame) of 1 to max bytes, with
// rooms' error sentinels.
func readFrame(r io.Reader, max int) ([]byte, error) {
	b, err := frame.Read(r, max)
	switch {
	case errors.Is(err, frame.ErrTooLarge):
		return nil, fmt.Errorf("%w: %w", ErrTooLarge, err)
	case errors.Is(err, frame.ErrMalformed):
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return b, err
}

// cborErr classes a CBOR decoding error: ErrTooLarge for broken count or
// nesting limits, ErrMalformed for everything else.
func cborErr(err error) error {
	var (
		arr  *cbor.MaxArrayElementsError
		pair *cbor.MaxMapPairsError
		nest *cbor.MaxNestedLevelError
	)
	if errors.As(err, &arr) || errors.As(err, &pair) || errors.As(err, &nest) {
		return fmt.Errorf("%w: %v", ErrTooLarge, err)
	}
	return fmt.Errorf("%w: %v", ErrMalformed, err)
}
