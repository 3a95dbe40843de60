package agents

import (
	"testing"
	"time"
)

// FuzzUnmarshalLocal feeds stored registrations (schema.LocalAgent values)
// to the loader: it must refuse what it cannot use, never panic, and give
// back only registrations that pass the checks of a new one.
func FuzzUnmarshalLocal(f *testing.F) {
	priv, self := key(f)
	a, err := newLocal(priv, self, RegisterRequest{Name: "coder", Role: "r", Capabilities: []string{"go"}, WorkingOn: "w", Session: "s"}, time.Minute, time.UnixMilli(1e12))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(a.marshal())
	f.Add([]byte(`{"name":"x","state":"idle","last_seen_ms":1,"ttl_ms":1000,"caps":["b","a"]}`))
	f.Add([]byte(`{"name":"x","state":"offline","ttl_ms":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := unmarshalLocal(priv, self, b)
		if err != nil {
			return
		}
		if err := checkAgent(priv, self, a); err != nil || a.TTL <= 0 || a.TTL > MaxTTL {
			t.Fatalf("loaded a registration that fails its checks: %+v %v", a, err)
		}
		if _, err := unmarshalLocal(priv, self, a.marshal()); err != nil {
			t.Fatalf("round trip: %v", err)
		}
	})
}
