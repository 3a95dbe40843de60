package config

import "testing"

func FuzzParse(f *testing.F) {
	f.Add([]byte(Default("alice")))
	f.Add([]byte("handle = x\nlisten = /ip4/127.0.0.1/tcp/0\nmdns = off\n"))
	f.Add([]byte("= \n#\nbootstrap=/ip4/1.2.3.4/tcp/1/p2p/x"))
	f.Add([]byte("handle = \"a b\"\nhandle = c\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := Parse(raw)
		if err != nil {
			return
		}
		if len(c.Listen) == 0 {
			t.Fatal("parsed config has no listen address")
		}
		// A handle read back is one the file can hold as it is written.
		if c.Handle != "" {
			if err := CheckHandle(c.Handle); err != nil {
				t.Fatalf("parsed handle %q: %v", c.Handle, err)
			}
			back, err := Parse([]byte("handle = " + handleValue(c.Handle) + "\n"))
			if err != nil || back.Handle != c.Handle {
				t.Fatalf("handle %q written back reads %q, %v", c.Handle, back.Handle, err)
			}
		}
	})
}
