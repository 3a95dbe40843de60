package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
)

// File names inside a node's home.
const (
	FileName = "audit.log"
	HeadName = "audit.head"
)

// Limits of one entry.
const (
	// MaxLine is the longest line of the log, in bytes.
	MaxLine = 16 << 10
	// maxField bounds actor and subject; longer values are cut.
	maxField = 512
	// maxValue bounds one detail value; longer values are cut.
	maxValue = 2048
	// maxDetail bounds the number of detail keys.
	maxDetail = 16
)

// The actions Parley records. Action names are lower-case words joined by
// dots; other parts of Parley may add their own.
const (
	ContactRequest = "contact.request"
	ContactApprove = "contact.approve"
	ContactDeny    = "contact.deny"
	ContactRevoke  = "contact.revoke"
	RoomCreate     = "room.create"
	RoomInvite     = "room.invite"
	RoomRemove     = "room.remove"
	RoomLeave      = "room.leave"
	RoomHeld       = "room.held"    // an invite from a node that is not a contact, waiting for the user
	RoomAccept     = "room.accept"  // an invite that waited for the user, accepted
	RoomDecline    = "room.decline" // an invite that waited for the user, declined
	OrgTrust       = "org.trust"
	OrgUntrust     = "org.untrust"
	OrgAdd         = "org.add"
	OrgRemove      = "org.remove"
	OrgOffered     = "org.offered" // a membership a contact pushed, waiting for the user
	OrgDecline     = "org.decline" // a membership that waited for the user, declined
	AgentMute      = "agent.mute"
	AgentUnmute    = "agent.unmute"
	AgentKill      = "agent.kill"
	Install        = "install"
	Uninstall      = "uninstall"
)

var actionRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)

// Record is what a caller appends: who decided what about whom.
type Record struct {
	Actor   string            // who decided: "human", an agent name, "peer:<id>", "cli"
	Action  string            // one of the constants above, or another dotted name
	Subject string            // what it is about: a peer ID, a room ID, an agent, a client
	Detail  map[string]string // optional facts (expiry, scopes, a note)
}

// Entry is one signed entry as it is stored.
type Entry struct {
	N       uint64            `json:"n"`
	Time    string            `json:"time"` // UTC, RFC 3339 with milliseconds
	Node    string            `json:"node"` // the signing node's peer ID
	Actor   string            `json:"actor"`
	Action  string            `json:"action"`
	Subject string            `json:"subject,omitempty"`
	Detail  map[string]string `json:"detail,omitempty"`
	Prev    string            `json:"prev"`
}

// Listed is an entry as List and Export give it: with its signature and the
// hash of its line, which the next entry's Prev names.
type Listed struct {
	Entry
	Sig  []byte `json:"sig"`
	Hash string `json:"hash"`
}

// line is the stored shape of one line.
type line struct {
	Entry json.RawMessage `json:"entry"`
	Sig   []byte          `json:"sig"`
}

// head is the entry of the head file.
type head struct {
	N    uint64 `json:"n"`
	Hash string `json:"hash"`
	Node string `json:"node"`
}

// Log appends to one home's audit log.
type Log struct {
	path, headPath string
	priv           crypto.PrivKey
	self           peer.ID
	now            func() time.Time

	mu sync.Mutex // serializes this process's appends; flock orders processes
}

// New returns the audit log of the home folder dir, signed with priv. It
// touches no file until the first Append.
func New(dir string, priv crypto.PrivKey) (*Log, error) {
	self, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return &Log{path: filepath.Join(dir, FileName), headPath: filepath.Join(dir, HeadName),
		priv: priv, self: self, now: time.Now}, nil
}

// Path is the log file's path.
func (l *Log) Path() string { return l.path }

// Append signs r, chains it to the last entry and writes it durably.
func (l *Log) Append(r Record) (Listed, error) {
	if !actionRE.MatchString(r.Action) || len(r.Action) > 64 {
		return Listed{}, fmt.Errorf("%w: action %.70q", ErrBadRecord, r.Action)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return Listed{}, fmt.Errorf("audit: open %s: %w", l.path, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return Listed{}, fmt.Errorf("audit: lock %s: %w", l.path, err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing the file unlocks too
	last, err := lastLine(f)
	if err != nil {
		return Listed{}, err
	}
	e := Entry{
		N: 1, Time: l.now().UTC().Format("2006-01-02T15:04:05.000Z07:00"), Node: l.self.String(),
		Actor: clip(r.Actor, maxField), Action: r.Action, Subject: clip(r.Subject, maxField),
	}
	if len(r.Detail) > maxDetail {
		return Listed{}, fmt.Errorf("%w: %d detail keys, limit %d", ErrBadRecord, len(r.Detail), maxDetail)
	}
	if len(r.Detail) > 0 {
		e.Detail = make(map[string]string, len(r.Detail))
		for k, v := range r.Detail {
			e.Detail[clip(k, 64)] = clip(v, maxValue)
		}
	}
	if last != nil {
		prev, perr := parseLine(last)
		if perr == nil {
			e.N = prev.N + 1
		} else {
			// A damaged last line: the entry follows it by number
			// (the line's) and by hash (its bytes as they are), and
			// says so, so Verify still names the damage and what
			// is decided from now on is recorded. Before, every
			// later append was refused.
			lines, err := countLines(f)
			if err != nil {
				return Listed{}, err
			}
			if e.Detail == nil {
				e.Detail = map[string]string{}
			}
			e.N, e.Detail["after_damaged"] = lines+1, clip(perr.Error(), 200)
		}
		e.Prev = hashLine(last)
	}
	raw, sig, err := l.seal(e)
	if err != nil {
		return Listed{}, err
	}
	out, err := json.Marshal(line{Entry: raw, Sig: sig})
	if err != nil {
		return Listed{}, fmt.Errorf("audit: encode: %w", err)
	}
	if len(out) > MaxLine {
		return Listed{}, fmt.Errorf("%w: entry is %d bytes, limit %d", ErrBadRecord, len(out), MaxLine)
	}
	if _, err := f.Write(append(out, '\n')); err != nil {
		return Listed{}, fmt.Errorf("audit: write %s: %w", l.path, err)
	}
	if err := f.Sync(); err != nil {
		return Listed{}, fmt.Errorf("audit: sync %s: %w", l.path, err)
	}
	h := hashLine(out)
	if err := l.writeHead(head{N: e.N, Hash: h, Node: e.Node}); err != nil {
		return Listed{}, err
	}
	return Listed{Entry: e, Sig: sig, Hash: h}, nil
}

func (l *Log) seal(v any) (raw, sig []byte, err error) {
	raw, err = json.Marshal(v)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: encode: %w", err)
	}
	sig, err = identity.Sign(l.priv, identity.DomainAudit, raw)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: %w", err)
	}
	return raw, sig, nil
}

// writeHead replaces the head file atomically.
func (l *Log) writeHead(h head) error {
	raw, sig, err := l.seal(h)
	if err != nil {
		return err
	}
	out, err := json.Marshal(line{Entry: raw, Sig: sig})
	if err != nil {
		return fmt.Errorf("audit: encode head: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(l.headPath), ".audit-head-*")
	if err != nil {
		return fmt.Errorf("audit: write head: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	_, werr := tmp.Write(append(out, '\n'))
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("audit: write head: %w", err)
	}
	if err := os.Rename(tmp.Name(), l.headPath); err != nil {
		return fmt.Errorf("audit: write head: %w", err)
	}
	return nil
}

// lastLine returns the last complete line of f (nil when f is empty), and
// cuts off an incomplete one left by a crash.
func lastLine(f *os.File) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	size := st.Size()
	if size == 0 {
		return nil, nil
	}
	n := min(size, 2*MaxLine+2)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-n); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("audit: read %s: %w", f.Name(), err)
	}
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		if n == size { // one incomplete line and nothing else
			return nil, truncate(f, 0)
		}
		return nil, fmt.Errorf("%w: no line end in its last %d bytes", ErrDamaged, n)
	}
	if end != len(buf)-1 {
		if err := truncate(f, size-n+int64(end)+1); err != nil {
			return nil, err
		}
	}
	buf = buf[:end]
	start := bytes.LastIndexByte(buf, '\n') + 1
	if start == 0 && n < size {
		return nil, fmt.Errorf("%w: its last line is over %d bytes", ErrDamaged, MaxLine)
	}
	return buf[start:], nil
}

// countLines counts the complete lines of f (whose end is a line end).
func countLines(f *os.File) (uint64, error) {
	var n uint64
	buf := make([]byte, 64<<10)
	for off := int64(0); ; {
		k, err := f.ReadAt(buf, off)
		n += uint64(bytes.Count(buf[:k], []byte{'\n'}))
		off += int64(k)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return 0, fmt.Errorf("audit: read %s: %w", f.Name(), err)
		}
	}
}

func truncate(f *os.File, size int64) error {
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("audit: cut an incomplete last line of %s: %w", f.Name(), err)
	}
	return nil
}

func hashLine(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// clip makes s valid UTF-8 of at most max bytes.
func clip(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Test hooks: testHookParse is called for each line parseLine decodes (and
// whose signature it checks), testHookRead with the bytes each read of a
// backward scan takes. Nil outside tests.
var (
	testHookParse func()
	testHookRead  func(n int)
)

// parseLine decodes one line strictly, checks its signature and returns it.
func parseLine(b []byte) (Listed, error) {
	if testHookParse != nil {
		testHookParse()
	}
	if len(b) > MaxLine {
		return Listed{}, fmt.Errorf("line is %d bytes, limit %d", len(b), MaxLine)
	}
	var ln line
	if err := strictJSON(b, &ln); err != nil {
		return Listed{}, err
	}
	var e Entry
	if err := strictJSON(ln.Entry, &e); err != nil {
		return Listed{}, fmt.Errorf("entry: %w", err)
	}
	node, err := peer.Decode(e.Node)
	if err != nil {
		return Listed{}, fmt.Errorf("entry: node %.60q is not a peer ID", e.Node)
	}
	if err := verifySig(node, ln); err != nil {
		return Listed{}, err
	}
	if _, err := time.Parse(time.RFC3339, e.Time); err != nil {
		return Listed{}, fmt.Errorf("entry: bad time %.40q", e.Time)
	}
	return Listed{Entry: e, Sig: ln.Sig, Hash: hashLine(b)}, nil
}

func verifySig(node peer.ID, ln line) error {
	if err := identity.Verify(node, identity.DomainAudit, ln.Entry, ln.Sig); err != nil {
		return fmt.Errorf("the signature does not verify (the entry was changed): %w", err)
	}
	return nil
}

// strictJSON decodes one JSON object with no unknown fields and nothing after it.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("not a valid entry: %v", err)
	}
	if dec.More() {
		return errors.New("not a valid entry: data after the object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("not a valid entry: data after the object")
	}
	return nil
}
