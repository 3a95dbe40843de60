package install

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// tomlDoc is a TOML config file edited by splicing its text, like jsonDoc:
// Parley's table is appended whole, a top-level key goes in before the first
// table, and nothing else is touched. go-toml checks the file before and
// after each edit.
type tomlDoc struct {
	src []byte
	nl  string
}

// tomlUndo says how to take an added table or key out again byte for byte.
type tomlUndo struct {
	// Path is the table's header path, or the key's name (one element).
	Path []string `json:"path"`
	// Table is true for a table, false for a top-level key.
	Table bool `json:"table,omitempty"`
	// Before and After are the separators written around the entry.
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// Prev is the text the entry replaced, when it replaced one.
	Prev *string `json:"prev,omitempty"`
	// Found is true when the entry was there, as Parley writes it, before
	// the install: it is not Parley's, and an uninstall leaves it in place.
	Found bool `json:"found,omitempty"`
}

// tomlExpr is one top-level expression: a key/value line (with its table's
// path prefixed to its key) or a table header.
type tomlExpr struct {
	kind       unstable.Kind // KeyValue, Table or ArrayTable
	key        []string
	start, end int // from the start of its first line to just after its last newline
}

// newTOMLDoc checks src as TOML.
func newTOMLDoc(src []byte) (*tomlDoc, error) {
	d := &tomlDoc{src: src, nl: detectNewline(src)}
	if _, err := d.decode(); err != nil {
		return nil, err
	}
	return d, nil
}

// decode checks and decodes the document.
func (d *tomlDoc) decode() (map[string]any, error) {
	return decodeTOML(d.src)
}

// decodeTOML decodes a TOML file's text (a byte order mark before it is
// passed over).
func decodeTOML(src []byte) (map[string]any, error) {
	_, src = splitBOM(src)
	m := map[string]any{}
	if err := toml.Unmarshal(src, &m); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, &ConfigError{Line: row, Column: col, Msg: "not valid TOML: " + de.Error(), Err: ErrInvalid}
		}
		return nil, &ConfigError{Msg: "not valid TOML: " + err.Error(), Err: ErrInvalid}
	}
	return m, nil
}

// exprs lists the document's top-level expressions.
func (d *tomlDoc) exprs() ([]tomlExpr, error) {
	var out []tomlExpr
	p := unstable.Parser{}
	p.Reset(d.src)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.KeyValue:
			key := append([]string(nil), table...)
			it := e.Key()
			for it.Next() {
				key = append(key, string(it.Node().Data))
			}
			start := e.Raw.Offset
			if startsLine(d.src, int(start)) {
				start = uint32(lineStart(d.src, int(start)))
			}
			out = append(out, tomlExpr{kind: e.Kind, key: key, start: int(start), end: restOfLine(d.src, int(e.Raw.Offset+e.Raw.Length))})
		case unstable.Table, unstable.ArrayTable:
			var key []string
			first, last := -1, 0
			it := e.Key()
			for it.Next() {
				n := it.Node()
				key = append(key, string(n.Data))
				if first < 0 {
					first = int(n.Raw.Offset)
				}
				last = int(n.Raw.Offset + n.Raw.Length)
			}
			// The key's raw range may leave out a closing quote.
			closeAt := bytes.IndexByte(d.src[last:], ']')
			if closeAt < 0 {
				return nil, fmt.Errorf("install: cannot find the end of table header %q", strings.Join(key, "."))
			}
			end := last + closeAt + 1
			if e.Kind == unstable.ArrayTable && end < len(d.src) && d.src[end] == ']' {
				end++
			}
			table = key
			out = append(out, tomlExpr{kind: e.Kind, key: key, start: lineStart(d.src, first), end: restOfLine(d.src, end)})
		}
	}
	if err := p.Error(); err != nil {
		return nil, &ConfigError{Msg: "not valid TOML: " + err.Error(), Err: ErrInvalid}
	}
	return out, nil
}

// restOfLine returns the offset just after the newline ending the line that
// holds offset i (the end of the text when it has none).
func restOfLine(src []byte, i int) int {
	if k := bytes.IndexByte(src[i:], '\n'); k >= 0 {
		return i + k + 1
	}
	return len(src)
}

func hasPrefix(key, prefix []string) bool {
	return len(key) >= len(prefix) && reflect.DeepEqual(key[:len(prefix)], prefix)
}

// tableBlock returns the text range of the table at index i of exprs: its
// header and its keys (not the comments and blank lines after its last key).
func tableBlock(exprs []tomlExpr, i int) (int, int) {
	start, end := exprs[i].start, exprs[i].end
	for k := i + 1; k < len(exprs) && exprs[k].kind == unstable.KeyValue; k++ {
		end = exprs[k].end
	}
	return start, end
}

// tomlKV is one key of a table Parley writes.
type tomlKV struct {
	k string
	v any
}

// renderTable writes a table header and its keys.
func (d *tomlDoc) renderTable(path []string, kvs []tomlKV) string {
	var b strings.Builder
	b.WriteString("[")
	for i, p := range path {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tomlKey(p))
	}
	b.WriteString("]" + d.nl)
	for _, kv := range kvs {
		b.WriteString(tomlKey(kv.k) + " = " + tomlValue(kv.v) + d.nl)
	}
	return b.String()
}

// tomlKey writes a bare key when it can, else a quoted one.
func tomlKey(k string) string {
	if k == "" {
		return `""`
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return tomlString(k)
		}
	}
	return k
}

// tomlString writes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func tomlValue(v any) string {
	switch x := v.(type) {
	case string:
		return tomlString(x)
	case []string:
		parts := make([]string, len(x))
		for i, s := range x {
			parts[i] = tomlString(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	}
	panic(fmt.Sprintf("install: no TOML form for %#v", v))
}

// tomlPlain is what decoding the rendered value gives, for comparison.
func tomlPlain(v any) any {
	switch x := v.(type) {
	case []string:
		a := make([]any, len(x))
		for i, s := range x {
			a[i] = s
		}
		return a
	case int:
		return int64(x)
	}
	return v
}

// apply applies splices and re-checks the result.
func (d *tomlDoc) apply(sp ...splice) error {
	out := applySplices(d.src, sp)
	if _, err := decodeTOML(out); err != nil {
		return fmt.Errorf("install: an edit made the file invalid (a bug in Parley; nothing was written): %w", err)
	}
	d.src = out
	return nil
}

func applySplices(src []byte, sp []splice) []byte {
	// Highest first, so earlier offsets stay right.
	for i := 1; i < len(sp); i++ {
		for j := i; j > 0 && sp[j].at > sp[j-1].at; j-- {
			sp[j], sp[j-1] = sp[j-1], sp[j]
		}
	}
	out := append([]byte(nil), src...)
	for _, s := range sp {
		out = append(out[:s.at], append([]byte(s.text), out[s.end:]...)...)
	}
	return out
}

// tableAt finds the table whose header is path, and reports any key that
// defines something under path outside that table (an inline table, a
// dotted key), which Parley will not edit.
func (d *tomlDoc) tableAt(exprs []tomlExpr, path []string) (int, error) {
	at := -1
	inside := false
	for i, e := range exprs {
		switch e.kind {
		case unstable.Table, unstable.ArrayTable:
			inside = hasPrefix(e.key, path)
			if reflect.DeepEqual(e.key, path) {
				if e.kind == unstable.ArrayTable || at >= 0 {
					return -1, d.conflict(e.start, fmt.Sprintf("[%s] is defined in a form Parley does not edit", strings.Join(path, ".")))
				}
				at = i
			}
		case unstable.KeyValue:
			if !inside && hasPrefix(path, e.key) && len(e.key) < len(path) {
				// mcp_servers = { … }: the whole table is one inline value.
				return -1, d.conflict(e.start, fmt.Sprintf("%s is an inline table here, so [%s] cannot be added beside it; write it as [%s.NAME] tables, or add Parley's entry to it by hand",
					strings.Join(e.key, "."), strings.Join(path, "."), strings.Join(e.key, ".")))
			}
			if !inside && (hasPrefix(e.key, path) || hasPrefix(path, e.key)) {
				return -1, d.conflict(e.start, fmt.Sprintf("%s is set here with a dotted key or an inline table, a form Parley does not edit; remove it, or edit it by hand", strings.Join(e.key, ".")))
			}
		}
	}
	return at, nil
}

func (d *tomlDoc) conflict(off int, msg string) error {
	line, _ := lineCol(d.src, off)
	return &ConfigError{Line: line, Msg: msg, Err: ErrConflict}
}

// tableValue decodes the keys of the table at path (without its sub-tables).
func tableValue(m map[string]any, path []string) (map[string]any, bool) {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = mm[p]
		if !ok {
			return nil, false
		}
	}
	mm, ok := cur.(map[string]any)
	if !ok {
		return nil, false
	}
	out := map[string]any{}
	for k, v := range mm {
		if _, sub := v.(map[string]any); !sub {
			out[k] = v
		}
	}
	return out, true
}

// putTable writes the table at path with exactly kvs (its sub-tables, if
// any, are left alone). It reports whether anything changed.
func (d *tomlDoc) putTable(path []string, kvs []tomlKV) (bool, tomlUndo, error) {
	undo := tomlUndo{Path: append([]string(nil), path...), Table: true}
	exprs, err := d.exprs()
	if err != nil {
		return false, undo, err
	}
	i, err := d.tableAt(exprs, path)
	if err != nil {
		return false, undo, err
	}
	block := d.renderTable(path, kvs)
	if i >= 0 {
		m, err := d.decode()
		if err != nil {
			return false, undo, err
		}
		want := map[string]any{}
		for _, kv := range kvs {
			want[kv.k] = tomlPlain(kv.v)
		}
		if cur, _ := tableValue(m, path); reflect.DeepEqual(cur, want) {
			return false, undo, nil
		}
		start, end := tableBlock(exprs, i)
		prev := string(d.src[start:end])
		undo.Prev = &prev
		if !strings.HasSuffix(prev, "\n") {
			block = strings.TrimSuffix(block, d.nl)
		}
		return true, undo, d.apply(splice{start, end, block})
	}
	// Append at the end, after a blank line.
	src := d.src
	switch {
	case len(bytes.TrimSpace(src)) == 0:
	case !bytes.HasSuffix(src, []byte("\n")):
		undo.Before = d.nl + d.nl
	case !bytes.HasSuffix(bytes.TrimRight(src, " \t\r"), []byte("\n\n")):
		undo.Before = d.nl
	}
	return true, undo, d.apply(splice{len(src), len(src), undo.Before + block})
}

// removeTable takes the table at u.Path out (and its sub-tables), or puts
// back what it replaced. Without a record (recorded false) it also takes
// out the blank line a table at the end has before it.
func (d *tomlDoc) removeTable(u tomlUndo, recorded bool) (bool, error) {
	exprs, err := d.exprs()
	if err != nil {
		return false, err
	}
	i := -1
	for k, e := range exprs {
		if e.kind == unstable.Table && reflect.DeepEqual(e.key, u.Path) {
			i = k
			break
		}
	}
	if i < 0 {
		return false, nil
	}
	start, end := tableBlock(exprs, i)
	if u.Prev != nil {
		return true, d.apply(splice{start, end, *u.Prev})
	}
	sp := []splice{{start, end, ""}}
	// Empty sub-tables written under Parley's table since (one that sets a
	// key makes the table the user's, which uninstall leaves) would be left
	// defining a server with no command: they go too. Those before it were
	// there before Parley's table and stay.
	for k := i + 1; k < len(exprs); k++ {
		if e := exprs[k]; e.kind == unstable.Table && hasPrefix(e.key, u.Path) {
			s, en := tableBlock(exprs, k)
			if s-len(d.nl) >= end && bytes.HasSuffix(d.src[:s], []byte(d.nl+d.nl)) {
				s -= len(d.nl) // with the blank line before it
			}
			sp = append(sp, splice{s, en, ""})
		}
	}
	// The separator written before it: all of it at the end of the file,
	// or before a blank line (the text before had no newline at its end);
	// elsewhere only a blank line (what follows needs the newline).
	blank := bytes.HasSuffix(d.src[:start], []byte(d.nl+d.nl))
	whole := recorded && u.Before != "" && bytes.HasSuffix(d.src[:start], []byte(u.Before))
	switch {
	case whole && (end == len(d.src) || u.Before == d.nl+d.nl && isBlankLineAt(d.src, end)):
		sp[0].at -= len(u.Before)
	case blank && (!recorded || u.Before != ""):
		sp[0].at -= len(d.nl)
	}
	return true, d.apply(sp...)
}

// putTopKey sets a top-level key, writing a new one before the first table
// (after the last top-level key, or before the comments that lead into the
// first table).
func (d *tomlDoc) putTopKey(name string, value any) (bool, tomlUndo, error) {
	undo := tomlUndo{Path: []string{name}}
	exprs, err := d.exprs()
	if err != nil {
		return false, undo, err
	}
	line := tomlKey(name) + " = " + tomlValue(value)
	lastTop, firstTable := -1, -1
	for k, e := range exprs {
		if e.kind != unstable.KeyValue {
			firstTable = k
			break
		}
		if len(e.key) >= 1 && e.key[0] == name {
			if len(e.key) > 1 {
				return false, undo, d.conflict(e.start, fmt.Sprintf("%s is defined here in another form; remove it, or edit it by hand", name))
			}
			m, err := d.decode()
			if err != nil {
				return false, undo, err
			}
			if reflect.DeepEqual(m[name], tomlPlain(value)) {
				return false, undo, nil
			}
			prev := string(d.src[e.start:e.end])
			undo.Prev = &prev
			text := line + d.nl
			if !strings.HasSuffix(prev, "\n") {
				text = line
			}
			return true, undo, d.apply(splice{e.start, e.end, text})
		}
		lastTop = k
	}
	src := d.src
	switch {
	case lastTop >= 0:
		at := exprs[lastTop].end
		if !bytes.HasSuffix(src[:at], []byte("\n")) {
			undo.Before = d.nl
		}
		return true, undo, d.apply(splice{at, at, undo.Before + line + d.nl})
	case firstTable >= 0:
		at := exprs[firstTable].start
		// Go up over the comment lines that lead into the table.
		for at > 0 {
			prev := lineStart(src, at-1)
			if !bytes.HasPrefix(bytes.TrimLeft(src[prev:at], " \t"), []byte("#")) {
				break
			}
			at = prev
		}
		undo.After = d.nl
		return true, undo, d.apply(splice{at, at, line + d.nl + undo.After})
	}
	// No table: at the end.
	if len(src) > 0 && !bytes.HasSuffix(src, []byte("\n")) {
		undo.Before = d.nl
	}
	return true, undo, d.apply(splice{len(src), len(src), undo.Before + line + d.nl})
}

// removeTopKey takes a top-level key out, or puts back what it replaced.
// Without a record it also takes out the blank line after a key that
// stands alone before a table.
func (d *tomlDoc) removeTopKey(u tomlUndo, recorded bool) (bool, error) {
	exprs, err := d.exprs()
	if err != nil {
		return false, err
	}
	for _, e := range exprs {
		if e.kind != unstable.KeyValue {
			break
		}
		if len(e.key) != 1 || e.key[0] != u.Path[0] {
			continue
		}
		if u.Prev != nil {
			return true, d.apply(splice{e.start, e.end, *u.Prev})
		}
		start, end := e.start, e.end
		src := d.src
		if u.Before != "" && strings.HasSuffix(string(src[:start]), u.Before) && end == len(src) {
			start -= len(u.Before)
		}
		after := u.After
		if !recorded && (start == 0 || bytes.HasSuffix(src[:start], []byte("\n\n")) || bytes.HasSuffix(src[:start], []byte("\n\r\n"))) {
			after = d.nl
		}
		if after != "" && strings.HasPrefix(string(src[end:]), after) && isBlankLineAt(src, end) {
			end += len(after)
		}
		return true, d.apply(splice{start, end, ""})
	}
	return false, nil
}

// isBlankLineAt reports whether the line starting at i is empty.
func isBlankLineAt(src []byte, i int) bool {
	return i < len(src) && (src[i] == '\n' || bytes.HasPrefix(src[i:], []byte("\r\n")))
}

// tomlShow writes a value read from a TOML file as the file would: an array
// of strings as ["a", "b"], not as Go prints it.
func tomlShow(v any) string {
	if a, ok := v.([]any); ok {
		parts := make([]string, len(a))
		for i, e := range a {
			parts[i] = tomlShow(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}
