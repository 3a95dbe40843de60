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
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// scan calls fn with each line of the log in dir (without its newline) and
// whether the line was complete. It stops early when fn returns false.
func scan(dir string, fn func(n uint64, b []byte, complete bool) bool) error {
	f, err := os.Open(filepath.Join(dir, FileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit: %w", err)
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
// all), the last limit of them (limit ≤ 0: all), oldest first. It checks each
// line it returns; the first line that does not read stops it with an error
// naming the line (Verify tells more).
func List(dir string, since time.Time, limit int) ([]Listed, error) {
	var out []Listed
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
		if !since.IsZero() {
			if t, err := time.Parse(time.RFC3339, e.Time); err == nil && t.Before(since) {
				return true
			}
		}
		out = append(out, e)
		if limit > 0 && len(out) > 2*limit {
			out = append(out[:0], out[len(out)-limit:]...)
		}
		return true
	})
	if err = errors.Join(err, bad); err != nil {
		return nil, err
	}
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
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
