package install

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/tailscale/hujson"
)

var fuzzServer = jobj{{"type", "stdio"}, {"command", "/opt/bin/parley"}, {"args", []any{"mcp"}}}

var fuzzHook = jobj{{"matcher", "*"}, {"hooks", []any{jobj{{"type", "command"}, {"command", "/opt/bin/parley hook claude PostToolUse"}, {"timeout", 10}}}}}

// FuzzJSONEdit checks the text-splicing editor on any valid input: every
// edit leaves a valid document, adding Parley's entries and taking them out
// again with the undo records gives back the input byte for byte, and
// taking them out without records leaves a valid document without them.
func FuzzJSONEdit(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, dialect := range []jsonDialect{plainJSON, jsonComments, jsonCommentsCommas} {
			src := []byte(in)
			d, err := newJSONDoc(src, dialect)
			if err != nil {
				continue
			}
			orig := append([]byte(nil), d.src...)
			changed, u1, err := d.put([]string{"mcpServers", "parley"}, fuzzServer)
			if err != nil {
				continue // a conflict: something else sits where the entry goes
			}
			u2, err := d.appendTo([]string{"hooks", "PostToolUse"}, fuzzHook)
			if err != nil {
				continue
			}
			if _, err := checkJSON(d.src, dialect); err != nil {
				t.Fatalf("edit made %s invalid: %v\n%q", dialect, err, d.src)
			}
			root, _ := d.parse()
			if got, _ := decodeValue(d.src, lookup(&root, []string{"mcpServers", "parley"})); !reflect.DeepEqual(got, plain(fuzzServer)) {
				t.Fatalf("server entry is %v", got)
			}
			installed := append([]byte(nil), d.src...)

			// Undo with the records, last edit first.
			arr := lookup(&root, u2.Path).Value.(*hujson.Array)
			if err := d.removeElement(u2.Path, len(arr.Elements)-1, u2.Created, u2.EmptyInner); err != nil {
				t.Fatal(err)
			}
			if changed && u1.Prev != nil {
				if err := d.replaceRaw(u1.Path, *u1.Prev); err != nil {
					t.Fatal(err)
				}
			} else if changed {
				if _, err := d.removeMember(u1.Path, u1.Created, u1.EmptyInner); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(d.src, orig) {
				t.Fatalf("%s: install then uninstall is not the identity:\nin:  %q\nmid: %q\nout: %q", dialect, orig, installed, d.src)
			}

			// Without records.
			d.src = installed
			root, _ = d.parse()
			arr = lookup(&root, u2.Path).Value.(*hujson.Array)
			if err := d.removeElement(u2.Path, len(arr.Elements)-1, -1, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := d.removeMember(u1.Path, -1, nil); err != nil {
				t.Fatal(err)
			}
			root, err = d.parse()
			if err != nil {
				t.Fatalf("removal without records made it invalid: %v", err)
			}
			if lookup(&root, []string{"mcpServers", "parley"}) != nil {
				t.Fatalf("entry still there: %q", d.src)
			}
		}
	})
}

var jsonSeeds = []string{
	"{}",
	"{}\n",
	"{ }",
	"{\n}\n",
	"  {\"a\": 1}  ",
	"{\n  \"a\": 1\n}\n",
	"{\n  \"a\": 1,\n}\n",
	"{\"a\":1,\"b\":[1,2,]}",
	"{\n  \"mcpServers\": {}\n}",
	"{\n  \"mcpServers\": {\n  }\n}",
	"{\n  \"mcpServers\": {\"x\": {}}, \"hooks\": {\"PostToolUse\": []}\n}",
	"{\r\n\t\"hooks\": {\r\n\t\t\"PostToolUse\": [\r\n\t\t\t{\"matcher\": \"Bash\"}\r\n\t\t]\r\n\t}\r\n}\r\n",
	"{\n  // comment\n  \"a\": 1 // trailing\n  /* block\n  */\n}\n",
	"{ /* c */ }",
	"{\n  \"hooks\": {\n    // none yet\n  }\n}",
	"{\"mcpServers\": {\"parley\": {\"command\": \"old\"}}}",
	"{\"mcpServers\": null}",
	"{\"hooks\": {\"PostToolUse\": {}}}",
	"{\"a\": \"\\u00e9\\n\", \"b\": [ ], \"c\": {\"d\": {}}}",
}
