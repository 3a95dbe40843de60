package discovery

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
)

func TestCardRoundTrip(t *testing.T) {
	priv, me := testKey(t, 1)
	for _, c := range []*Card{
		testCard(me),
		{Peer: me, Agent: "x", Seq: 1, Expires: 1}, // everything optional left out
	} {
		w := mustSealCard(t, priv, c)
		got, err := DecodeCard(w)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, c)
		}
		again := mustSealCard(t, priv, got)
		if string(again) != string(w) {
			t.Fatal("re-sealing a decoded card changes its bytes")
		}
	}
}

func TestSealCardRefuses(t *testing.T) {
	priv, me := testKey(t, 1)
	_, other := testKey(t, 2)
	for name, tc := range map[string]struct {
		mod  func(*Card)
		want error
	}{
		"other peer":        {func(c *Card) { c.Peer = other }, ErrBadPeer},
		"bad agent":         {func(c *Card) { c.Agent = "Bad" }, ErrMalformed},
		"empty agent":       {func(c *Card) { c.Agent = "" }, ErrMalformed},
		"long handle":       {func(c *Card) { c.Handle = strings.Repeat("a", MaxText+1) }, ErrTooLarge},
		"handle space":      {func(c *Card) { c.Handle = " alice" }, ErrMalformed},
		"handle newline":    {func(c *Card) { c.Handle = "al\nice" }, ErrMalformed},
		"handle bidi":       {func(c *Card) { c.Handle = "al\u202eice" }, ErrMalformed},
		"handle not utf8":   {func(c *Card) { c.Handle = "al\xffice" }, ErrMalformed},
		"role escape":       {func(c *Card) { c.Role = "\x1b[31mred" }, ErrMalformed},
		"long client":       {func(c *Card) { c.Client = strings.Repeat("c", MaxText+1) }, ErrTooLarge},
		"caps unsorted":     {func(c *Card) { c.Capabilities = []string{"b", "a"} }, ErrMalformed},
		"caps duplicate":    {func(c *Card) { c.Capabilities = []string{"a", "a"} }, ErrMalformed},
		"cap upper":         {func(c *Card) { c.Capabilities = []string{"Go"} }, ErrMalformed},
		"cap empty":         {func(c *Card) { c.Capabilities = []string{""} }, ErrMalformed},
		"cap long":          {func(c *Card) { c.Capabilities = []string{strings.Repeat("a", MaxCapability+1)} }, ErrMalformed},
		"too many caps":     {func(c *Card) { c.Capabilities = manyCaps(MaxCapabilities + 1) }, ErrTooLarge},
		"seq 0":             {func(c *Card) { c.Seq = 0 }, ErrMalformed},
		"expires 0":         {func(c *Card) { c.Expires = 0 }, ErrMalformed},
		"negative expires":  {func(c *Card) { c.Expires = -5 }, ErrMalformed},
		"non-ed25519 peer":  {func(c *Card) { c.Peer = "Qmfoo" }, ErrBadPeer},
		"handle format chr": {func(c *Card) { c.Handle = "a\u200bb" }, ErrMalformed},
		"handle unassigned": {func(c *Card) { c.Handle = "alice\u0378" }, ErrMalformed},
		"handle private":    {func(c *Card) { c.Handle = "alice\ue000" }, ErrMalformed},
	} {
		c := testCard(me)
		tc.mod(c)
		if _, err := SealCard(priv, c); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
	}
	if _, err := SealCard(priv, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("nil card: %v", err)
	}
	if _, err := SealCard(nil, testCard(me)); !errors.Is(err, ErrMalformed) {
		t.Errorf("nil key: %v", err)
	}
	c := testCard(me)
	c.Capabilities = manyCaps(MaxCapabilities)
	c.Handle, c.Role, c.Client = strings.Repeat("h", MaxText), strings.Repeat("r", MaxText), strings.Repeat("c", MaxText)
	c.Agent = identity.AgentName(strings.Repeat("a", 64))
	w := mustSealCard(t, priv, c) // the largest card fits MaxCardWire
	if len(w) > MaxCardWire {
		t.Fatalf("largest card is %d bytes", len(w))
	}
}

// manyCaps returns n sorted unique capabilities of MaxCapability bytes.
func manyCaps(n int) []string {
	caps := make([]string, n)
	for i := range caps {
		caps[i] = string(rune('a'+i/26)) + string(rune('a'+i%26)) + strings.Repeat("x", MaxCapability-2)
	}
	return caps
}

func TestDecodeCardRefuses(t *testing.T) {
	priv, me := testKey(t, 1)
	other, _ := testKey(t, 2)
	good := testCard(me).payload()
	w := mustSealCard(t, priv, testCard(me))

	forged := signRaw(t, other, identity.DomainAgentCard, good)
	otherDomain := signRaw(t, priv, identity.DomainPresence, good)
	v2 := good
	v2.V = 2
	noV := good
	noV.V = 0
	badPeer := good
	badPeer.Peer = []byte("nope")
	// A non-canonical payload: the same card with a needlessly long seq.
	long, _ := encMode.Marshal(good)
	long = nonCanonicalSeq(t, long)

	for name, tc := range map[string]struct {
		wire []byte
		want error
	}{
		"forged":          {forged, ErrBadSignature},
		"other domain":    {otherDomain, ErrBadSignature},
		"version 2":       {signRaw(t, priv, identity.DomainAgentCard, v2), ErrBadVersion},
		"no version":      {signRaw(t, priv, identity.DomainAgentCard, noV), ErrBadVersion},
		"empty caps list": {signRaw(t, priv, identity.DomainAgentCard, withField(t, good, 6, []string{})), ErrNonCanonical},
		"bad peer bytes":  {signRaw(t, priv, identity.DomainAgentCard, badPeer), ErrBadPeer},
		"long seq":        {signRaw(t, priv, identity.DomainAgentCard, long), ErrNonCanonical},
		"empty":           {nil, ErrMalformed},
		"garbage":         {[]byte("not cbor"), ErrMalformed},
		"oversized":       {append(w, make([]byte, MaxCardWire)...), ErrTooLarge},
		"trailing byte":   {append(append([]byte{}, w...), 0), ErrMalformed},
		"truncated":       {w[:len(w)-1], ErrMalformed},
		"payload only":    {mustMarshal(t, good), ErrMalformed},
		"unknown field":   {signRaw(t, priv, identity.DomainAgentCard, withField(t, good, 99, "x")), ErrMalformed},
		"unassigned char": {signRaw(t, priv, identity.DomainAgentCard, withHandle(good, "alice\u0378")), ErrMalformed},
		"private use":     {signRaw(t, priv, identity.DomainAgentCard, withHandle(good, "alice\ue000")), ErrMalformed},
	} {
		c, err := DecodeCard(tc.wire)
		if !errors.Is(err, tc.want) || c != nil {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
	}
	// Flipping any one bit of a sealed card breaks it.
	for i := range w {
		b := append([]byte{}, w...)
		b[i] ^= 0x01
		if _, err := DecodeCard(b); err == nil {
			t.Fatalf("bit flip at %d accepted", i)
		}
	}
}

func mustMarshal(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := encMode.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// withField returns the deterministic encoding of p with key set to v.
func withField(tb testing.TB, p any, key uint64, v any) []byte {
	tb.Helper()
	var m map[uint64]any
	if err := cardDec.Unmarshal(mustMarshal(tb, p), &m); err != nil {
		tb.Fatal(err)
	}
	m[key] = v
	return mustMarshal(tb, m)
}

// nonCanonicalSeq re-encodes the seq (key 8) of an encoded card payload as
// an 8-byte integer, valid CBOR but not the shortest form.
func nonCanonicalSeq(tb testing.TB, b []byte) []byte {
	tb.Helper()
	// key 8 (0x08), seq 7 (0x07) in the shortest form, then key 9.
	i := strings.LastIndex(string(b), "\x08\x07\x09")
	if i < 0 {
		tb.Fatal("seq not found")
	}
	out := append([]byte{}, b[:i+1]...)
	out = append(out, 0x1b, 0, 0, 0, 0, 0, 0, 0, 7)
	return append(out, b[i+2:]...)
}

func TestCardKey(t *testing.T) {
	_, me := testKey(t, 1)
	k := CardKey(me, "claude-api")
	if k != "/parley-agent/"+me.String()+"/claude-api" {
		t.Fatalf("key %q", k)
	}
	if k != testCard(me).Key() {
		t.Fatal("Card.Key differs from CardKey")
	}
	p, a, err := ParseCardKey(k)
	if err != nil || p != me || a != "claude-api" {
		t.Fatalf("ParseCardKey: %s %s %v", p, a, err)
	}
	cidForm := "/parley-agent/" + mustCIDString(t, me) + "/x"
	for _, bad := range []string{
		"", "/", "/parley-agent/", "/parley-agent/" + me.String(), "/parley-agent/" + me.String() + "/",
		"/parley-agent/" + me.String() + "/Bad", "/parley-agent/" + me.String() + "/a/b",
		"/parley-agent/nope/x", "/ipns/" + me.String() + "/x", "parley-agent/" + me.String() + "/x",
		"/parley-agent//x", cidForm, "/parley-agent/" + me.String() + "/" + strings.Repeat("a", 300),
	} {
		if _, _, err := ParseCardKey(bad); !errors.Is(err, ErrBadKey) {
			t.Errorf("ParseCardKey(%q) err = %v", bad, err)
		}
	}
}

func TestSortCapabilities(t *testing.T) {
	got := SortCapabilities([]string{"sql", "go", "sql", "a"})
	if !reflect.DeepEqual(got, []string{"a", "go", "sql"}) {
		t.Fatalf("%v", got)
	}
	if err := checkCapabilities(got); err != nil {
		t.Fatal(err)
	}
}

func mustCIDString(tb testing.TB, p peer.ID) string {
	tb.Helper()
	return peer.ToCid(p).String()
}

// withHandle is payload p with handle h.
func withHandle(p cardPayload, h string) cardPayload {
	p.Handle = h
	return p
}

// An older node's agent card whose handle holds a character that shows
// nothing (earlier Parley accepted them) is taken, so its agents stay
// findable; the handle is shown escaped where it is printed.
func TestDecodeCardTakesAnOlderNodesFiller(t *testing.T) {
	priv, me := testKey(t, 1)
	w := signRaw(t, priv, identity.DomainAgentCard, withHandle(testCard(me).payload(), "bob\u3164"))
	if c, err := DecodeCard(w); err != nil || c.Handle != "bob\u3164" {
		t.Fatalf("DecodeCard: %+v, %v", c, err)
	}
}
