// Package config reads and writes the node's config file, HOME/config.
//
// The file is plain text, one "key = value" per line; '#' starts a comment and
// a key that may hold several values is repeated on several lines. A fresh
// home gets a file that documents every key (see Default).
package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/parley-mesh/parley/internal/atomicfile"
	"github.com/parley-mesh/parley/internal/lookalike"
)

// FileName is the config file's name inside the home.
const FileName = "config"

// File is the content of a config file.
type File struct {
	// Handle is the user's display name, shown to contacts.
	Handle string
	// Listen holds the multiaddrs the node listens on.
	Listen []string
	// Bootstrap holds the multiaddrs (with /p2p/PEER_ID) dialled at start.
	Bootstrap []string
	// MDNS turns LAN discovery on.
	MDNS bool
	// Relays holds relay multiaddrs (with /p2p/PEER_ID) used when the node
	// is behind a NAT.
	Relays []string
	// RelayService is "off" (the default), "on" (for contacts and room
	// members) or "open" (for everyone).
	RelayService string
	// PortMap asks the router for a port mapping (UPnP, NAT-PMP); on by
	// default.
	PortMap bool
	// Reachability is "auto" (AutoNAT finds out; the default), "public" or
	// "private".
	Reachability string
	// AgentPostLimit is how many messages, asks and claims each local
	// agent may post in a minute; 0 means the node's default (120), -1 no limit.
	AgentPostLimit int
	// UIPort is the dashboard's port on 127.0.0.1; 0 means any free port.
	UIPort int
	// Warnings are what the file holds that is taken, but should be
	// changed (each with its line and what to do): a handle with
	// characters that show nothing, which earlier Parley accepted.
	Warnings []string
	// HandleAsWritten is the handle line's value when Handle is not it
	// (characters that show nothing left out); empty otherwise.
	HandleAsWritten string
}

// DefaultListen are the addresses a node listens on unless told otherwise:
// TCP and QUIC on port 4190 on every IPv4 and IPv6 interface (IPv6 is
// skipped on a machine without it).
var DefaultListen = []string{"/ip4/0.0.0.0/tcp/4190", "/ip4/0.0.0.0/udp/4190/quic-v1", "/ip6/::/tcp/4190", "/ip6/::/udp/4190/quic-v1"}

// Default returns the text of a new config file for a user.
func Default(handle string) string {
	var b strings.Builder
	b.WriteString(`# Parley node configuration. One "key = value" per line; '#' starts a comment.
# Command-line flags (--listen, --bootstrap, --no-mdns) add to or override these.

# handle: your display name, shown to your contacts and in agent cards.
handle = ` + handle + `

# listen: an address to listen on (a multiaddr); repeat the line for more.
# Port 4190 is Parley's default; use /tcp/0 for any free port.
`)
	for _, l := range DefaultListen {
		b.WriteString("listen = " + l + "\n")
	}
	b.WriteString(`
# bootstrap: a peer to dial at start, as a multiaddr ending in /p2p/PEER_ID;
# repeat the line for more. Example:
# bootstrap = /ip4/192.0.2.10/tcp/4190/p2p/12D3KooW...

# mdns: find other Parley nodes on the local network (true or false).
mdns = true

# relay: a relay to use when this node is behind a NAT, as a multiaddr ending
# in /p2p/PEER_ID; repeat the line for more. It is dialled at start, as a
# bootstrap peer is. Contacts and room members that offer relaying are used
# too (never a stranger).
# relay = /ip4/192.0.2.10/tcp/4190/p2p/12D3KooW...

# relay_service: relay for others: off, on (your contacts and room members
# only) or open (everyone). Turn it on for a node others can reach (a public
# address, or a forwarded port); it runs whatever AutoNAT finds, and
# parley status says whether it serves.
relay_service = off

# port_map: ask the router to forward a port (UPnP, NAT-PMP): true or false.
port_map = true

# reachability: auto (find out with AutoNAT, which needs public peers to
# tell), public (this node is reachable from outside: its DHT serves others)
# or private (behind a NAT: it reserves a slot on a relay from the start).
reachability = auto

# agent_post_limit: how many posts (messages, asks, claims, rooms opened, invites) each
# of your agents may make in a minute (all at once if it likes); over it a post
# is refused, saying so.
# none turns the limit off. Default:
# agent_post_limit = 120

# ui_port: the dashboard's port on 127.0.0.1 (see parley ui); unset or 0: the last one when free, else any.
# ui_port = 4191
`)
	return b.String()
}

// LoadOrCreate reads HOME/config, writing the default file first if there is
// none. A file that holds nothing but white space is taken as none (what a
// crash while an earlier Parley created it could leave): it is replaced by
// the default file. A file with anything else in it is never written here.
// Errors name the file and line and say what to do.
func LoadOrCreate(home, defaultHandle string) (File, error) {
	path := filepath.Join(home, FileName)
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		raw = []byte(Default(defaultHandle))
		if err := writeNew(path, raw); err != nil {
			return File{}, err
		}
	case err != nil:
		return File{}, fmt.Errorf("config: cannot read %s: %v (check its permissions)", path, err)
	case len(bytes.TrimSpace(raw)) == 0:
		raw = []byte(Default(defaultHandle))
		if err := atomicfile.Replace(path, raw, 0o600); err != nil {
			return File{}, fmt.Errorf("config: %s is empty and cannot be replaced by the default: %v", path, err)
		}
	}
	f, err := Parse(raw)
	if err != nil {
		return File{}, fmt.Errorf("config: %s: %w (fix the line, or move the file away to get a fresh default)", path, err)
	}
	return f, nil
}

// writeNew creates the file at path with raw so that a crash leaves it
// absent or whole (written to a temporary file, synced, linked into place,
// the folder synced). A file there already is left as it is.
func writeNew(path string, raw []byte) error {
	err := atomicfile.CreateNew(path, raw, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil // someone else wrote it first
	}
	if err != nil {
		return fmt.Errorf("config: cannot create %s: %v", path, err)
	}
	return nil
}

// handleValue is a handle as the file holds it: as it is, unless it would
// read back as a quoted string ("bob" would be read as bob), then quoted.
func handleValue(h string) string {
	if uq, err := strconv.Unquote(h); err == nil && strings.HasPrefix(h, `"`) && uq != h {
		return strconv.Quote(h)
	}
	return h
}

// singleKeys are the keys a file may set once (the others, listen,
// bootstrap and relay, repeat for several values).
var singleKeys = map[string]struct{}{
	"handle": {}, "mdns": {}, "relay_service": {}, "port_map": {}, "reachability": {}, "agent_post_limit": {}, "ui_port": {},
}

// Parse reads the text of a config file. A file with faults gives them
// all (Errors), each with its line, so that one read shows what to fix.
func Parse(raw []byte) (File, error) {
	f := File{MDNS: true, PortMap: true, RelayService: "off", Reachability: "auto"}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	line := 0
	var sawListen bool
	once := map[string]int{} // single-valued keys seen, and their line
	var errs Errors          // every bad line, not the first only
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = strings.TrimSpace(text[:i])
		}
		if text == "" {
			continue
		}
		key, val, ok := strings.Cut(text, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("line %d: want \"key = value\", got %q", line, text))
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		// handle = "alice", as TOML would have it: a value that is one
		// quoted string is read without its quotes. Any other value is
		// taken as written: an earlier Parley wrote a handle such as
		// "Doc" Brown unquoted, and its file must still start.
		if uq, err := strconv.Unquote(val); err == nil && strings.HasPrefix(val, `"`) && !strings.ContainsAny(uq, "\n\r") {
			val = uq
		}
		if once[key] != 0 {
			errs = append(errs, fmt.Errorf("line %d: %s is set again (first on line %d); keep one of the two", line, key, once[key]))
			continue
		}
		if _, single := singleKeys[key]; single {
			once[key] = line
		}
		switch key {
		case "handle":
			h, warn, err := readHandle(val)
			if err != nil {
				errs = append(errs, fmt.Errorf("line %d: %w", line, err))
				continue
			}
			if warn != "" {
				f.Warnings = append(f.Warnings, fmt.Sprintf("line %d: %s", line, warn))
				f.HandleAsWritten = val
			}
			f.Handle = h
		case "listen":
			if _, err := ma.NewMultiaddr(val); err != nil {
				errs = append(errs, fmt.Errorf("line %d: listen %q is not a multiaddr: %v", line, val, err))
				continue
			}
			sawListen = true
			f.Listen = append(f.Listen, val)
		case "bootstrap":
			if _, err := ma.NewMultiaddr(val); err != nil {
				errs = append(errs, fmt.Errorf("line %d: bootstrap %q is not a multiaddr: %v", line, val, err))
				continue
			}
			f.Bootstrap = append(f.Bootstrap, val)
		case "mdns":
			switch val {
			case "true", "on", "yes":
				f.MDNS = true
			case "false", "off", "no":
				f.MDNS = false
			default:
				errs = append(errs, fmt.Errorf("line %d: mdns must be true or false, got %q", line, val))
				continue
			}
		case "relay":
			if _, err := ma.NewMultiaddr(val); err != nil {
				errs = append(errs, fmt.Errorf("line %d: relay %q is not a multiaddr: %v", line, val, err))
				continue
			}
			f.Relays = append(f.Relays, val)
		case "relay_service":
			switch val {
			case "off", "on", "open":
				f.RelayService = val
			default:
				errs = append(errs, fmt.Errorf("line %d: relay_service must be off, on or open, got %q", line, val))
				continue
			}
		case "port_map":
			switch val {
			case "true", "on", "yes":
				f.PortMap = true
			case "false", "off", "no":
				f.PortMap = false
			default:
				errs = append(errs, fmt.Errorf("line %d: port_map must be true or false, got %q", line, val))
				continue
			}
		case "reachability":
			switch val {
			case "auto", "public", "private":
				f.Reachability = val
			default:
				errs = append(errs, fmt.Errorf("line %d: reachability must be auto, public or private, got %q", line, val))
				continue
			}
		case "agent_post_limit":
			if val == "none" {
				f.AgentPostLimit = -1
				break
			}
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 || n > 1_000_000 {
				errs = append(errs, fmt.Errorf("line %d: agent_post_limit must be 1 to 1000000 (posts a minute) or none, got %q", line, val))
				continue
			}
			f.AgentPostLimit = n
		case "ui_port":
			p, err := strconv.Atoi(val)
			if err != nil || p < 0 || p > 65535 {
				errs = append(errs, fmt.Errorf("line %d: ui_port must be a port number (0 to 65535), got %q", line, val))
				continue
			}
			f.UIPort = p
		default:
			errs = append(errs, fmt.Errorf("line %d: unknown key %q (known: handle, listen, bootstrap, mdns, relay, relay_service, port_map, reachability, ui_port, agent_post_limit)", line, key))
			continue
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("line %d: %v", line+1, err))
	}
	if len(errs) > 0 {
		return File{}, errs
	}
	if !sawListen {
		f.Listen = append([]string(nil), DefaultListen...)
	}
	return f, nil
}

// Errors are the faults of a config file, in line order.
type Errors []error

// Error gives them on one line, separated by "; " (the first 10, and how
// many more: a file that is no config at all has a fault a line).
func (e Errors) Error() string {
	var msgs []string
	for i, err := range e {
		if i == 10 {
			msgs = append(msgs, fmt.Sprintf("and %d more", len(e)-i))
			break
		}
		msgs = append(msgs, err.Error())
	}
	return strings.Join(msgs, "; ")
}

func (e Errors) Unwrap() []error { return e }

// CheckHandle checks a handle: 1 to 64 bytes of printable text on one line,
// without '#' (it would start a comment in the file) and without characters
// that show nothing (lookalike.Invisible: Hangul fillers, the blank Braille
// pattern…), which only serve to make a handle read like another.
func CheckHandle(h string) error {
	if err := checkPrintable(h); err != nil {
		return err
	}
	if i := strings.IndexFunc(h, lookalike.Invisible); i >= 0 {
		r, _ := utf8.DecodeRuneInString(h[i:])
		return fmt.Errorf("handle must not hold characters that show nothing (%U does: it would only make the handle read like another)", r)
	}
	return nil
}

// checkPrintable checks what a handle had to be before handles refused
// characters that show nothing: 1 to 64 bytes of printable text on one
// line, without '#' or surrounding spaces.
func checkPrintable(h string) error {
	if h == "" || len(h) > 64 || h != strings.TrimSpace(h) || strings.ContainsRune(h, '#') || !utf8.ValidString(h) {
		return errors.New("handle must be 1 to 64 printable characters, without '#' or surrounding spaces")
	}
	for _, r := range h {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("handle must be 1 to 64 printable characters (%q is not)", r)
		}
	}
	return nil
}

// readHandle reads the handle line of a file. A handle that earlier
// Parley accepted but that holds characters that show nothing is taken
// without them, with a warning: the node still starts (with the handle as
// it reads), and `parley up --handle NEW` sets another.
func readHandle(val string) (handle, warning string, err error) {
	if err := CheckHandle(val); err == nil {
		return val, "", nil
	} else if checkPrintable(val) != nil {
		return "", "", err
	}
	i := strings.IndexFunc(val, lookalike.Invisible)
	r, _ := utf8.DecodeRuneInString(val[i:])
	h := strings.TrimSpace(strings.Map(func(r rune) rune {
		if lookalike.Invisible(r) {
			return -1
		}
		return r
	}, val))
	goes := fmt.Sprintf("this node goes by %+q", h)
	if h == "" {
		goes = "this node goes without one"
	}
	return h, fmt.Sprintf("handle %+q holds %U, a character that shows nothing, which a handle may no longer hold: %s; set a handle with `parley up --handle NEW`",
		val, r, goes), nil
}

// SetHandle saves handle in HOME/config: the file's handle line is
// replaced (a line is added if it has none) and every other line stays as
// it was. The file is replaced atomically (a temporary file, synced,
// renamed over it, the folder synced).
func SetHandle(home, handle string) error {
	if err := CheckHandle(handle); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	path := filepath.Join(home, FileName)
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: cannot read %s: %v", path, err)
	}
	lines := strings.SplitAfter(string(raw), "\n")
	done := false
	for i, l := range lines {
		text := strings.TrimSpace(l)
		if j := strings.IndexByte(text, '#'); j >= 0 {
			text = strings.TrimSpace(text[:j])
		}
		key, _, ok := strings.Cut(text, "=")
		if !ok || strings.TrimSpace(key) != "handle" {
			continue
		}
		if done {
			lines[i] = "" // a second handle line would win over the new one
			continue
		}
		nl := ""
		if strings.HasSuffix(l, "\n") {
			nl = "\n"
		}
		lines[i] = "handle = " + handleValue(handle) + nl
		done = true
	}
	out := strings.Join(lines, "")
	if !done {
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += "handle = " + handleValue(handle) + "\n"
	}
	if _, err := Parse([]byte(out)); err != nil {
		return fmt.Errorf("config: %s: %w", path, err)
	}
	if err := atomicfile.Replace(path, []byte(out), 0o600); err != nil {
		return fmt.Errorf("config: cannot write %s: %v", path, err)
	}
	return nil
}
