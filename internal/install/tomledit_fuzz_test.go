package install

import (
	"bytes"
	"reflect"
	"testing"
)

var (
	fuzzNotify = []string{"/opt/bin/parley", "hook", "codex", "notify"}
	fuzzTable  = []tomlKV{{"command", "/opt/bin/parley"}, {"args", []string{"mcp"}}, {"tool_timeout_sec", 120}}
)

// FuzzTOMLEdit checks the TOML editor like FuzzJSONEdit: edits keep the
// file valid, install then uninstall with the records is the identity, and
// without records the entries go and the file stays valid.
func FuzzTOMLEdit(f *testing.F) {
	for _, s := range tomlSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		d, err := newTOMLDoc([]byte(in))
		if err != nil {
			return
		}
		orig := append([]byte(nil), d.src...)
		c1, u1, err := d.putTopKey("notify", fuzzNotify)
		if err != nil {
			return
		}
		c2, u2, err := d.putTable([]string{"mcp_servers", "parley"}, fuzzTable)
		if err != nil {
			return
		}
		m, err := d.decode()
		if err != nil {
			t.Fatalf("edit made it invalid: %v\n%q", err, d.src)
		}
		if !reflect.DeepEqual(m["notify"], tomlPlain(fuzzNotify)) {
			t.Fatalf("notify is %v in %q", m["notify"], d.src)
		}
		if tv, _ := tableValue(m, []string{"mcp_servers", "parley"}); tv["command"] != "/opt/bin/parley" {
			t.Fatalf("table is %v in %q", tv, d.src)
		}
		installed := append([]byte(nil), d.src...)
		if c2 {
			if _, err := d.removeTable(u2, true); err != nil {
				t.Fatal(err)
			}
		}
		if c1 {
			if _, err := d.removeTopKey(u1, true); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(d.src, orig) {
			t.Fatalf("install then uninstall is not the identity:\nin:  %q\nmid: %q\nout: %q", orig, installed, d.src)
		}
		d.src = installed
		if _, err := d.removeTable(tomlUndo{Path: u2.Path, Table: true}, false); err != nil {
			t.Fatal(err)
		}
		if _, err := d.removeTopKey(tomlUndo{Path: u1.Path}, false); err != nil {
			t.Fatal(err)
		}
		m, err = d.decode()
		if err != nil {
			t.Fatalf("removal without records made it invalid: %v", err)
		}
		if _, ok := m["notify"]; ok {
			t.Fatalf("notify still there: %q", d.src)
		}
	})
}

var tomlSeeds = []string{
	"",
	"\n",
	"model = \"o3\"",
	"model = \"o3\"\n",
	"# my config\nmodel = \"o3\" # the model\n\n[profiles.fast]\nmodel = \"o4-mini\"\n",
	"# my config\n\n# servers\n[mcp_servers.docs]\ncommand = \"docs\"\nargs = [\"--stdio\"]\n",
	"[mcp_servers.docs]\r\ncommand = \"docs\"\r\n",
	"approval_policy = \"never\"\n[features]\nhooks = true\n[[skills]]\nname = 'x'\n",
	"notify = [\"notify-send\", \"codex\"]\n[tui]\nnotifications = true\n",
	"[mcp_servers.parley]\ncommand = \"parley\"\nargs = [\"mcp\"]\n\n[mcp_servers.parley.env]\nA = \"1\"\n",
	"a = 1\n\n\n",
	"a = \"\"\"\nmulti\nline\n\"\"\"\n[t]\n",
	"[ mcp_servers . \"parley\" ]\ncommand = 'x'\n",
	"[projects.\"/home/u/p\"]\ntrust_level = \"trusted\"",
}
