package discovery

import (
	"crypto/sha256"
	"errors"
	"reflect"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

func TestProviderKey(t *testing.T) {
	k, err := ProviderKey(KindCap, "go")
	if err != nil {
		t.Fatal(err)
	}
	// The derivation is part of the protocol: pin it.
	sum := sha256.Sum256([]byte("parley:cap:go"))
	mh, _ := multihash.Encode(sum[:], multihash.SHA2_256)
	if want := cid.NewCidV1(cid.Raw, mh); !k.Equals(want) {
		t.Fatalf("key %s, want %s", k, want)
	}
	if p := k.Prefix(); p.Version != 1 || p.Codec != cid.Raw || p.MhType != multihash.SHA2_256 {
		t.Fatalf("prefix %+v", p)
	}
	again, _ := ProviderKey(KindCap, "  GO ")
	if !again.Equals(k) {
		t.Fatal("value not normalized")
	}
	seen := map[cid.Cid]string{}
	for _, kind := range []string{KindHandle, KindAgent, KindCap} {
		for _, v := range []string{"claude", "go"} {
			k, err := ProviderKey(kind, v)
			if err != nil {
				t.Fatal(err)
			}
			if prev, ok := seen[k]; ok {
				t.Fatalf("%s:%s has the key of %s", kind, v, prev)
			}
			seen[k] = kind + ":" + v
		}
	}
	hk, err := ProviderKey(KindHandle, "Alice Smith")
	if err != nil {
		t.Fatal(err)
	}
	if hk2, _ := ProviderKey(KindHandle, "alice smith"); !hk.Equals(hk2) {
		t.Fatal("handle not case-folded")
	}
	for _, bad := range [][2]string{
		{"name", "x"}, {"", "x"}, {KindCap, ""}, {KindCap, "c++"}, {KindAgent, "-x"},
		{KindAgent, "a b"}, {KindHandle, "  "}, {KindHandle, "a\x00b"},
	} {
		if _, err := ProviderKey(bad[0], bad[1]); !errors.Is(err, ErrBadQuery) {
			t.Errorf("ProviderKey(%q, %q) err = %v", bad[0], bad[1], err)
		}
	}
}

func TestCardProviderKeys(t *testing.T) {
	_, me := testKey(t, 1)
	c := testCard(me)
	keys, err := c.ProviderKeys()
	if err != nil {
		t.Fatal(err)
	}
	want := []Query{{KindHandle, "alice"}, {KindAgent, "claude-api"}, {KindCap, "go"}, {KindCap, "review"}, {KindCap, "sql"}}
	if len(keys) != len(want) {
		t.Fatalf("%d keys, want %d", len(keys), len(want))
	}
	for i, q := range want {
		k, err := q.Key()
		if err != nil || !k.Equals(keys[i]) {
			t.Errorf("key %d: not %s (%v)", i, q, err)
		}
	}
	c.Handle = ""
	if keys, _ := c.ProviderKeys(); len(keys) != len(want)-1 {
		t.Fatalf("no handle: %d keys", len(keys))
	}
}

func TestParseQuery(t *testing.T) {
	all := func(v string) []Query { return []Query{{KindHandle, v}, {KindAgent, v}, {KindCap, v}} }
	for _, tc := range []struct {
		in   string
		want []Query
	}{
		{"claude", all("claude")},
		{"  Claude ", all("claude")},
		{"cap:go", []Query{{KindCap, "go"}}},
		{"CAP: Go", []Query{{KindCap, "go"}}},
		{"agent:claude-api", []Query{{KindAgent, "claude-api"}}},
		{"handle:Alice Smith", []Query{{KindHandle, "alice smith"}}},
		{"handle:y", []Query{{KindHandle, "y"}}},
		{"Alice Smith", []Query{{KindHandle, "alice smith"}}},
		{"-go", []Query{{KindHandle, "-go"}, {KindCap, "-go"}}}, // an agent name starts with a letter or digit
		{"c++", []Query{{KindHandle, "c++"}}},
		{"foo:bar", []Query{{KindHandle, "foo:bar"}}},
		{"cap:", nil},
		{"cap:c++", nil},
		{"agent:", nil},
		{"handle:", nil},
		{"", nil},
		{"   ", nil},
	} {
		if got := ParseQuery(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseQuery(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
