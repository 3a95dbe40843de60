package identity

import (
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
)

// AgentName names one agent session on a node, for example "claude-api" or
// "human". It is 1–64 characters of [a-z0-9._-], starting with a letter or digit.
type AgentName string

// HumanAgent is the agent name of the node's own user at the CLI.
const HumanAgent AgentName = "human"

// ParseAgentName checks s and returns it as an AgentName.
func ParseAgentName(s string) (AgentName, error) {
	if err := checkToken(s, 64); err != nil {
		return "", fmt.Errorf("%w: agent name %.100q: %v", ErrBadName, s, err)
	}
	return AgentName(s), nil
}

// ParseGivenAgentName reads an agent name as a person or a client gives it
// (a command's --as, a tool call, a path of the local API): trimmed, with
// capital letters A to Z taken as small ones, then checked as
// ParseAgentName checks it. `parley agent register Helper` registers
// helper, and `--as Helper` is helper too. Only ASCII letters are folded:
// a character that merely looks like one is refused, named. A name read
// from an event, a card or presence is not folded: ParseAgentName.
func ParseGivenAgentName(s string) (AgentName, error) {
	return ParseAgentName(foldASCII(strings.TrimSpace(s)))
}

// ParseGivenAgentAddr is ParseAgentAddr for an address a person or a client
// gives: its NAME is read as ParseGivenAgentName reads it (the peer ID after
// "@" is taken as it is: it tells capitals apart).
func ParseGivenAgentAddr(s string) (AgentAddr, error) {
	s = strings.TrimSpace(s)
	name, rest, found := strings.Cut(s, "@")
	if found {
		return ParseAgentAddr(foldASCII(name) + "@" + rest)
	}
	return ParseAgentAddr(foldASCII(name))
}

// foldASCII turns the capital letters A to Z of s into small ones.
func foldASCII(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, s)
}

// RoomID names a room everywhere. It is chosen at random by the creating
// node: 26 characters of lower-case base32.
type RoomID string

var roomEnc = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewRoomID returns a fresh random room ID (128 bits).
func NewRoomID() RoomID {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("identity: no randomness: " + err.Error())
	}
	return RoomID(strings.ToLower(roomEnc.EncodeToString(b[:])))
}

// ParseRoomID checks s and returns it as a RoomID.
func ParseRoomID(s string) (RoomID, error) {
	if len(s) != 26 {
		return "", fmt.Errorf("%w: room id %.100q: want 26 characters", ErrBadName, s)
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return "", fmt.Errorf("%w: room id %.100q: character %q", ErrBadName, s, c)
		}
	}
	return RoomID(s), nil
}

// AgentAddr is an agent's address across the mesh: NAME@PEER_ID, or NAME
// alone for an agent of the local node (Peer is empty then).
type AgentAddr struct {
	Name AgentName
	Peer peer.ID
}

// ParseAgentAddr parses NAME or NAME@PEER_ID.
func ParseAgentAddr(s string) (AgentAddr, error) {
	name, p, found := strings.Cut(s, "@")
	n, err := ParseAgentName(name)
	if err != nil {
		return AgentAddr{}, err
	}
	a := AgentAddr{Name: n}
	if found {
		id, err := peer.Decode(p)
		if err != nil {
			return AgentAddr{}, fmt.Errorf("%w: address %.100q: bad peer id: %v", ErrBadName, s, err)
		}
		a.Peer = id
	}
	return a, nil
}

func (a AgentAddr) String() string {
	if a.Peer == "" {
		return string(a.Name)
	}
	return string(a.Name) + "@" + a.Peer.String()
}

func checkToken(s string, max int) error {
	if s == "" || len(s) > max {
		return fmt.Errorf("want 1 to %d characters", max)
	}
	for i, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if i > 0 {
			ok = ok || c == '.' || c == '_' || c == '-'
		}
		if !ok {
			return fmt.Errorf("character %q at %d (use a-z, 0-9, '.', '_', '-')", c, i)
		}
	}
	return nil
}
