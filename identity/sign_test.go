package identity

import (
	stded "crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"math/big"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// Point encodings on which Ed25519 implementations are known to differ:
// the eight points of small order, non-canonical encodings (y at or above
// p, a sign bit on x = 0) and bytes that are no point at all.
var edgePoints = []string{
	"0100000000000000000000000000000000000000000000000000000000000000", // identity
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // order 2
	"0000000000000000000000000000000000000000000000000000000000000000", // order 4
	"0000000000000000000000000000000000000000000000000000000000000080", // order 4
	"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a", // order 8
	"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa", // order 8
	"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05", // order 8
	"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85", // order 8
	"0100000000000000000000000000000000000000000000000000000000000080", // identity, x sign set
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", // order 2, x sign set
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // y = p (0)
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", // y = p, x sign set
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // y = p+1 (1)
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", // y = p+1, x sign set
	"efffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // y = p+2
	"0200000000000000000000000000000000000000000000000000000000000000", // y = 2: no point
}

// groupOrder is L, the order of Ed25519's prime subgroup.
var groupOrder, _ = new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)

// scalarBytes is n as 32 little-endian bytes (n < 2^256).
func scalarBytes(n *big.Int) []byte {
	b := n.FillBytes(make([]byte, 32))
	slices.Reverse(b)
	return b
}

// stdlibVerify is crypto/ed25519's answer for what VerifyKey checks.
func stdlibVerify(pub []byte, domain string, payload, sig []byte) bool {
	msg := append(append([]byte(domain), 0), payload...)
	return stded.Verify(pub, msg, sig)
}

// agrees fails t unless VerifyKey and crypto/ed25519 give one answer, and
// returns it.
func agrees(t testing.TB, pub []byte, domain string, payload, sig []byte) bool {
	t.Helper()
	want := stdlibVerify(pub, domain, payload, sig)
	key, err := crypto.UnmarshalEd25519PublicKey(pub)
	if err != nil {
		t.Fatalf("key %x: %v", pub, err)
	}
	got := VerifyKey(key, domain, payload, sig) == nil
	if got != want {
		t.Fatalf("key %x sig %x payload %q: Parley says %v, crypto/ed25519 says %v", pub, sig, payload, got, want)
	}
	return got
}

// TestVerifyAgreesWithStdlib checks every node accepts the signatures Go's
// crypto/ed25519 accepts and no others, whichever implementation it runs:
// keys and R from the edge encodings above and a real key, S of zero, one,
// a real one, the group order and a real one plus it (non-canonical).
func TestVerifyAgreesWithStdlib(t *testing.T) {
	pub, priv, err := stded.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	const domain = DomainRoomEvent
	payloads := [][]byte{nil, []byte("hello"), make([]byte, 1200)}
	realSig := stded.Sign(priv, append(append([]byte(domain), 0), payloads[1]...))
	be := slices.Clone(realSig[32:])
	slices.Reverse(be)
	realS := new(big.Int).SetBytes(be)

	keys := [][]byte{pub}
	points := [][]byte{realSig[:32]}
	for _, h := range edgePoints {
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, b)
		points = append(points, b)
	}
	scalars := [][]byte{
		scalarBytes(big.NewInt(0)),
		scalarBytes(big.NewInt(1)),
		realSig[32:],
		scalarBytes(groupOrder),
		scalarBytes(new(big.Int).Add(realS, groupOrder)),
	}
	valid := 0
	for _, k := range keys {
		for _, r := range points {
			for _, s := range scalars {
				for _, p := range payloads {
					if agrees(t, k, domain, p, append(slices.Clone(r), s...)) {
						valid++
					}
				}
			}
		}
	}
	// The real signature, and forgeries under small-order keys that a
	// cofactorless check accepts: both implementations must take them.
	if valid < 2 {
		t.Fatalf("only %d of the cases verify: the edge cases test nothing", valid)
	}
	t.Logf("%d of %d cases verify under both", valid, len(keys)*len(points)*len(scalars)*len(payloads))
}

// TestSignMatchesStdlib checks Sign makes the bytes crypto/ed25519 makes.
func TestSignMatchesStdlib(t *testing.T) {
	for i := range 20 {
		priv, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := priv.Raw()
		if err != nil {
			t.Fatal(err)
		}
		payload := make([]byte, i*97)
		_, _ = rand.Read(payload)
		sig, err := Sign(priv, DomainContactCert, payload)
		if err != nil {
			t.Fatal(err)
		}
		want := stded.Sign(stded.PrivateKey(raw), append(append([]byte(DomainContactCert), 0), payload...))
		if !slices.Equal(sig, want) {
			t.Fatalf("signature %x, crypto/ed25519 makes %x", sig, want)
		}
	}
}

// FuzzVerifyAgreesWithStdlib checks any key, signature and payload get the
// answer crypto/ed25519 gives.
func FuzzVerifyAgreesWithStdlib(f *testing.F) {
	pub, priv, _ := stded.GenerateKey(rand.Reader)
	payload := []byte("fuzz")
	sig := stded.Sign(priv, append(append([]byte(DomainRoomEvent), 0), payload...))
	f.Add([]byte(pub), payload, sig)
	for _, h := range edgePoints {
		b, _ := hex.DecodeString(h)
		f.Add(b, payload, append(slices.Clone(b), make([]byte, 32)...))
		f.Add(b, payload, append(slices.Clone(sig[:32]), sig[32:]...))
	}
	f.Fuzz(func(t *testing.T, pub, payload, sig []byte) {
		if len(pub) != stded.PublicKeySize {
			return
		}
		agrees(t, pub, DomainRoomEvent, payload, sig)
	})
}
