// Package dialerr condenses libp2p dial errors into one line a person can read.
package dialerr

import (
	"errors"
	"regexp"
	"slices"
	"strings"

	"github.com/libp2p/go-libp2p/p2p/net/swarm"
)

// A libp2p dial error lists each address tried on a line of its own
// ("failed to dial PEER: all dials failed\n  * [ADDR] CAUSE"), and a relay's
// refusal of a circuit comes as its protocol's status code
// ("error opening relay circuit: PERMISSION_DENIED (202)"). Shown as is,
// in one line of `parley peers` or `parley connect`, that read as literal
// \x0a escapes, private addresses and codes, with no word of what to do.

// dialFailedPrefix is libp2p's "failed to dial:" / "failed to dial PEER:",
// which may come several times, nested.
var dialFailedPrefix = regexp.MustCompile(`failed to dial( [1-9A-HJ-NP-Za-km-z]+)?: `)

// relayCircuitRefusal is a relay's answer to a circuit asked of it.
var relayCircuitRefusal = regexp.MustCompile(`error opening relay circuit: ([A-Z_]+) \(\d+\)`)

// relayCircuitWhy says what a relay's refusal of a circuit means, and what
// to do.
var relayCircuitWhy = map[string]string{
	"PERMISSION_DENIED": "the relay refused the circuit (permission_denied): it relays only for the peers it deals with " +
		"(a Parley relay: its contacts and room members, unless relay_service = open), and neither this node nor that peer is one",
	"NO_RESERVATION": "the relay refused the circuit (no_reservation): that peer holds no reservation on it now " +
		"(it restarted, or moved to another relay): ask its user for a fresh address (parley id shows it under relay_addrs)",
	"RESOURCE_LIMIT_EXCEEDED": "the relay refused the circuit (resource_limit_exceeded): it carries as many circuits as it takes; try again later",
	"CONNECTION_FAILED":       "the relay could not reach that peer (connection_failed): its node may be down",
	"MALFORMED_MESSAGE":       "the relay refused the circuit (malformed_message)",
	"UNEXPECTED_MESSAGE":      "the relay refused the circuit (unexpected_message)",
}

// Reason condenses a libp2p dial error's text into one line a person
// can read: the nested "failed to dial PEER:" prefixes go, each address's
// cause is kept once without its address, and a relay's refusal of a
// circuit says what it means.
func Reason(s string) string {
	lines := strings.Split(s, "\n")
	head := strings.TrimSpace(dialFailedPrefix.ReplaceAllString(lines[0], ""))
	var causes []string
	for _, l := range lines[1:] {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "...") { // "... skipping N errors ..."
			continue
		}
		l = strings.TrimPrefix(l, "* ")
		if strings.HasPrefix(l, "[") {
			if _, cause, ok := strings.Cut(l, "] "); ok {
				l = cause
			}
		}
		l = relayCause(dialFailedPrefix.ReplaceAllString(l, ""))
		if !slices.Contains(causes, l) {
			causes = append(causes, l)
		}
	}
	head = relayCause(head)
	switch {
	case len(causes) == 0 && head == "":
		return "the dial failed"
	case len(causes) == 0:
		return head
	case head == "":
		return strings.Join(causes, "; ")
	}
	return head + ": " + strings.Join(causes, "; ")
}

// relayCause rewrites a relay's refusal of a circuit in s, if s is one.
func relayCause(s string) string {
	m := relayCircuitRefusal.FindStringSubmatch(s)
	if m == nil {
		return s
	}
	if why, ok := relayCircuitWhy[m[1]]; ok {
		return why
	}
	return "the relay refused the circuit (" + strings.ToLower(m[1]) + ")"
}

// Errors are dial failures whose text is each one's Reason, once each: a
// dial lists every address it tried on lines of its own, which read as a
// dump in a command's one-line error. It wraps them all.
type Errors []error

func (r Errors) Error() string {
	var out []string
	for _, err := range r {
		if l := Reason(err.Error()); !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}

func (r Errors) Unwrap() []error { return r }

// Unreached reports whether err is a dial that reached no node (none
// answered, the dial backed off, no address is known), as against a node
// that answered but not as it should.
func Unreached(err error) bool {
	var dial *swarm.DialError
	return errors.As(err, &dial) || errors.Is(err, swarm.ErrDialBackoff) || errors.Is(err, swarm.ErrNoAddresses) ||
		errors.Is(err, swarm.ErrAllDialsFailed)
}
