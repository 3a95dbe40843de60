package identity

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestLoadOrCreateKeepsIdentity(t *testing.T) {
	path := filepath.Join(t.TempDir(), KeyFile)
	k1, err := LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %04o, want 0600", st.Mode().Perm())
	}
	k2, err := LoadOrCreate(path)
	if err != nil {
		t.Fatal(err)
	}
	id1, _ := PeerID(k1)
	id2, _ := PeerID(k2)
	if id1 != id2 || id1 == "" {
		t.Fatalf("peer id changed: %s then %s", id1, id2)
	}
}

func TestLoadRefusesLoosePermissions(t *testing.T) {
	path := filepath.Join(t.TempDir(), KeyFile)
	if _, err := LoadOrCreate(path); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o666} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadOrCreate(path); !errors.Is(err, ErrKeyPermissions) {
			t.Fatalf("mode %04o: err = %v, want ErrKeyPermissions", mode, err)
		}
	}
}

func TestLoadRefusesDamagedKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), KeyFile)
	if err := os.WriteFile(path, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreate(path); err == nil {
		t.Fatal("damaged key accepted")
	}
	raw, _ := os.ReadFile(path)
	if string(raw) != "not a key" {
		t.Fatal("damaged key was overwritten")
	}
}

func TestSignVerifyDomains(t *testing.T) {
	k, err := LoadOrCreate(filepath.Join(t.TempDir(), KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := PeerID(k)
	sig, err := Sign(k, DomainRoomEvent, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(id, DomainRoomEvent, []byte("hello"), sig); err != nil {
		t.Fatal(err)
	}
	if err := Verify(id, DomainContactCert, []byte("hello"), sig); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("cross-domain signature verified: %v", err)
	}
	if err := Verify(id, DomainRoomEvent, []byte("hellO"), sig); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("changed payload verified: %v", err)
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"human", true}, {"claude-api.2", true}, {"", false}, {"-x", false}, {"Bad", false}, {"a b", false},
	} {
		_, err := ParseAgentName(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseAgentName(%q) err = %v", tc.in, err)
		}
	}
	r := NewRoomID()
	if _, err := ParseRoomID(string(r)); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseRoomID("ABC"); err == nil {
		t.Fatal("bad room id accepted")
	}
	k, _ := LoadOrCreate(filepath.Join(t.TempDir(), KeyFile))
	id, _ := PeerID(k)
	a, err := ParseAgentAddr("bob@" + id.String())
	if err != nil || a.Peer != id || a.Name != "bob" || a.String() != "bob@"+id.String() {
		t.Fatalf("ParseAgentAddr: %+v %v", a, err)
	}
	if _, err := ParseAgentAddr("bob@nope"); err == nil {
		t.Fatal("bad peer accepted")
	}
}
