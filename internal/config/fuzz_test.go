package config

import "testing"

func FuzzParse(f *testing.F) {
	f.Add([]byte(Default("alice")))
	f.Add([]byte("handle = x\nlisten = /ip4/127.0.0.1/tcp/0\nmdns = off\n"))
	f.Add([]byte("= \n#\nbootstrap=/ip4/1.2.3.4/tcp/1/p2p/x"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := Parse(raw)
		if err != nil {
			return
		}
		if len(c.Listen) == 0 {
			t.Fatal("parsed config has no listen address")
		}
	})
}
