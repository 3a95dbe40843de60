package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultRoundTrip(t *testing.T) {
	home := t.TempDir()
	f, err := LoadOrCreate(home, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if f.Handle != "alice" || !f.MDNS || len(f.Listen) != len(DefaultListen) || len(f.Bootstrap) != 0 {
		t.Fatalf("default config = %+v", f)
	}
	st, err := os.Stat(filepath.Join(home, FileName))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("config file: %v %v", st, err)
	}
	// A second load reads the same file and does not rewrite it.
	f2, err := LoadOrCreate(home, "bob")
	if err != nil || f2.Handle != "alice" {
		t.Fatalf("reload = %+v, %v", f2, err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"handle alice", "line 1"},
		{"# c\nfoo = bar", `line 2: unknown key "foo"`},
		{"listen = nonsense", "not a multiaddr"},
		{"bootstrap = /ip4/1.2.3.4/tcp/x", "not a multiaddr"},
		{"mdns = maybe", "mdns must be true or false"},
		{"handle = ", "handle must be"},
		{"ui_port = 70000", "ui_port must be a port number"},
		{"ui_port = x", "ui_port must be a port number"},
		{"handle = alice\nmdns = on\nhandle = bob", "line 3: handle is set again (first on line 1)"},
		{"ui_port = 1\nui_port = 2", "line 2: ui_port is set again"},
	} {
		_, err := Parse([]byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want error containing %q", tc.text, err, tc.want)
		}
	}
	// A file with several faults gives them all, in line order, on one
	// line (it gave the first, then the next once that was fixed).
	_, err := Parse([]byte("handle = a\nhandle = b\nmdns = maybe\nwat = 1\nui_port = x\n"))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 4 || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "line 2: handle is set again (first on line 1); keep one of the two; line 3: mdns must be true or false") ||
		!strings.Contains(err.Error(), `line 4: unknown key "wat"`) || !strings.Contains(err.Error(), "line 5: ui_port must be") {
		t.Fatalf("several faults: %v", err)
	}
	// A file that is no config at all: the first 10, and how many more.
	if _, err := Parse([]byte(strings.Repeat("garbage\n", 50))); err == nil || !strings.HasSuffix(err.Error(), "; and 40 more") {
		t.Fatalf("50 faults: %v", err)
	}
}

func TestParseValues(t *testing.T) {
	f, err := Parse([]byte("handle = Bob Smith # me\nlisten = /ip4/127.0.0.1/tcp/0\nmdns = off\nbootstrap = /ip4/127.0.0.1/tcp/1\nbootstrap = /ip4/127.0.0.1/tcp/2\nui_port = 4191\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Handle != "Bob Smith" || f.MDNS || len(f.Listen) != 1 || len(f.Bootstrap) != 2 || f.UIPort != 4191 {
		t.Fatalf("%+v", f)
	}
	// Quotes, as TOML would have them, are not part of the value; repeated
	// keys add values.
	f, err = Parse([]byte("handle = \"Bob Smith\"\nlisten = \"/ip4/127.0.0.1/tcp/0\"\nlisten = /ip4/127.0.0.1/udp/0/quic-v1\nrelay_service = \"on\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Handle != "Bob Smith" || len(f.Listen) != 2 || f.Listen[0] != "/ip4/127.0.0.1/tcp/0" || f.RelayService != "on" {
		t.Fatalf("quoted values: %+v", f)
	}
	// A value that is not one quoted string is taken as written: an earlier
	// Parley wrote such handles unquoted, and their files must still start.
	for _, h := range []string{`"Doc" Brown`, `"alice`, `Bob "the builder"`} {
		f, err := Parse([]byte("handle = " + h + "\n"))
		if err != nil || f.Handle != h {
			t.Errorf("handle = %s: %q, %v", h, f.Handle, err)
		}
	}
}

// SetHandle writes any valid handle so that it reads back the same, one
// that looks like a quoted string too.
func TestSetHandleRoundTrips(t *testing.T) {
	home := t.TempDir()
	if _, err := LoadOrCreate(home, "alice"); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{`"bob"`, `"Doc" Brown`, `Bob "the builder"`, `""x"`, "ünï cödé"} {
		if err := SetHandle(home, h); err != nil {
			t.Fatalf("SetHandle(%q): %v", h, err)
		}
		f, err := LoadOrCreate(home, "x")
		if err != nil || f.Handle != h {
			t.Errorf("SetHandle(%q) reads back %q, %v", h, f.Handle, err)
		}
	}
}

func TestBrokenFileIsNotTouched(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, FileName)
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadOrCreate(home, "x")
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v", err)
	}
	raw, _ := os.ReadFile(path)
	if string(raw) != "garbage" {
		t.Fatal("broken config was rewritten")
	}
}

func TestSetHandleKeepsTheRest(t *testing.T) {
	home := t.TempDir()
	if _, err := LoadOrCreate(home, "alice"); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(home, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := SetHandle(home, "carol"); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(filepath.Join(home, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(string(before), "handle = alice\n", "handle = carol\n", 1); string(after) != want {
		t.Fatalf("config after SetHandle:\n%s\nwant:\n%s", after, want)
	}
	f, err := LoadOrCreate(home, "ignored")
	if err != nil || f.Handle != "carol" {
		t.Fatalf("handle after SetHandle: %q, %v", f.Handle, err)
	}
	for _, bad := range []string{"", " x", "a#b", "a\x1bb", strings.Repeat("x", 65)} {
		if err := SetHandle(home, bad); err == nil {
			t.Errorf("SetHandle(%q) accepted", bad)
		}
	}
	// A file without a handle line gets one.
	if err := os.WriteFile(filepath.Join(home, FileName), []byte("mdns = false"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SetHandle(home, "dave"); err != nil {
		t.Fatal(err)
	}
	if f, err := LoadOrCreate(home, "x"); err != nil || f.Handle != "dave" || f.MDNS {
		t.Fatalf("after adding a handle line: %+v, %v", f, err)
	}
}

// A handle with a character that shows nothing (a Hangul filler, the blank
// Braille pattern, a bidi control, a zero-width space) is refused: it
// would only make the handle read like another. Handles of other scripts,
// with spaces, quotes, accents or an emoji keep working.
func TestCheckHandleRefusesInvisibleCharacters(t *testing.T) {
	for _, h := range []string{"bob\u3164", "\u3164", "b\u115fob", "bob\uffa0", "bob\u2800", "bo\u200bb", "bob\u202e", "a\u034flice", "bob\u00ad"} {
		if err := CheckHandle(h); err == nil {
			t.Errorf("CheckHandle(%+q) accepted", h)
		}
	}
	for _, h := range []string{"alice", "Jane Doe", `Bob "the builder"`, "ünï cödé", "\u674e\u96f7", "\u0430\u043b\u0438\u0441\u0430", "\u2764\ufe0f bob", "o'brien (ops)"} {
		if err := CheckHandle(h); err != nil {
			t.Errorf("CheckHandle(%q): %v", h, err)
		}
	}
}

// A file an earlier Parley wrote, whose handle holds a character that
// shows nothing (accepted then), still loads: the handle is read without
// it, with a warning that says what to do, and SetHandle replaces it.
func TestOlderHandleWithFillerStillLoads(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, FileName), []byte("handle = bob\u3164\nmdns = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := LoadOrCreate(home, "x")
	if err != nil {
		t.Fatal(err)
	}
	if f.Handle != "bob" || f.HandleAsWritten != "bob\u3164" || len(f.Warnings) != 1 ||
		!strings.Contains(f.Warnings[0], "line 1") || !strings.Contains(f.Warnings[0], "U+3164") || !strings.Contains(f.Warnings[0], "parley up --handle") {
		t.Fatalf("loaded %+v", f)
	}
	if err := SetHandle(home, "bob2"); err != nil {
		t.Fatal(err)
	}
	if f, err = LoadOrCreate(home, "x"); err != nil || f.Handle != "bob2" || f.Warnings != nil || f.MDNS {
		t.Fatalf("after SetHandle: %+v, %v", f, err)
	}
	// A handle of nothing but such characters leaves the node without one.
	if f, err := Parse([]byte("handle = \u3164\u3164\n")); err != nil || f.Handle != "" || len(f.Warnings) != 1 {
		t.Fatalf("a filler handle: %+v, %v", f, err)
	}
	// What was never accepted is still refused.
	if _, err := Parse([]byte("handle = bob\ue000\n")); err == nil {
		t.Fatal("a private-use character in a handle was taken")
	}
}
