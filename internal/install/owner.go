package install

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
	"github.com/tailscale/hujson"
)

// --- whose is the server entry under Parley's name ---

// An entry under Parley's server name is Parley's own when it says nothing
// Parley would not write: it starts Parley's MCP server (a parley program,
// then `mcp`), it sets only the keys Parley writes (another key may be there
// empty, like the "env": {} of `claude mcp add`), and it holds no comment.
// Install replaces such an entry (and the record keeps its text, which
// uninstall puts back); uninstall, with or without the record, takes out
// only such an entry. Any other entry under the name is the user's: install
// refuses it (ErrConflict, with its line) and uninstall leaves it.

// serverKeys lists the keys Parley writes in its server entry.
func (t target) serverKeys() []string {
	var keys []string
	if o, ok := t.serverValue.(jobj); ok {
		for _, kv := range o {
			keys = append(keys, kv.k)
		}
	}
	for _, kv := range t.serverTOML {
		keys = append(keys, kv.k)
	}
	return keys
}

// notOwnServer returns why a decoded server entry is not Parley's own, or
// "" when it is. comments says whether its text holds a comment.
func (t target) notOwnServer(k known, v any, comments bool) string {
	m, ok := v.(map[string]any)
	if !ok {
		return "it is not an object"
	}
	if !k.server(m) {
		if c := serverCommand(m); c != "" {
			return fmt.Sprintf("it runs %s", strings.Join(append([]string{c}, serverArgs(m)...), " "))
		}
		return "it names no parley program to run"
	}
	var extra []string
	for key, val := range m {
		if !slices.Contains(t.serverKeys(), key) && !isEmptyValue(val) {
			extra = append(extra, key)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return "it also sets " + strings.Join(extra, ", ")
	}
	if comments {
		return "it holds comments"
	}
	return ""
}

// serverArgs returns the arguments of a decoded server entry.
func serverArgs(m map[string]any) []string {
	var out []string
	a, ok := m["args"].([]any)
	if c, isList := m["command"].([]any); isList && len(c) > 0 {
		a, ok = c[1:], true
	}
	if ok {
		for _, x := range a {
			out = append(out, fmt.Sprint(x))
		}
	}
	return out
}

// isEmptyValue reports whether v is an empty object, array or string.
func isEmptyValue(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	case string:
		return x == ""
	}
	return false
}

// userServerError is the refusal of a server entry that is the user's.
func userServerError(name, why string, line, col int) error {
	return &ConfigError{Line: line, Column: col, Err: ErrConflict,
		Msg: fmt.Sprintf("%s is not an entry Parley wrote (%s), so Parley will not replace it: rename it or remove it, then run the install again", name, why)}
}

// checkServerJSON refuses (ErrConflict) a server entry at t.server that is
// not Parley's own and not already what Parley writes.
func (d *jsonDoc) checkServerJSON(t target, k known) error {
	root, err := d.parse()
	if err != nil {
		return err
	}
	m := memberAt(&root, t.server)
	if m == nil {
		return nil
	}
	v, err := decodeValue(d.src, &m.Value)
	if err != nil || reflect.DeepEqual(v, plain(t.serverValue)) {
		return err
	}
	if why := t.notOwnServer(k, v, hasJSONComment(d.src[m.Value.StartOffset:m.Value.EndOffset])); why != "" {
		line, col := lineCol(d.src, m.Name.StartOffset)
		return userServerError(strings.Join(t.server, "."), why, line, col)
	}
	return nil
}

// memberAt returns the (first) member at path, or nil.
func memberAt(root *hujson.Value, path []string) *hujson.ObjectMember {
	parent, ok := objectOf(lookup(root, path[:len(path)-1]))
	if !ok {
		return nil
	}
	i := memberIndex(parent, path[len(path)-1])
	if i < 0 {
		return nil
	}
	return &parent.Members[i]
}

// hasJSONComment reports whether JSON text holds a comment.
func hasJSONComment(src []byte) bool {
	for i := 0; i < len(src); i++ {
		switch {
		case src[i] == '"':
			for i++; i < len(src) && src[i] != '"'; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case src[i] == '/' && i+1 < len(src) && (src[i+1] == '/' || src[i+1] == '*'):
			return true
		}
	}
	return false
}

// tomlServer describes the table at path as TOML reads it: the offset of
// its header (or, when it has none, of its first sub-table's), its decoded
// value, sub-tables included ([mcp_servers.parley.env] sets the same env
// as an inline env = { … }), and whether its block or a sub-table's holds
// a comment. ok is false when the file defines no such table.
func (d *tomlDoc) tomlServer(path []string) (at int, keys map[string]any, comments, ok bool, err error) {
	exprs, err := d.exprs()
	if err != nil {
		return 0, nil, false, false, err
	}
	header, sub := -1, -1
	for i, e := range exprs {
		if e.kind != unstable.Table || !hasPrefix(e.key, path) {
			continue
		}
		switch {
		case len(e.key) == len(path):
			header = e.start
		case sub < 0:
			sub = e.start
		}
		start, end := tableBlock(exprs, i)
		comments = comments || hasTOMLComment(d.src[start:end])
	}
	if at = header; at < 0 {
		at = sub
	}
	if at < 0 {
		return 0, nil, false, false, nil
	}
	m, err := d.decode()
	if err != nil {
		return 0, nil, false, false, err
	}
	keys, _ = dig(m, path)
	return at, keys, comments, true, nil
}

// hasTOMLComment reports whether TOML text holds a comment.
func hasTOMLComment(src []byte) bool {
	for i := 0; i < len(src); i++ {
		switch c := src[i]; {
		case c == '#':
			return true
		case c == '"' || c == '\'':
			q := string(c)
			if i+2 < len(src) && src[i+1] == c && src[i+2] == c {
				q = strings.Repeat(q, 3)
			}
			i += len(q)
			for i < len(src) && !bytes.HasPrefix(src[i:], []byte(q)) {
				if c == '"' && src[i] == '\\' {
					i++
				}
				i++
			}
			i += len(q) - 1
		}
	}
	return false
}

// notOwnTable returns why the table at t.server is not Parley's own (""
// when it is, or when there is none), and the line of its header.
func (d *tomlDoc) notOwnTable(t target, k known) (string, int, error) {
	at, keys, comments, ok, err := d.tomlServer(t.server)
	if err != nil || !ok {
		return "", 0, err
	}
	line, _ := lineCol(d.src, at)
	return t.notOwnServer(k, keys, comments), line, nil
}
