package discovery

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/identity"
)

func TestPresenceRoundTrip(t *testing.T) {
	priv, me := testKey(t, 1)
	for _, p := range []*Presence{testPresence(me), {Peer: me, Seq: 1}} {
		w, err := SealPresence(priv, p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodePresence(w)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, p) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, p)
		}
		var buf bytes.Buffer
		if err := WriteFrame(&buf, w); err != nil {
			t.Fatal(err)
		}
		if err := WriteFrame(&buf, w); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			f, err := ReadFrame(&buf)
			if err != nil || !bytes.Equal(f, w) {
				t.Fatalf("ReadFrame: %v", err)
			}
		}
		if _, err := ReadFrame(&buf); !errors.Is(err, io.EOF) {
			t.Fatalf("after the last frame: %v", err)
		}
	}
}

func TestPresenceLimits(t *testing.T) {
	priv, me := testKey(t, 1)
	_, other := testKey(t, 2)
	agents := func(n int) []AgentState {
		as := make([]AgentState, n)
		for i := range as {
			as[i] = AgentState{Agent: identity.AgentName(fmt.Sprintf("a%03d", i)), State: StateIdle}
		}
		return as
	}
	for name, tc := range map[string]struct {
		mod  func(*Presence)
		want error
	}{
		"other peer":        {func(p *Presence) { p.Peer = other }, ErrBadPeer},
		"seq 0":             {func(p *Presence) { p.Seq = 0 }, ErrMalformed},
		"negative time":     {func(p *Presence) { p.Time = -1 }, ErrMalformed},
		"too many agents":   {func(p *Presence) { p.Agents = agents(MaxAgents + 1) }, ErrTooLarge},
		"unsorted agents":   {func(p *Presence) { p.Agents[0], p.Agents[1] = p.Agents[1], p.Agents[0] }, ErrMalformed},
		"duplicate agents":  {func(p *Presence) { p.Agents[1].Agent = p.Agents[0].Agent }, ErrMalformed},
		"bad agent":         {func(p *Presence) { p.Agents[0].Agent = "A" }, ErrMalformed},
		"bad state":         {func(p *Presence) { p.Agents[0].State = "away" }, ErrMalformed},
		"empty state":       {func(p *Presence) { p.Agents[0].State = "" }, ErrMalformed},
		"long working_on":   {func(p *Presence) { p.Agents[0].WorkingOn = strings.Repeat("é", MaxWorkingOn+1) }, ErrTooLarge},
		"escape working_on": {func(p *Presence) { p.Agents[0].WorkingOn = "x\x1b]0;pwned\x07" }, ErrMalformed},
		"negative seen":     {func(p *Presence) { p.Agents[0].LastSeen = -1 }, ErrMalformed},
		"bad caps":          {func(p *Presence) { p.Agents[0].Capabilities = []string{"sql", "go"} }, ErrMalformed},
		"long role":         {func(p *Presence) { p.Agents[0].Role = strings.Repeat("r", MaxText+1) }, ErrTooLarge},
		"over wire limit": {func(p *Presence) {
			p.Agents = agents(MaxAgents)
			for i := range p.Agents {
				p.Agents[i].WorkingOn = strings.Repeat("€", MaxWorkingOn)
			}
		}, ErrTooLarge},
	} {
		p := testPresence(me)
		tc.mod(p)
		if _, err := SealPresence(priv, p); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
	}
	p := testPresence(me)
	p.Agents = agents(MaxAgents)
	p.Agents[0].WorkingOn = strings.Repeat("€", MaxWorkingOn)
	w, err := SealPresence(priv, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodePresence(w); err != nil {
		t.Fatal(err)
	}
	if _, err := SealPresence(priv, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("nil presence: %v", err)
	}
}

func TestDecodePresenceRefuses(t *testing.T) {
	priv, me := testKey(t, 1)
	other, _ := testKey(t, 2)
	good := testPresence(me).payload()
	w, err := SealPresence(priv, testPresence(me))
	if err != nil {
		t.Fatal(err)
	}
	v2 := good
	v2.V = 2
	for name, tc := range map[string]struct {
		wire []byte
		want error
	}{
		"forged":        {signRaw(t, other, identity.DomainPresence, good), ErrBadSignature},
		"card domain":   {signRaw(t, priv, identity.DomainAgentCard, good), ErrBadSignature},
		"version 2":     {signRaw(t, priv, identity.DomainPresence, v2), ErrBadVersion},
		"empty agents":  {signRaw(t, priv, identity.DomainPresence, withField(t, good, 5, []any{})), ErrNonCanonical},
		"unknown field": {signRaw(t, priv, identity.DomainPresence, withField(t, good, 42, 1)), ErrMalformed},
		"oversized":     {make([]byte, MaxPresenceWire+1), ErrTooLarge},
		"garbage":       {[]byte{0xff}, ErrMalformed},
		"truncated":     {w[:len(w)-3], ErrMalformed},
		"a card":        {mustSealCard(t, priv, testCard(me)), ErrMalformed},
		"too many agents": {signRaw(t, priv, identity.DomainPresence, withField(t, good, 5,
			make([]any, MaxAgents+1))), ErrTooLarge},
	} {
		p, err := DecodePresence(tc.wire)
		if !errors.Is(err, tc.want) || p != nil {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
	}
}

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFrame(&buf, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("empty frame: %v", err)
	}
	if err := WriteFrame(&buf, make([]byte, MaxFrame+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("big frame: %v", err)
	}
	if err := WriteFrame(&buf, make([]byte, MaxFrame)); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFrame(&buf); err != nil || len(b) != MaxFrame {
		t.Fatalf("largest frame: %d %v", len(b), err)
	}
	for name, tc := range map[string]struct {
		in   []byte
		want error
	}{
		"empty stream":   {nil, io.EOF},
		"zero length":    {[]byte{0}, ErrMalformed},
		"non-minimal":    {[]byte{0x81, 0x00, 'x'}, ErrMalformed},
		"too long":       {[]byte{0x81, 0x80, 0x04}, ErrTooLarge}, // 65537
		"endless varint": {[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80}, ErrTooLarge},
		"cut in length":  {[]byte{0x81}, io.ErrUnexpectedEOF},
		"cut in body":    {[]byte{3, 'a'}, io.ErrUnexpectedEOF},
	} {
		if _, err := ReadFrame(bytes.NewReader(tc.in)); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
	}
	// ReadFrame reads nothing beyond its frame.
	r := bytes.NewReader([]byte{2, 'h', 'i', 0xff})
	if b, err := ReadFrame(r); err != nil || string(b) != "hi" || r.Len() != 1 {
		t.Fatalf("ReadFrame over-read: %q %v, %d left", b, err, r.Len())
	}
}
