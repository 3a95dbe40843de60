package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// Format is a client's transcript format.
type Format int

const (
	// Claude is Claude Code's session transcript.
	Claude Format = iota + 1
	// Codex is Codex's rollout file.
	Codex
)

// MaxLine is the longest line read; longer ones are skipped.
const MaxLine = 32 << 20

// MaxIDs is how many Claude message IDs the cursor file remembers (with the
// usage counted for each), across transcripts: a resumed session's copied
// history is not counted again.
const MaxIDs = 2048

// MaxFiles is how many transcripts the cursor file remembers.
const MaxFiles = 256

// Spent is what a read found: tokens in (cache reads and writes included)
// and out, the cache figures on their own, and cost in US dollars when the
// client wrote it (HasCost).
type Spent struct {
	In, Out, CacheRead, CacheWrite int64
	CostUSD                        float64
	HasCost                        bool
	Records                        int // usage records that added something
}

// Zero reports whether nothing was spent.
func (s Spent) Zero() bool {
	return s.In == 0 && s.Out == 0 && s.CacheRead == 0 && s.CacheWrite == 0 && s.CostUSD == 0
}

// usage is one message's (or one session's) counted figures.
type usage struct {
	In   int64   `json:"in,omitempty"`
	Out  int64   `json:"out,omitempty"`
	CR   int64   `json:"cr,omitempty"`
	CW   int64   `json:"cw,omitempty"`
	Cost float64 `json:"cost,omitempty"`
}

// grow raises u to at least v, field by field, and returns what grew.
func (u *usage) grow(v usage) usage {
	var d usage
	up := func(have *int64, now int64, delta *int64) {
		if now > *have {
			*delta = now - *have
			*have = now
		}
	}
	up(&u.In, v.In, &d.In)
	up(&u.Out, v.Out, &d.Out)
	up(&u.CR, v.CR, &d.CR)
	up(&u.CW, v.CW, &d.CW)
	if v.Cost > u.Cost {
		d.Cost = v.Cost - u.Cost
		u.Cost = v.Cost
	}
	return d
}

type fileState struct {
	Dev    uint64 `json:"dev"`
	Ino    uint64 `json:"ino"`
	Offset int64  `json:"off"`
	Totals *usage `json:"totals,omitempty"` // Codex: the session totals counted
	At     int64  `json:"at"`               // unix seconds of the last read
}

type idState struct {
	ID string `json:"id"`
	usage
}

type state struct {
	Files map[string]*fileState `json:"files"`
	IDs   []idState             `json:"ids"`
}

// Cursors is the cursor file of a home: which transcripts were read how far.
type Cursors struct {
	// Path is the cursor file; a lock file beside it (Path + ".lock")
	// serialises hooks that run at once.
	Path string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Read is one read of a transcript under the cursor file's lock: Spent is
// what is new, Notes what was skipped. Commit saves the cursor (call it once
// the spend was taken), Release lets the lock go (always call it).
type Read struct {
	Spent Spent
	Notes []string

	c     *Cursors
	lock  *os.File
	st    *state
	dirty bool
}

// Commit saves the cursor file.
func (r *Read) Commit() error {
	if r.lock == nil || !r.dirty {
		return nil
	}
	b, err := json.Marshal(r.st)
	if err != nil {
		return fmt.Errorf("transcript: encode cursors: %w", err)
	}
	tmp := r.c.Path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("transcript: write cursors: %w", err)
	}
	if err := os.Rename(tmp, r.c.Path); err != nil {
		return fmt.Errorf("transcript: write cursors: %w", err)
	}
	r.dirty = false
	return nil
}

// Release lets the cursor file's lock go.
func (r *Read) Release() {
	if r.lock != nil {
		r.lock.Close() // closing drops the flock
		r.lock = nil
	}
}

// Skip moves the cursor of path to its end without counting what is there
// (a session that starts on a transcript with history: what was spent before
// is not this node's to count). Claude message IDs seen are remembered.
func (c *Cursors) Skip(f Format, path string) (*Read, error) {
	return c.read(f, path, true)
}

// Collect reads what path has after its cursor.
func (c *Cursors) Collect(f Format, path string) (*Read, error) {
	return c.read(f, path, false)
}

func (c *Cursors) read(f Format, path string, skip bool) (*Read, error) {
	if err := os.MkdirAll(filepath.Dir(c.Path), 0o700); err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	lock, err := os.OpenFile(c.Path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("transcript: lock: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return nil, fmt.Errorf("transcript: lock: %w", err)
	}
	r := &Read{c: c, lock: lock, st: &state{Files: map[string]*fileState{}}}
	if raw, err := os.ReadFile(c.Path); err == nil {
		if err := json.Unmarshal(raw, r.st); err != nil || r.st.Files == nil {
			r.Notes = append(r.Notes, fmt.Sprintf("the cursor file %s was unreadable; transcripts are read from where they end now", c.Path))
			r.st = &state{Files: map[string]*fileState{}}
			skip = true
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		r.Release()
		return nil, fmt.Errorf("transcript: read cursors: %w", err)
	}
	r.scan(f, path, skip)
	return r, nil
}

func (r *Read) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func (r *Read) now() int64 {
	if r.c.Now != nil {
		return r.c.Now().Unix()
	}
	return time.Now().Unix()
}

// scan reads path from its cursor and counts what is new.
func (r *Read) scan(f Format, path string, skip bool) {
	if !filepath.IsAbs(path) {
		r.note("transcript path %q is not absolute; not read", path)
		return
	}
	fd, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		r.note("transcript %s: %v; not read", path, err)
		return
	}
	defer fd.Close()
	fi, err := fd.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		r.note("transcript %s is not a regular file; not read", path)
		return
	}
	var dev, ino uint64
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		dev, ino = uint64(sys.Dev), sys.Ino
	}
	fs := r.st.Files[path]
	switch {
	case fs == nil:
		fs = &fileState{Dev: dev, Ino: ino}
	case fs.Dev != dev || fs.Ino != ino:
		r.note("transcript %s was replaced; read from its start", path)
		fs = &fileState{Dev: dev, Ino: ino, Totals: fs.Totals}
	case fi.Size() < fs.Offset:
		r.note("transcript %s was cut short (%d bytes, read to %d); read from its start", path, fi.Size(), fs.Offset)
		fs.Offset = 0
	}
	if _, err := fd.Seek(fs.Offset, io.SeekStart); err != nil {
		r.note("transcript %s: %v; not read", path, err)
		return
	}
	br := bufio.NewReaderSize(fd, 64<<10)
	off, bad, long := fs.Offset, 0, 0
	for {
		line, n, err := readLine(br)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				r.note("transcript %s: %v", path, err)
			}
			break // an unended last line waits for the next read
		}
		off += n
		if line == nil {
			long++
			continue
		}
		var d usage
		ok := true
		switch f {
		case Claude:
			d, ok = r.claude(line, skip)
		case Codex:
			d, ok = codexLine(line, fs, skip)
		}
		if !ok {
			bad++
			continue
		}
		if d != (usage{}) {
			r.Spent.Records++
			r.Spent.In += d.In + d.CR + d.CW
			r.Spent.Out += d.Out
			r.Spent.CacheRead += d.CR
			r.Spent.CacheWrite += d.CW
			if d.Cost > 0 {
				r.Spent.CostUSD += d.Cost
				r.Spent.HasCost = true
			}
		}
	}
	if bad > 0 {
		r.note("transcript %s: %d lines that are not JSON skipped", path, bad)
	}
	if long > 0 {
		r.note("transcript %s: %d lines over %d MiB skipped", path, long, MaxLine>>20)
	}
	fs.Offset, fs.At = off, r.now()
	r.st.Files[path] = fs
	r.trim()
	r.dirty = true
}

// readLine returns the next newline-ended line and the bytes it took; a
// line over MaxLine is read through and returned as nil. io.EOF before a
// newline leaves the rest unread.
func readLine(br *bufio.Reader) ([]byte, int64, error) {
	var buf []byte
	var n int64
	for {
		chunk, err := br.ReadSlice('\n')
		n += int64(len(chunk))
		if err == bufio.ErrBufferFull {
			if n <= MaxLine {
				buf = append(buf, chunk...)
			}
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		if n > MaxLine {
			return nil, n, nil
		}
		if buf == nil {
			return chunk, n, nil
		}
		return append(buf, chunk...), n, nil
	}
}

// claudeRecord is the part of a Claude Code transcript record read.
type claudeRecord struct {
	Type      string   `json:"type"`
	UUID      string   `json:"uuid"`
	RequestID string   `json:"requestId"`
	CostUSD   *float64 `json:"costUSD"`
	Message   *struct {
		ID    string `json:"id"`
		Usage *struct {
			Input       int64 `json:"input_tokens"`
			Output      int64 `json:"output_tokens"`
			CacheCreate int64 `json:"cache_creation_input_tokens"`
			CacheRead   int64 `json:"cache_read_input_tokens"`
		} `json:"usage"`
	} `json:"message"`
}

var usageMark = []byte(`"usage"`)

// claude counts one Claude Code line: what its message's usage grew by.
func (r *Read) claude(line []byte, skip bool) (usage, bool) {
	if !bytes.Contains(line, usageMark) && !bytes.Contains(line, []byte(`"costUSD"`)) {
		if !json.Valid(bytes.TrimSpace(line)) && len(bytes.TrimSpace(line)) > 0 {
			return usage{}, false
		}
		return usage{}, true // not a usage record
	}
	var rec claudeRecord
	if err := json.Unmarshal(line, &rec); err != nil {
		return usage{}, false
	}
	if rec.Type != "assistant" || rec.Message == nil || rec.Message.Usage == nil {
		return usage{}, true
	}
	u := rec.Message.Usage
	v := usage{In: max(u.Input, 0), Out: max(u.Output, 0), CR: max(u.CacheRead, 0), CW: max(u.CacheCreate, 0)}
	if rec.CostUSD != nil && *rec.CostUSD > 0 && *rec.CostUSD < 1e6 {
		v.Cost = *rec.CostUSD
	}
	id := rec.Message.ID
	if id == "" {
		id = rec.RequestID
	}
	if id == "" {
		id = "uuid:" + rec.UUID
	}
	i := slices.IndexFunc(r.st.IDs, func(s idState) bool { return s.ID == id })
	var have idState
	if i >= 0 {
		have = r.st.IDs[i]
		r.st.IDs = slices.Delete(r.st.IDs, i, i+1)
	} else {
		have = idState{ID: id}
	}
	d := have.grow(v)
	r.st.IDs = append(r.st.IDs, have) // the newest last
	if skip {
		return usage{}, true
	}
	return d, true
}

// codexRecord is the part of a Codex rollout line read.
type codexRecord struct {
	Type    string `json:"type"`
	Payload *struct {
		Type string `json:"type"`
		Info *struct {
			Total *struct {
				Input     int64 `json:"input_tokens"`
				Cached    int64 `json:"cached_input_tokens"`
				Output    int64 `json:"output_tokens"`
				Reasoning int64 `json:"reasoning_output_tokens"`
			} `json:"total_token_usage"`
		} `json:"info"`
	} `json:"payload"`
}

var tokenCountMark = []byte(`"token_count"`)

// codexLine counts one Codex line: what the session's totals grew by. The
// totals are kept in the file's state with input less the cached part (In)
// and the cached part (CR), so that counting adds In + CR.
func codexLine(line []byte, fs *fileState, skip bool) (usage, bool) {
	if !bytes.Contains(line, tokenCountMark) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && !json.Valid(t) {
			return usage{}, false
		}
		return usage{}, true
	}
	var rec codexRecord
	if err := json.Unmarshal(line, &rec); err != nil {
		return usage{}, false
	}
	if rec.Type != "event_msg" || rec.Payload == nil || rec.Payload.Type != "token_count" || rec.Payload.Info == nil || rec.Payload.Info.Total == nil {
		return usage{}, true
	}
	t := rec.Payload.Info.Total
	cached := min(max(t.Cached, 0), max(t.Input, 0))
	v := usage{In: max(t.Input, 0) - cached, CR: cached, Out: max(t.Output, 0)}
	if fs.Totals == nil {
		fs.Totals = &usage{}
	}
	d := fs.Totals.grow(v)
	if skip {
		return usage{}, true
	}
	return d, true
}

// trim keeps the newest MaxIDs message IDs and MaxFiles transcripts.
func (r *Read) trim() {
	if n := len(r.st.IDs) - MaxIDs; n > 0 {
		r.st.IDs = slices.Delete(r.st.IDs, 0, n)
	}
	if len(r.st.Files) <= MaxFiles {
		return
	}
	type kv struct {
		path string
		at   int64
	}
	var all []kv
	for p, f := range r.st.Files {
		all = append(all, kv{p, f.At})
	}
	slices.SortFunc(all, func(a, b kv) int { return int(a.at - b.at) })
	for _, e := range all[:len(all)-MaxFiles] {
		delete(r.st.Files, e.path)
	}
}
