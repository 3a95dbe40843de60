package discovery

import (
	"errors"
	"testing"
	"time"

	record "github.com/libp2p/go-libp2p-record"

	"github.com/parley-mesh/parley/identity"
)

func TestValidate(t *testing.T) {
	priv, me := testKey(t, 1)
	other, them := testKey(t, 2)
	key := CardKey(me, "claude-api")
	good := mustSealCard(t, priv, testCard(me))
	if err := testValidator.Validate(key, good); err != nil {
		t.Fatal(err)
	}

	theirs := testCard(them)
	forged := signRaw(t, other, identity.DomainAgentCard, testCard(me).payload())
	expired := testCard(me)
	expired.Expires = testNow.UnixMilli()
	justValid := testCard(me)
	justValid.Expires = testNow.UnixMilli() + 1
	far := testCard(me)
	far.Expires = testNow.Add(MaxCardTTL + MaxClockSkew + time.Millisecond).UnixMilli()
	farOK := testCard(me)
	farOK.Expires = testNow.Add(MaxCardTTL + MaxClockSkew).UnixMilli()
	otherAgent := testCard(me)
	otherAgent.Agent = "codex"
	nonCanon := signRaw(t, priv, identity.DomainAgentCard, nonCanonicalSeq(t, mustMarshal(t, testCard(me).payload())))

	for name, tc := range map[string]struct {
		key  string
		wire []byte
		want error // nil: valid
	}{
		"good":                {key, good, nil},
		"just valid":          {key, mustSealCard(t, priv, justValid), nil},
		"longest lifetime":    {key, mustSealCard(t, priv, farOK), nil},
		"forged":              {key, forged, ErrBadSignature},
		"signer not key peer": {key, mustSealCard(t, other, theirs), ErrKeyMismatch},
		"agent mismatch":      {key, mustSealCard(t, priv, otherAgent), ErrKeyMismatch},
		"expired":             {key, mustSealCard(t, priv, expired), ErrExpired},
		"too far":             {key, mustSealCard(t, priv, far), ErrLifetime},
		"malformed":           {key, []byte{0x01}, ErrMalformed},
		"oversized":           {key, make([]byte, MaxCardWire+1), ErrTooLarge},
		"non-canonical":       {key, nonCanon, ErrNonCanonical},
		"bad key":             {"/parley-agent/x", good, ErrBadKey},
		"key without ns":      {me.String() + "/claude-api", good, ErrBadKey},
	} {
		err := testValidator.Validate(tc.key, tc.wire)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
	}
}

// TestNamespaced checks the validator the way kad-dht calls it: through a
// record.NamespacedValidator, with the whole key.
func TestNamespaced(t *testing.T) {
	priv, me := testKey(t, 1)
	nv := record.NamespacedValidator{Namespace: testValidator}
	key := CardKey(me, "claude-api")
	w := mustSealCard(t, priv, testCard(me))
	if err := nv.Validate(key, w); err != nil {
		t.Fatal(err)
	}
	if i, err := nv.Select(key, [][]byte{w}); err != nil || i != 0 {
		t.Fatalf("Select = %d, %v", i, err)
	}
	if err := (Validator{}).Validate(key, w); !errors.Is(err, ErrExpired) {
		t.Fatalf("default clock: err = %v, want ErrExpired", err) // testNow is in 2023
	}
	c := testCard(me)
	c.Expires = time.Now().Add(time.Hour).UnixMilli()
	if err := (Validator{}).Validate(key, mustSealCard(t, priv, c)); err != nil {
		t.Fatalf("default clock: %v", err)
	}
}

func TestSelect(t *testing.T) {
	priv, me := testKey(t, 1)
	other, _ := testKey(t, 2)
	key := CardKey(me, "claude-api")
	card := func(seq uint64, expires time.Duration, role string) []byte {
		c := testCard(me)
		c.Seq, c.Expires, c.Role = seq, testNow.Add(expires).UnixMilli(), role
		return mustSealCard(t, priv, c)
	}
	s5 := card(5, time.Hour, "")
	s7 := card(7, time.Hour, "")
	s7later := card(7, 2*time.Hour, "")
	s7a, s7b := card(7, time.Hour, "a"), card(7, time.Hour, "b")
	if string(s7a) > string(s7b) {
		s7a, s7b = s7b, s7a
	}
	s9expired := card(9, -time.Hour, "")
	c9 := testCard(me)
	c9.Seq = 9
	s9forged := signRaw(t, other, identity.DomainAgentCard, c9.payload())
	junk := []byte("junk")

	for name, tc := range map[string]struct {
		values [][]byte
		want   int
	}{
		"one":                   {[][]byte{s5}, 0},
		"higher seq first":      {[][]byte{s7, s5}, 0},
		"higher seq second":     {[][]byte{s5, s7}, 1},
		"later expiry wins tie": {[][]byte{s7, s7later}, 1},
		"smallest bytes":        {[][]byte{s7b, s7a}, 1},
		"identical: first":      {[][]byte{s7, s7}, 0},
		"skips expired":         {[][]byte{s9expired, s5}, 1},
		"skips forged":          {[][]byte{s5, s9forged, s7}, 2},
		"skips junk":            {[][]byte{junk, nil, s5}, 2},
	} {
		i, err := testValidator.Select(key, tc.values)
		if err != nil || i != tc.want {
			t.Errorf("%s: Select = %d, %v; want %d", name, i, err, tc.want)
		}
	}
	for name, values := range map[string][][]byte{
		"none":      nil,
		"all bad":   {junk, s9expired, s9forged},
		"other key": {mustSealCard(t, priv, &Card{Peer: me, Agent: "codex", Seq: 1, Expires: testNow.Add(time.Hour).UnixMilli()})},
	} {
		if _, err := testValidator.Select(key, values); !errors.Is(err, ErrNoValidCard) {
			t.Errorf("%s: err = %v, want ErrNoValidCard", name, err)
		}
	}
	if _, err := testValidator.Select("/parley-agent/x", [][]byte{s5}); !errors.Is(err, ErrNoValidCard) {
		t.Errorf("bad key: err = %v", err)
	}
}
