package rooms

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/parley-mesh/parley/identity"
)

func TestSealDecodeRoundTrip(t *testing.T) {
	priv, me := testKey(t, 1)
	_, other := testKey(t, 2)
	cwire, cid := mustSeal(t, priv, createEvent(me))
	reply := fakeID(7)
	tests := []*Event{
		createEvent(me),
		{V: Version, Room: testRoom, Author: me, Agent: "human", Seq: 2, Parents: []ID{cid}, Depth: 2,
			Kind: KindInvite, Body: []byte(other)},
		{V: Version, Room: testRoom, Author: me, Agent: "codex.1", Seq: 3, Parents: SortIDs([]ID{cid, fakeID(1)}),
			Depth: 9, Time: 42, Kind: KindMessage, Body: []byte("héllo"), ReplyTo: &reply,
			To: "claude-api@" + other.String()},
		{Room: testRoom, Author: me, Agent: "a", Seq: 4, Parents: []ID{cid}, Depth: 2, Kind: KindLeave},
	}
	for _, want := range tests {
		wire, id, err := Seal(priv, want)
		if err != nil {
			t.Fatalf("seal %s: %v", want.Kind, err)
		}
		if id != sha256.Sum256(wire) {
			t.Fatalf("%s: id is not sha256 of wire", want.Kind)
		}
		got, gotID, err := Decode(wire)
		if err != nil {
			t.Fatalf("decode %s: %v", want.Kind, err)
		}
		if gotID != id {
			t.Fatalf("%s: id %s, sealed %s", want.Kind, gotID, id)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: round trip\n got %+v\nwant %+v", want.Kind, got, want)
		}
	}
	e, _, err := Decode(cwire)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.InviteTarget(); !errors.Is(err, ErrNotInvite) {
		t.Fatalf("InviteTarget of create: %v", err)
	}
}

func TestInviteTarget(t *testing.T) {
	priv, me := testKey(t, 1)
	_, other := testKey(t, 2)
	e := &Event{Room: testRoom, Author: me, Agent: "human", Seq: 2, Parents: []ID{fakeID(1)}, Depth: 2,
		Kind: KindInvite, Body: []byte(other)}
	wire, _ := mustSeal(t, priv, e)
	got, _, err := Decode(wire)
	if err != nil {
		t.Fatal(err)
	}
	p, err := got.InviteTarget()
	if err != nil || p != other {
		t.Fatalf("InviteTarget = %s, %v; want %s", p, err, other)
	}
	e.Body = []byte("not a peer id")
	if _, _, err := Seal(priv, e); !errors.Is(err, ErrMalformed) {
		t.Fatalf("seal invite with bad target: %v", err)
	}
}

// TestIDStable pins the encoding: if this ID changes, every stored event
// changes ID, which is a protocol break.
func TestIDStable(t *testing.T) {
	priv, me := testKey(t, 1)
	w1, id1 := mustSeal(t, priv, messageEvent(me, "hello", fakeID(1), fakeID(2)))
	w2, id2 := mustSeal(t, priv, messageEvent(me, "hello", fakeID(2), fakeID(1)))
	if id1 != id2 || !bytes.Equal(w1, w2) {
		t.Fatal("same event sealed twice gave different bytes")
	}
	const golden = "xmnjogkcdevihx6yq6jvqi5l7n2kwwzysgdpgqjo3u6stllb4cfq"
	if got := id1.String(); got != golden {
		t.Fatalf("event id changed: got %s, want %s", got, golden)
	}
	_, id3 := mustSeal(t, priv, messageEvent(me, "hello!", fakeID(1), fakeID(2)))
	if id3 == id1 {
		t.Fatal("different events share an id")
	}
}

func TestIDString(t *testing.T) {
	id := fakeID(3)
	s := id.String()
	if len(s) != 52 || strings.ToLower(s) != s || strings.Contains(s, "=") {
		t.Fatalf("bad id string %q", s)
	}
	got, err := ParseID(s)
	if err != nil || got != id {
		t.Fatalf("ParseID(%q) = %v, %v", s, got, err)
	}
	txt, _ := id.MarshalText()
	var back ID
	if err := back.UnmarshalText(txt); err != nil || back != id {
		t.Fatalf("text round trip: %v", err)
	}
	last := s[len(s)-1]
	var flipped byte = 'b'
	if last == 'b' {
		flipped = 'c'
	}
	for _, bad := range []string{
		"", strings.ToUpper(s), s[:51], s + "a", s[:51] + "=",
		s[:51] + string(flipped), // non-zero unused trailing bits: 52 chars carry 260 bits
		s[:10] + "\n" + s[11:], s[:10] + "1" + s[11:],
	} {
		if _, err := ParseID(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseID(%q) = %v, want ErrMalformed", bad, err)
		}
	}
}

func TestSortIDs(t *testing.T) {
	a, b, c := fakeID(1), fakeID(2), fakeID(3)
	got := SortIDs([]ID{c, a, b, a, c})
	if len(got) != 3 {
		t.Fatalf("SortIDs kept %d", len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i-1].Compare(got[i]) >= 0 {
			t.Fatal("not sorted")
		}
	}
}

func TestSealRefuses(t *testing.T) {
	priv, me := testKey(t, 1)
	_, other := testKey(t, 2)
	tests := []struct {
		name string
		mod  func(e *Event)
		want error
	}{
		{"author not key", func(e *Event) { e.Author = other }, ErrBadAuthor},
		{"version 2", func(e *Event) { e.V = 2 }, ErrBadVersion},
		{"big body", func(e *Event) { e.Body = make([]byte, MaxBody+1) }, ErrTooLarge},
		{"21 parents", func(e *Event) {
			e.Parents = nil
			for i := range 21 {
				e.Parents = append(e.Parents, fakeID(i))
			}
			e.Parents = SortIDs(e.Parents)
		}, ErrTooManyParents},
		{"no agent", func(e *Event) { e.Agent = "" }, identity.ErrBadName},
		{"bad to", func(e *Event) { e.To = "Bob" }, ErrMalformed},
		{"not utf8", func(e *Event) { e.Body = []byte{0xff, 0xfe} }, ErrMalformed},
	}
	for _, tc := range tests {
		e := messageEvent(me, "hi", fakeID(1))
		tc.mod(e)
		if _, _, err := Seal(priv, e); !errors.Is(err, tc.want) {
			t.Errorf("%s: Seal = %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, _, err := Seal(priv, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("Seal(nil) = %v", err)
	}
}

func TestDecodeRefuses(t *testing.T) {
	priv, me := testKey(t, 1)
	_, other := testKey(t, 2)
	base := func() eventPayload {
		e := messageEvent(me, "hello", fakeID(1), fakeID(2))
		return e.payload()
	}
	ids := func(n int) [][]byte {
		var out []ID
		for i := range n {
			out = append(out, fakeID(i))
		}
		return idBytes(SortIDs(out))
	}
	secp, _, err := crypto.GenerateSecp256k1Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	secpID, _ := identity.PeerID(secp)
	tests := []struct {
		name string
		mod  func(p *eventPayload)
		key  crypto.PrivKey
		want error
	}{
		{"body 64KiB+1", func(p *eventPayload) { p.Body = bytes.Repeat([]byte("a"), MaxBody+1) }, nil, ErrTooLarge},
		{"21 parents", func(p *eventPayload) { p.Parents = ids(21) }, nil, ErrTooManyParents},
		{"65 parents", func(p *eventPayload) { p.Parents = ids(65) }, nil, ErrTooLarge},
		{"unsorted parents", func(p *eventPayload) { p.Parents[0], p.Parents[1] = p.Parents[1], p.Parents[0] }, nil, ErrBadParents},
		{"duplicate parents", func(p *eventPayload) { p.Parents[1] = p.Parents[0] }, nil, ErrBadParents},
		{"short parent", func(p *eventPayload) { p.Parents[0] = p.Parents[0][:31] }, nil, ErrMalformed},
		{"depth 2^62", func(p *eventPayload) { p.Depth = 1 << 62 }, nil, ErrBadDepth},
		{"depth 2^40", func(p *eventPayload) { p.Depth = 1 << 40 }, nil, ErrBadDepth},
		{"depth 0", func(p *eventPayload) { p.Depth = 0 }, nil, ErrBadDepth},
		{"message depth 1", func(p *eventPayload) { p.Depth = 1 }, nil, ErrBadDepth},
		{"message without parents", func(p *eventPayload) { p.Parents = nil }, nil, ErrBadParents},
		{"create with parents", func(p *eventPayload) { p.Kind = "create"; p.Depth = 1; p.Seq = 1 }, nil, ErrBadParents},
		{"create depth 2", func(p *eventPayload) { p.Kind = "create"; p.Parents = nil; p.Depth = 2; p.Seq = 1 }, nil, ErrBadDepth},
		{"create seq 2", func(p *eventPayload) { p.Kind = "create"; p.Parents = nil; p.Depth = 1 }, nil, ErrBadSeq},
		{"seq 0", func(p *eventPayload) { p.Seq = 0 }, nil, ErrBadSeq},
		{"version 0", func(p *eventPayload) { p.V = 0 }, nil, ErrBadVersion},
		{"version 2", func(p *eventPayload) { p.V = 2 }, nil, ErrBadVersion},
		{"unknown kind", func(p *eventPayload) { p.Kind = "frob" }, nil, ErrBadKind},
		{"bad room", func(p *eventPayload) { p.Room = "ROOM" }, nil, ErrMalformed},
		{"bad agent", func(p *eventPayload) { p.Agent = "-x" }, nil, ErrMalformed},
		{"negative time", func(p *eventPayload) { p.Time = -1 }, nil, ErrMalformed},
		{"message not utf8", func(p *eventPayload) { p.Body = []byte{0xc3} }, nil, ErrMalformed},
		{"invite bad target", func(p *eventPayload) { p.Kind = "invite"; p.Body = []byte{1, 2, 3} }, nil, ErrMalformed},
		{"to not canonical", func(p *eventPayload) { p.To = "bob@" }, nil, ErrMalformed},
		{"to too long", func(p *eventPayload) { p.To = strings.Repeat("a", MaxTo+1) }, nil, ErrTooLarge},
		{"short reply_to", func(p *eventPayload) { p.ReplyTo = []byte{1} }, nil, ErrMalformed},
		{"author empty", func(p *eventPayload) { p.Author = nil }, nil, ErrBadAuthor},
		{"author garbage", func(p *eventPayload) { p.Author = []byte{0, 1, 2} }, nil, ErrBadAuthor},
		{"author secp256k1", func(p *eventPayload) { p.Author = []byte(secpID) }, secp, ErrBadAuthor},
		{"author someone else", func(p *eventPayload) { p.Author = []byte(other) }, nil, ErrBadSignature},
	}
	for _, tc := range tests {
		p := base()
		tc.mod(&p)
		key := tc.key
		if key == nil {
			key = priv
		}
		wire := signRaw(t, key, p)
		_, _, err := Decode(wire)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: Decode = %v, want %v", tc.name, err, tc.want)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "rooms: decode event: ") {
			t.Errorf("%s: error not wrapped: %v", tc.name, err)
		}
	}
}

func TestDecodeForgedAndTampered(t *testing.T) {
	priv, me := testKey(t, 1)
	mallory, _ := testKey(t, 3)
	e := messageEvent(me, "pay bob 10", fakeID(1))
	wire, _ := mustSeal(t, priv, e)

	// Payload claiming me as author, signed by mallory.
	forged := signRaw(t, mallory, e.payload())
	if _, _, err := Decode(forged); !errors.Is(err, ErrBadSignature) || !errors.Is(err, identity.ErrBadSignature) {
		t.Fatalf("forged: %v", err)
	}

	// Signature made under another domain.
	payload, _ := encMode.Marshal(e.payload())
	sig, _ := identity.Sign(priv, identity.DomainPresence, payload)
	other, _ := encMode.Marshal(signedEvent{Payload: payload, Sig: sig})
	if _, _, err := Decode(other); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("other domain: %v", err)
	}

	// Body changed in place on the wire (same length, still canonical).
	i := bytes.Index(wire, []byte("pay bob 10"))
	tampered := bytes.Clone(wire)
	tampered[i+8] = '9'
	if _, _, err := Decode(tampered); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("tampered body: %v", err)
	}

	// Signature bit flipped.
	tampered = bytes.Clone(wire)
	tampered[len(tampered)-1] ^= 1
	if _, _, err := Decode(tampered); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("tampered sig: %v", err)
	}

	// Short signature.
	short, _ := encMode.Marshal(signedEvent{Payload: payload, Sig: sig[:10]})
	if _, _, err := Decode(short); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("short sig: %v", err)
	}
}

func TestDecodeNonCanonical(t *testing.T) {
	priv, me := testKey(t, 1)
	e := messageEvent(me, "hello", fakeID(1))
	payload, err := encMode.Marshal(e.payload())
	if err != nil {
		t.Fatal(err)
	}
	wire := signPayload(t, priv, payload)
	if _, _, err := Decode(wire); err != nil {
		t.Fatal(err)
	}

	// Payload: key 1 (v) holds 0x01; write it as 0x18 0x01 (non-shortest) and sign properly.
	if payload[1] != 0x01 || payload[2] != 0x01 {
		t.Fatalf("unexpected payload start % x", payload[:3])
	}
	long := append([]byte{payload[0], 0x01, 0x18, 0x01}, payload[3:]...)
	if _, _, err := Decode(signPayload(t, priv, long)); !errors.Is(err, ErrNonCanonical) {
		t.Fatalf("non-shortest int in payload: %v", err)
	}

	// Payload: an explicit zero field (time 0) that canonical form omits.
	p := e.payload()
	p.Time = 0
	omitted, _ := encMode.Marshal(p)
	withZero := bytes.Clone(omitted)
	withZero[0]++ // one more pair: insert 08 00 (time: 0) before key 9 (kind "message")
	k := bytes.Index(withZero, []byte{0x09, 0x67, 'm', 'e', 's', 's', 'a', 'g', 'e'})
	withZero = append(withZero[:k:k], append([]byte{0x08, 0x00}, withZero[k:]...)...)
	if _, _, err := Decode(signPayload(t, priv, withZero)); !errors.Is(err, ErrNonCanonical) {
		t.Fatalf("explicit zero field: %v", err)
	}

	// Payload: unknown key 13.
	unknown := bytes.Clone(payload)
	unknown[0]++
	unknown = append(unknown, 0x0d, 0x01)
	if _, _, err := Decode(signPayload(t, priv, unknown)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("unknown key: %v", err)
	}

	// Wire: signature length 64 as a 2-byte length (0x59 0x00 0x40).
	n := len(wire)
	if !bytes.Equal(wire[n-66:n-64], []byte{0x58, 0x40}) {
		t.Fatalf("unexpected wire tail % x", wire[n-67:n-64])
	}
	nc := append(append(bytes.Clone(wire[:n-66]), 0x59, 0x00, 0x40), wire[n-64:]...)
	if _, _, err := Decode(nc); !errors.Is(err, ErrNonCanonical) {
		t.Fatalf("non-shortest length on wire: %v", err)
	}

	// Wire: keys in the wrong order.
	var s signedEvent
	if err := eventDec.Unmarshal(wire, &s); err != nil {
		t.Fatal(err)
	}
	pl, _ := encMode.Marshal(s.Payload)
	sg, _ := encMode.Marshal(s.Sig)
	swapped := append(append(append([]byte{0xa2, 0x02}, sg...), 0x01), pl...)
	if _, _, err := Decode(swapped); !errors.Is(err, ErrNonCanonical) {
		t.Fatalf("swapped keys: %v", err)
	}

	// Wire: trailing byte, indefinite length, duplicate key, tag.
	for name, bad := range map[string][]byte{
		"trailing": append(bytes.Clone(wire), 0x00),
		"indefinite map": append(append([]byte{0xbf, 0x01}, pl...),
			append(append([]byte{0x02}, sg...), 0xff)...),
		"duplicate key": append(append(append([]byte{0xa2, 0x01}, pl...), 0x01), pl...),
		"tagged":        append([]byte{0xd8, 0x18}, wire...),
		"empty":         nil,
		"array":         {0x82, 0x01, 0x02},
	} {
		if _, _, err := Decode(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Decode = %v, want ErrMalformed", name, err)
		}
	}

	if _, _, err := Decode(make([]byte, MaxWire+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized wire: %v", err)
	}
}

func TestDecodeDoesNotAlias(t *testing.T) {
	priv, me := testKey(t, 1)
	wire, _ := mustSeal(t, priv, messageEvent(me, "keep me", fakeID(1)))
	e, _, err := Decode(wire)
	if err != nil {
		t.Fatal(err)
	}
	clear(wire)
	if string(e.Body) != "keep me" {
		t.Fatalf("body aliases wire: %q", e.Body)
	}
}

func TestCheckDepth(t *testing.T) {
	_, me := testKey(t, 1)
	e := messageEvent(me, "x", fakeID(1), fakeID(2))
	e.Depth = 8
	if err := e.CheckDepth([]uint64{3, 7}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]uint64{{3, 6}, {8, 1}, {7}, {7, 7, 7}, {MaxDepth, 1}} {
		if err := e.CheckDepth(bad); !errors.Is(err, ErrBadDepth) {
			t.Errorf("CheckDepth(%v) = %v, want ErrBadDepth", bad, err)
		}
	}
	c := createEvent(me)
	if err := c.CheckDepth(nil); err != nil {
		t.Fatal(err)
	}
}
