package audit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// openLog opens the log in dir to read; no log is (nil, nil).
func openLog(dir string) (*os.File, error) {
	f, err := os.Open(filepath.Join(dir, FileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return f, nil
}

// scan calls fn with each line of the log in dir (without its newline) and
// whether the line was complete. It stops early when fn returns false.
func scan(dir string, fn func(n uint64, b []byte, complete bool) bool) error {
	f, err := openLog(dir)
	if f == nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var n uint64
	for {
		b, err := readLine(r)
		if len(b) > 0 || (err == nil) {
			n++
			complete := err == nil
			if !fn(n, b, complete) {
				return nil
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("audit: read %s: %w", f.Name(), err)
		}
	}
}

// errLong marks a line over MaxLine; readLine returns its first MaxLine+1
// bytes and skips the rest.
var errLong = errors.New("line too long")

// readLine reads one line without its newline. At the end of the file it
// returns what is left and io.EOF (an incomplete last line when not empty).
func readLine(r *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(out)+len(chunk) <= MaxLine+1 {
			out = append(out, chunk...)
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(out, []byte{'\n'}), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return out, err
		}
	}
}

// List returns the entries of the log in dir written at or after since (zero:
// all), the last limit of them (limit ≤ 0: all), oldest first.
//
// What it checks: each entry it returns reads as an entry and carries a valid
// signature by the node it names; the first line that does not stops it with
// an error wrapping ErrDamaged. What it does not check: the chain (that
// entries count from 1 without gaps and each names the hash of the line
// before it), and, with limit > 0, any line older than those it reads to
// find the last limit entries. Whole-log checking is Verify's (`parley audit
// verify`). It does compare the log's last entry with the head file, as
// Verify does (a cheap check, one small file): a log cut short at its end
// lists as a whole one would otherwise, its last decisions gone without a
// word. A missing head file is not its concern (Verify reports it).
//
// With limit > 0 it reads the log backwards from its end and stops once it
// has limit entries, so its cost follows limit, not the log's length (with
// since, it reads on past entries older than since, as clocks may step back).
// An incomplete last line (a crash while writing) is not an entry yet and is
// skipped.
func List(dir string, since time.Time, limit int) ([]Listed, error) {
	// The head is read before the log: the node writes it after each
	// append, so a head read first never names an entry the log read
	// after lacks.
	h, hasHead, herr := readHead(dir)
	if herr != nil {
		return nil, herr
	}
	var out []Listed
	var last *Listed
	var err error
	if limit <= 0 {
		out, last, err = listAll(dir, since)
	} else {
		out, last, err = listLast(dir, since, limit)
	}
	if err != nil {
		return nil, err
	}
	if hasHead {
		rep := Report{}
		if last != nil {
			rep.Entries, rep.Head = last.N, last.Hash
		}
		if p := compareHead(h, rep); p != nil {
			return nil, fmt.Errorf("%w: %s (run `parley audit verify`)", ErrDamaged, p)
		}
	}
	return out, nil
}

// readHead reads and checks the head file in dir, if there is one.
func readHead(dir string) (head, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, HeadName))
	if errors.Is(err, fs.ErrNotExist) {
		return head{}, false, nil
	}
	if err != nil {
		return head{}, false, fmt.Errorf("audit: %w", err)
	}
	h, err := parseHead(bytes.TrimSuffix(b, []byte{'\n'}), "")
	if err != nil {
		return head{}, false, fmt.Errorf("%w: the head file %s: %v (run `parley audit verify`)", ErrDamaged, HeadName, err)
	}
	return h, true, nil
}

// listLast is List with limit > 0; it returns the log's last entry too.
func listLast(dir string, since time.Time, limit int) ([]Listed, *Listed, error) {
	var out []Listed
	var last *Listed
	var bad error
	err := scanBack(dir, func(off int64, k int, b []byte) bool {
		e, err := parseLine(b)
		if err != nil {
			bad = fmt.Errorf("%w: the line at byte %d (%d from the end): %v (run `parley audit verify`)", ErrDamaged, off, k, err)
			return false
		}
		if last == nil {
			last = &e
		}
		if !since.IsZero() {
			if t, err := time.Parse(time.RFC3339, e.Time); err == nil && t.Before(since) {
				return true
			}
		}
		out = append(out, e)
		return len(out) < limit
	})
	if err = errors.Join(err, bad); err != nil {
		return nil, nil, err
	}
	slices.Reverse(out)
	return out, last, nil
}

// listAll is List without a limit: it reads the log from its start. It
// returns the log's last entry too.
func listAll(dir string, since time.Time) ([]Listed, *Listed, error) {
	var out []Listed
	var last *Listed
	var bad error
	err := scan(dir, func(n uint64, b []byte, complete bool) bool {
		if !complete {
			return false // a crash while writing: not an entry yet
		}
		e, err := parseLine(b)
		if err != nil {
			bad = fmt.Errorf("%w: line %d: %v (run `parley audit verify`)", ErrDamaged, n, err)
			return false
		}
		last = &e
		if !since.IsZero() {
			if t, err := time.Parse(time.RFC3339, e.Time); err == nil && t.Before(since) {
				return true
			}
		}
		out = append(out, e)
		return true
	})
	if err = errors.Join(err, bad); err != nil {
		return nil, nil, err
	}
	return out, last, nil
}

// backChunk is how much scanBack reads at a time.
const backChunk = 32 << 10

// scanBack calls fn with each complete line of the log in dir, newest first:
// its byte offset, its place counted from the end (1: the last complete
// line) and its bytes without the newline (valid only during the call). An
// incomplete last line is skipped. It stops early when fn returns false. A
// line over MaxLine is handed to fn as its last MaxLine+1 bytes; the scan
// stops after it.
func scanBack(dir string, fn func(off int64, k int, b []byte) bool) error {
	f, err := openLog(dir)
	if f == nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	pos := st.Size() // the file offset of buf[0]
	var buf []byte   // bytes of the file from pos not yet handed out
	tail := true     // still cutting off the bytes after the last newline
	k := 0
	for {
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			if !tail {
				k++
				if !fn(pos+int64(i)+1, k, buf[i+1:]) {
					return nil
				}
			}
			buf, tail = buf[:i], false
			continue
		}
		if !tail && len(buf) > MaxLine {
			k++
			fn(pos+int64(len(buf)-MaxLine-1), k, buf[len(buf)-MaxLine-1:])
			return nil
		}
		if pos == 0 {
			if !tail { // the first line of the file
				k++
				fn(0, k, buf)
			}
			return nil
		}
		n := min(pos, backChunk)
		chunk := make([]byte, int(n)+len(buf))
		if _, err := f.ReadAt(chunk[:n], pos-n); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("audit: read %s: %w", f.Name(), err)
		}
		if testHookRead != nil {
			testHookRead(int(n))
		}
		copy(chunk[n:], buf)
		buf, pos = chunk, pos-n
	}
}

// Problem is the first thing wrong with a log.
type Problem struct {
	N      uint64 `json:"n"` // the entry (line) at fault
	Reason string `json:"reason"`
}

func (p *Problem) String() string { return fmt.Sprintf("entry %d: %s", p.N, p.Reason) }

// Report is what Verify found.
type Report struct {
	Entries uint64   `json:"entries"` // entries that verified, from the first
	Head    string   `json:"head"`    // hash of the last entry that verified
	OK      bool     `json:"ok"`
	Problem *Problem `json:"problem,omitempty"`
}

// Verify checks the whole log in dir: every line reads, is signed by node
// (the home's own peer ID; empty: the node of the first entry), counts from 1
// without gaps and names the hash of the line before it; and the log reaches
// at least as far as its head file says. It stops at the first problem.
func Verify(dir string, node peer.ID) (Report, error) {
	var rep Report
	prev := ""
	fail := func(n uint64, format string, args ...any) bool {
		rep.Problem = &Problem{N: n, Reason: fmt.Sprintf(format, args...)}
		return false
	}
	err := scan(dir, func(n uint64, b []byte, complete bool) bool {
		if !complete {
			return fail(n, "the line is incomplete (the node stopped while writing it?)")
		}
		e, err := parseLine(b)
		switch {
		case err != nil:
			return fail(n, "%v", err)
		case node != "" && e.Node != node.String():
			return fail(n, "signed by %s, not by this node %s", e.Node, node)
		case e.N != n:
			return fail(n, "numbered %d: entries are missing or out of order before it", e.N)
		case e.Prev != prev:
			return fail(n, "does not follow entry %d (its prev hash differs): an entry before it was changed or removed", n-1)
		}
		if node == "" {
			node, _ = peer.Decode(e.Node)
		}
		prev, rep.Entries, rep.Head = e.Hash, n, e.Hash
		return true
	})
	if err != nil {
		return Report{}, err
	}
	if rep.Problem == nil {
		rep.Problem = checkHead(dir, node, rep)
	}
	rep.OK = rep.Problem == nil
	return rep, nil
}

// checkHead compares the log with its head file.
func checkHead(dir string, node peer.ID, rep Report) *Problem {
	b, err := os.ReadFile(filepath.Join(dir, HeadName))
	if errors.Is(err, fs.ErrNotExist) {
		if rep.Entries > 0 {
			return &Problem{N: rep.Entries, Reason: "the head file " + HeadName + " is missing"}
		}
		return nil
	}
	if err != nil {
		return &Problem{N: rep.Entries, Reason: "the head file does not read: " + err.Error()}
	}
	h, err := parseHead(bytes.TrimSuffix(b, []byte{'\n'}), node)
	if err != nil {
		return &Problem{N: rep.Entries, Reason: "the head file: " + err.Error()}
	}
	return compareHead(h, rep)
}

// compareHead compares the log's last entry (rep) with its head.
func compareHead(h head, rep Report) *Problem {
	switch {
	case h.N > rep.Entries:
		return &Problem{N: rep.Entries + 1, Reason: fmt.Sprintf(
			"missing: the log ends at entry %d but its head says the node wrote %d (entries were cut from the end)", rep.Entries, h.N)}
	case h.N == rep.Entries && h.Hash != rep.Head:
		return &Problem{N: h.N, Reason: "differs from the entry the head file names"}
	}
	return nil
}

func parseHead(b []byte, node peer.ID) (head, error) {
	var ln line
	if err := strictJSON(b, &ln); err != nil {
		return head{}, err
	}
	var h head
	if err := strictJSON(ln.Entry, &h); err != nil {
		return head{}, err
	}
	signer, err := peer.Decode(h.Node)
	if err != nil {
		return head{}, fmt.Errorf("node %.60q is not a peer ID", h.Node)
	}
	if node != "" && signer != node {
		return head{}, fmt.Errorf("signed by %s, not by this node", signer)
	}
	if err := verifySig(signer, ln); err != nil {
		return head{}, err
	}
	return h, nil
}
