package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"

	"github.com/tailscale/hujson"
)

// jsonDialect is the flavour of JSON a client reads from a config file.
type jsonDialect int

const (
	// plainJSON is RFC 8259 JSON: no comments, no trailing commas.
	plainJSON jsonDialect = iota
	// jsonComments allows // and /* */ comments but no trailing commas.
	jsonComments
	// jsonCommentsCommas allows comments and trailing commas (JWCC).
	jsonCommentsCommas
)

func (d jsonDialect) String() string {
	switch d {
	case jsonComments:
		return "JSON with comments"
	case jsonCommentsCommas:
		return "JSON with comments and trailing commas"
	}
	return "JSON"
}

// jsonDoc is a JSON config file edited by splicing its text: an edit
// changes only the bytes of the entry it adds, replaces or removes (and the
// comma beside it), so comments, order, spacing and line endings of
// everything else stay exactly as they were. Every edit re-checks the
// whole document.
type jsonDoc struct {
	src     []byte
	dialect jsonDialect
	nl      string // the file's line ending
	unit    string // the file's indent step
}

// jsonUndo says how to take an added entry out again so that the file comes
// back byte for byte, even after other edits elsewhere in it.
type jsonUndo struct {
	// Path names the entry: object member names, ending with the member
	// Parley owns (for an array element, the array's path).
	Path []string `json:"path"`
	// Created is how many trailing names of Path did not exist before (they
	// are removed with the entry when they hold nothing else).
	Created int `json:"created,omitempty"`
	// EmptyInner is the text inside the braces of the deepest container that
	// existed and was empty before the entry went in.
	EmptyInner *string `json:"empty_inner,omitempty"`
	// Prev is the member's value before it was replaced (when one was); for
	// a hook (Path hooks.EVENT), the user's group Parley's replaced, or with
	// PrevHook the user's hook in a group of theirs.
	Prev     *string `json:"prev,omitempty"`
	PrevHook bool    `json:"prev_hook,omitempty"`
	// Back is true once Prev is back in place of Parley's hook (an install
	// left the event out): the event's hooks are the user's.
	Back bool `json:"back,omitempty"`
	// Found is true when the entry was there, as Parley writes it, before
	// the install (a teammate's committed .mcp.json): it is not Parley's,
	// and an uninstall leaves it in place.
	Found bool `json:"found,omitempty"`
}

// newJSONDoc checks src as a config file of dialect d whose top level is an
// object. An empty (or all-blank) src stands for a missing file: it becomes
// "{}" and a newline.
func newJSONDoc(src []byte, d jsonDialect) (*jsonDoc, error) {
	if len(bytes.TrimSpace(src)) == 0 {
		src = []byte("{}\n")
	}
	doc := &jsonDoc{src: src, dialect: d}
	if _, err := doc.parse(); err != nil {
		return nil, err
	}
	doc.nl = detectNewline(src)
	doc.unit = detectIndent(src)
	return doc, nil
}

// parse parses and checks the document.
func (d *jsonDoc) parse() (hujson.Value, error) {
	return checkJSON(d.src, d.dialect)
}

// utf8BOM is the UTF-8 byte order mark some editors (on Windows) write at
// the start of a file. JSON parsers refuse it; Parley passes over it, and
// keeps it.
var utf8BOM = []byte("\ufeff")

// splitBOM splits a file's text into its byte order mark, if it starts
// with one, and the rest.
func splitBOM(src []byte) (bom, rest []byte) {
	if bytes.HasPrefix(src, utf8BOM) {
		return src[:len(utf8BOM)], src[len(utf8BOM):]
	}
	return nil, src
}

// withBOM puts bom back before text (text nil stays nil).
func withBOM(bom, text []byte) []byte {
	if len(bom) == 0 || text == nil {
		return text
	}
	return append(append([]byte(nil), bom...), text...)
}

// checkJSON parses src and checks it against the dialect.
func checkJSON(src []byte, d jsonDialect) (hujson.Value, error) {
	if d == plainJSON {
		// Syntax only: a number JSON allows but a float64 cannot hold
		// (1e400) is the user's to write, and stays as written.
		var raw json.RawMessage
		if err := json.Unmarshal(src, &raw); err != nil {
			line, col := 0, 0
			var se *json.SyntaxError
			if errors.As(err, &se) {
				line, col = lineCol(src, int(se.Offset))
			}
			msg := "not valid JSON: " + err.Error()
			if _, herr := hujson.Parse(src); herr == nil {
				msg = "comments or a trailing comma, which this client does not read (" + err.Error() + ")"
			}
			return hujson.Value{}, &ConfigError{Line: line, Column: col, Msg: msg, Err: ErrInvalid}
		}
	}
	v, err := hujson.Parse(src)
	if err != nil {
		line, col := 0, 0
		msg := err.Error()
		if n, _ := fmt.Sscanf(msg, "hujson: line %d, column %d:", &line, &col); n == 2 {
			if i := strings.Index(msg, ": "); i >= 0 {
				msg = msg[i+2:]
				if j := strings.Index(msg, ": "); j >= 0 {
					msg = msg[j+2:]
				}
			}
		}
		return hujson.Value{}, &ConfigError{Line: line, Column: col, Msg: "not valid " + d.String() + ": " + msg, Err: ErrInvalid}
	}
	if v.Value.Kind() != '{' {
		line, col := lineCol(src, v.StartOffset)
		return hujson.Value{}, &ConfigError{Line: line, Column: col, Msg: "the top level is not a JSON object", Err: ErrInvalid}
	}
	if d == jsonComments {
		if at := findTrailingComma(src, &v); at >= 0 {
			line, col := lineCol(src, at)
			return hujson.Value{}, &ConfigError{Line: line, Column: col, Msg: "a trailing comma, which this client does not read", Err: ErrInvalid}
		}
	}
	return v, nil
}

// findTrailingComma returns the offset of the first comma after the last
// item of an object or array, or -1.
func findTrailingComma(src []byte, v *hujson.Value) int {
	at := -1
	v.Range(func(x *hujson.Value) bool {
		if at >= 0 {
			return false
		}
		if end, ok := lastItemEnd(x); ok {
			if j := skipExtra(src, end); j < len(src) && src[j] == ',' {
				at = j
				return false
			}
		}
		return true
	})
	return at
}

// lastItemEnd returns the end offset of the last item of a container.
func lastItemEnd(v *hujson.Value) (int, bool) {
	switch c := v.Value.(type) {
	case *hujson.Object:
		if n := len(c.Members); n > 0 {
			return c.Members[n-1].Value.EndOffset, true
		}
	case *hujson.Array:
		if n := len(c.Elements); n > 0 {
			return c.Elements[n-1].EndOffset, true
		}
	}
	return 0, false
}

// --- reading ---

// lookup returns the value at path (object member names), or nil.
func lookup(root *hujson.Value, path []string) *hujson.Value {
	v := root
	for _, name := range path {
		obj, ok := v.Value.(*hujson.Object)
		if !ok {
			return nil
		}
		i := memberIndex(obj, name)
		if i < 0 {
			return nil
		}
		v = &obj.Members[i].Value
	}
	return v
}

// memberIndex returns the index of the first member called name, or -1.
func memberIndex(obj *hujson.Object, name string) int {
	for i := range obj.Members {
		if lit, ok := obj.Members[i].Name.Value.(hujson.Literal); ok && lit.String() == name {
			return i
		}
	}
	return -1
}

// countMembers counts the members called name.
func countMembers(obj *hujson.Object, name string) int {
	n := 0
	for i := range obj.Members {
		if lit, ok := obj.Members[i].Name.Value.(hujson.Literal); ok && lit.String() == name {
			n++
		}
	}
	return n
}

// decodeValue decodes the JSON value v (a part of src) into plain Go values
// (map[string]any, []any, string, json.Number, bool, nil).
func decodeValue(src []byte, v *hujson.Value) (any, error) {
	raw, err := hujson.Standardize(append([]byte(nil), src[v.StartOffset:v.EndOffset]...))
	if err != nil {
		return nil, err
	}
	return decodeJSON(raw)
}

// decodeJSON decodes one standard JSON value, numbers as written
// (json.Number: a float64 would refuse 1e400 and round others).
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// plain turns one of Parley's values (jobj, []any, …) into the plain Go
// values decodeValue returns, for comparison.
func plain(v any) any {
	raw, err := json.Marshal(jsonValue{v})
	if err != nil {
		panic(fmt.Sprintf("install: cannot encode %#v: %v", v, err))
	}
	out, err := decodeJSON(raw)
	if err != nil {
		panic(err)
	}
	return out
}

// --- writing values ---

// jobj is a JSON object whose members keep their order.
type jobj []jkv

type jkv struct {
	k string
	v any
}

// get returns the member k.
func (o jobj) get(k string) (any, bool) {
	for _, kv := range o {
		if kv.k == k {
			return kv.v, true
		}
	}
	return nil, false
}

// jsonValue makes a jobj (or anything holding one) encodable.
type jsonValue struct{ v any }

func (j jsonValue) MarshalJSON() ([]byte, error) {
	return []byte(renderJSON(j.v, "", "", "", false)), nil
}

// renderJSON writes v: pretty (one item a line, base the indent of the line
// it starts on) or compact (on one line, ", " and ": " between items).
func renderJSON(v any, base, unit, nl string, pretty bool) string {
	var b strings.Builder
	writeJSON(&b, v, base, unit, nl, pretty)
	return b.String()
}

func writeJSON(b *strings.Builder, v any, base, unit, nl string, pretty bool) {
	inner := base + unit
	sep := func(i int) {
		if i > 0 {
			b.WriteByte(',')
			if !pretty {
				b.WriteByte(' ')
			}
		}
		if pretty {
			b.WriteString(nl)
			b.WriteString(inner)
		}
	}
	switch x := v.(type) {
	case jobj:
		if len(x) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, kv := range x {
			sep(i)
			b.WriteString(jsonString(kv.k))
			b.WriteString(": ")
			writeJSON(b, kv.v, inner, unit, nl, pretty)
		}
		if pretty {
			b.WriteString(nl)
			b.WriteString(base)
		}
		b.WriteByte('}')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		o := make(jobj, 0, len(x))
		for _, k := range keys {
			o = append(o, jkv{k, x[k]})
		}
		writeJSON(b, o, base, unit, nl, pretty)
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		// Arrays of plain values stay on one line.
		flat := true
		for _, e := range x {
			switch e.(type) {
			case jobj, map[string]any, []any:
				flat = false
			}
		}
		b.WriteByte('[')
		for i, e := range x {
			if flat || !pretty {
				if i > 0 {
					b.WriteString(", ")
				}
				writeJSON(b, e, inner, unit, nl, false)
				continue
			}
			sep(i)
			writeJSON(b, e, inner, unit, nl, pretty)
		}
		if pretty && !flat {
			b.WriteString(nl)
			b.WriteString(base)
		}
		b.WriteByte(']')
	case []string:
		a := make([]any, len(x))
		for i, s := range x {
			a[i] = s
		}
		writeJSON(b, a, base, unit, nl, pretty)
	case string:
		b.WriteString(jsonString(x))
	default:
		raw, err := json.Marshal(x)
		if err != nil {
			panic(fmt.Sprintf("install: cannot encode %#v: %v", x, err))
		}
		b.Write(raw)
	}
}

// jsonString quotes s as a JSON string, leaving <, > and & alone.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// --- edits ---

// splice replaces src[at:end] with text.
type splice struct {
	at, end int
	text    string
}

// apply applies splices (which must not overlap) and re-checks the result.
func (d *jsonDoc) apply(sp ...splice) error {
	sort.Slice(sp, func(i, j int) bool { return sp[i].at > sp[j].at })
	out := append([]byte(nil), d.src...)
	for _, s := range sp {
		out = append(out[:s.at], append([]byte(s.text), out[s.end:]...)...)
	}
	if _, err := checkJSON(out, d.dialect); err != nil {
		return fmt.Errorf("install: an edit made the file invalid (a bug in Parley; nothing was written): %w", err)
	}
	d.src = out
	return nil
}

// walk follows path from the root through objects. It returns the deepest
// existing value and how many names it followed; a name that exists but
// does not hold an object (before the last) is a conflict.
func (d *jsonDoc) walk(root *hujson.Value, path []string) (*hujson.Value, int, error) {
	v := root
	for i, name := range path {
		obj, ok := v.Value.(*hujson.Object)
		if !ok {
			line, col := lineCol(d.src, v.StartOffset)
			return nil, 0, &ConfigError{Line: line, Column: col, Err: ErrConflict,
				Msg: fmt.Sprintf("%q holds %s, not an object; Parley will not change it", strings.Join(path[:i], "."), kindName(v))}
		}
		if countMembers(obj, name) > 1 {
			j := memberIndex(obj, name)
			line, col := lineCol(d.src, obj.Members[j].Name.StartOffset)
			return nil, 0, &ConfigError{Line: line, Column: col, Err: ErrConflict,
				Msg: fmt.Sprintf("%q appears more than once; remove the extra one first", strings.Join(path[:i+1], "."))}
		}
		j := memberIndex(obj, name)
		if j < 0 {
			return v, i, nil
		}
		v = &obj.Members[j].Value
	}
	return v, len(path), nil
}

func kindName(v *hujson.Value) string {
	switch v.Value.Kind() {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 'n':
		return "null"
	}
	return "a boolean"
}

// nest wraps value in objects named by names (outermost first).
func nest(names []string, value any) any {
	for i := len(names) - 1; i >= 0; i-- {
		value = jobj{{names[i], value}}
	}
	return value
}

// put sets the member at path to value, creating the objects on the way.
// It reports whether anything changed and how to undo it.
func (d *jsonDoc) put(path []string, value any) (bool, jsonUndo, error) {
	undo := jsonUndo{Path: append([]string(nil), path...)}
	root, err := d.parse()
	if err != nil {
		return false, undo, err
	}
	parent, n, err := d.walk(&root, path[:len(path)-1])
	if err != nil {
		return false, undo, err
	}
	if n < len(path)-1 {
		// Create path[n:] inside parent.
		undo.Created = len(path) - n
		sp, inner := d.insertItem(parent, path[n], nest(path[n+1:], value))
		undo.EmptyInner = inner
		return true, undo, d.apply(sp...)
	}
	obj, ok := parent.Value.(*hujson.Object)
	if !ok {
		_, _, err := d.walk(&root, path)
		return false, undo, err
	}
	name := path[len(path)-1]
	if countMembers(obj, name) > 1 {
		_, _, err := d.walk(&root, path)
		return false, undo, err
	}
	i := memberIndex(obj, name)
	if i < 0 {
		undo.Created = 1
		sp, inner := d.insertItem(parent, name, value)
		undo.EmptyInner = inner
		return true, undo, d.apply(sp...)
	}
	m := &obj.Members[i]
	cur, err := decodeValue(d.src, &m.Value)
	if err == nil && reflect.DeepEqual(cur, plain(value)) {
		return false, undo, nil
	}
	prev := string(d.src[m.Value.StartOffset:m.Value.EndOffset])
	undo.Prev = &prev
	return true, undo, d.replaceValue(&m.Name, &m.Value, value)
}

// appendTo adds value as the last element of the array at path, creating
// the array and the objects on the way.
func (d *jsonDoc) appendTo(path []string, value any) (jsonUndo, error) {
	undo := jsonUndo{Path: append([]string(nil), path...)}
	root, err := d.parse()
	if err != nil {
		return undo, err
	}
	v, n, err := d.walk(&root, path)
	if err != nil {
		return undo, err
	}
	if n < len(path) {
		undo.Created = len(path) - n
		sp, inner := d.insertItem(v, path[n], nest(path[n+1:], []any{value}))
		undo.EmptyInner = inner
		return undo, d.apply(sp...)
	}
	if _, ok := v.Value.(*hujson.Array); !ok {
		line, col := lineCol(d.src, v.StartOffset)
		return undo, &ConfigError{Line: line, Column: col, Err: ErrConflict,
			Msg: fmt.Sprintf("%q holds %s, not an array; Parley will not change it", strings.Join(path, "."), kindName(v))}
	}
	sp, inner := d.insertItem(v, "", value)
	undo.EmptyInner = inner
	return undo, d.apply(sp...)
}

// replaceValue writes value in place of v (the value of member name, or an
// array element when name is nil).
func (d *jsonDoc) replaceValue(name, v *hujson.Value, value any) error {
	start := v.StartOffset
	if name != nil {
		start = name.StartOffset
	}
	pretty := startsLine(d.src, start)
	text := renderJSON(value, lineIndent(d.src, start), d.unit, d.nl, pretty)
	return d.apply(splice{v.StartOffset, v.EndOffset, text})
}

// replaceRaw writes raw text in place of the value at path.
func (d *jsonDoc) replaceRaw(path []string, raw string) error {
	root, err := d.parse()
	if err != nil {
		return err
	}
	v := lookup(&root, path)
	if v == nil {
		return nil
	}
	return d.apply(splice{v.StartOffset, v.EndOffset, raw})
}

// insertItem returns the splices that add an item (a member called name,
// or an array element when c is an array) as the last one of container c,
// in the layout of its neighbours, and the text inside c when c was empty.
func (d *jsonDoc) insertItem(c *hujson.Value, name string, value any) ([]splice, *string) {
	src := d.src
	isObj := c.Value.Kind() == '{'
	render := func(base string, pretty bool) string {
		s := renderJSON(value, base, d.unit, d.nl, pretty)
		if isObj {
			return jsonString(name) + ": " + s
		}
		return s
	}
	open, end := c.StartOffset, c.EndOffset-1 // the brackets
	last, ok := lastItemEnd(c)
	if !ok {
		inner := string(src[open+1 : end])
		if strings.TrimSpace(inner) == "" {
			base := lineIndent(src, open)
			ind := base + d.unit
			return []splice{{open + 1, end, d.nl + ind + render(ind, true) + d.nl + base}}, &inner
		}
		if startsLine(src, end) {
			ls := lineStart(src, end)
			ind := lineIndent(src, end) + d.unit
			return []splice{{ls, ls, ind + render(ind, true) + d.nl}}, &inner
		}
		return []splice{{end, end, " " + render("", false) + " "}}, &inner
	}
	j := skipExtra(src, last)
	trailing := src[j] == ','
	if first := lastItemStart(c); startsLine(src, first) {
		ind := lineIndent(src, first)
		after := last
		if trailing {
			after = j + 1
		}
		if x := lineEndAfter(src, after); x >= 0 {
			if trailing {
				return []splice{{x, x, ind + render(ind, true) + "," + d.nl}}, nil
			}
			return []splice{{last, last, ","}, {x, x, ind + render(ind, true) + d.nl}}, nil
		}
	}
	if trailing {
		return []splice{{j + 1, j + 1, " " + render("", false) + ","}}, nil
	}
	return []splice{{last, last, ", " + render("", false)}}, nil
}

// lastItemStart returns where the last item of a container begins (its
// name, for a member).
func lastItemStart(c *hujson.Value) int {
	switch x := c.Value.(type) {
	case *hujson.Object:
		return x.Members[len(x.Members)-1].Name.StartOffset
	case *hujson.Array:
		return x.Elements[len(x.Elements)-1].StartOffset
	}
	return c.StartOffset
}

// removeItem removes item i of container c. When it was the only item and
// emptyInner is known, the container gets that text back inside.
func (d *jsonDoc) removeItem(c *hujson.Value, i int, emptyInner *string) error {
	src := d.src
	var start, end, prevEnd int
	n := 0
	prevEnd = -1
	switch x := c.Value.(type) {
	case *hujson.Object:
		n = len(x.Members)
		start, end = x.Members[i].Name.StartOffset, x.Members[i].Value.EndOffset
		if i > 0 {
			prevEnd = x.Members[i-1].Value.EndOffset
		}
	case *hujson.Array:
		n = len(x.Elements)
		start, end = x.Elements[i].StartOffset, x.Elements[i].EndOffset
		if i > 0 {
			prevEnd = x.Elements[i-1].EndOffset
		}
	default:
		return nil
	}
	open, close := c.StartOffset, c.EndOffset-1
	jn := skipExtra(src, end)
	hasComma := src[jn] == ','
	after := end
	if hasComma {
		after = jn + 1
	}
	if n == 1 {
		if emptyInner != nil {
			return d.apply(splice{open + 1, close, *emptyInner})
		}
		if isBlank(src[open+1:start]) && isBlank(src[after:close]) {
			return d.apply(splice{open + 1, close, ""})
		}
	}
	lineMode := startsLine(src, start) && (!hasComma || isSpaces(src[end:jn])) && lineEndAfterBlank(src, after) >= 0
	if lineMode {
		sp := []splice{{lineStart(src, start), lineEndAfterBlank(src, after), ""}}
		if !hasComma && prevEnd >= 0 {
			pc := skipExtra(src, prevEnd)
			sp = append(sp, splice{pc, pc + 1, ""})
		}
		return d.apply(sp...)
	}
	switch {
	case hasComma && prevEnd >= 0:
		pc := skipExtra(src, prevEnd)
		return d.apply(splice{pc + 1, jn + 1, ""})
	case hasComma:
		k := jn + 1
		for k < len(src) && (src[k] == ' ' || src[k] == '\t') {
			k++
		}
		return d.apply(splice{start, k, ""})
	case prevEnd >= 0:
		return d.apply(splice{prevEnd, end, ""})
	}
	return d.apply(splice{start, end, ""})
}

// removeMember removes the member at path (if it is there), then the
// objects above it that it leaves empty, up to created levels (or, with
// created < 0, every level it empties, the root excepted).
func (d *jsonDoc) removeMember(path []string, created int, emptyInner *string) (bool, error) {
	root, err := d.parse()
	if err != nil {
		return false, err
	}
	parentPath := path[:len(path)-1]
	parent := lookup(&root, parentPath)
	if parent == nil {
		return false, nil
	}
	obj, ok := parent.Value.(*hujson.Object)
	if !ok {
		return false, nil
	}
	i := memberIndex(obj, path[len(path)-1])
	if i < 0 {
		return false, nil
	}
	if len(obj.Members) == 1 && len(parentPath) > 0 && (created > 1 || created < 0) {
		// The parent holds nothing else: remove it instead.
		return d.removeMember(parentPath, created-1, emptyInner)
	}
	inner := (*string)(nil)
	if created == 1 {
		inner = emptyInner
	}
	return true, d.removeItem(parent, i, inner)
}

// removeElement removes element i of the array at path, then the members
// above it that it leaves empty, like removeMember.
func (d *jsonDoc) removeElement(path []string, i int, created int, emptyInner *string) error {
	root, err := d.parse()
	if err != nil {
		return err
	}
	v := lookup(&root, path)
	if v == nil {
		return nil
	}
	arr, ok := v.Value.(*hujson.Array)
	if !ok || i >= len(arr.Elements) {
		return nil
	}
	if len(arr.Elements) == 1 && (created > 0 || created < 0) {
		_, err := d.removeMember(path, created, emptyInner)
		return err
	}
	inner := (*string)(nil)
	if created == 0 {
		inner = emptyInner
	}
	return d.removeItem(v, i, inner)
}

// --- text helpers ---

// skipExtra returns the offset of the first byte at or after i that is not
// whitespace or a comment.
func skipExtra(src []byte, i int) int {
	for i < len(src) {
		switch {
		case src[i] == ' ' || src[i] == '\t' || src[i] == '\r' || src[i] == '\n':
			i++
		case bytes.HasPrefix(src[i:], []byte("//")):
			k := bytes.IndexByte(src[i:], '\n')
			if k < 0 {
				return len(src)
			}
			i += k + 1
		case bytes.HasPrefix(src[i:], []byte("/*")):
			k := bytes.Index(src[i+2:], []byte("*/"))
			if k < 0 {
				return len(src)
			}
			i += 2 + k + 2
		default:
			return i
		}
	}
	return i
}

// lineEndAfter returns the offset just after the first newline at or after
// i, when only blanks and comments come before it, else -1.
func lineEndAfter(src []byte, i int) int {
	for i < len(src) {
		switch {
		case src[i] == ' ' || src[i] == '\t' || src[i] == '\r':
			i++
		case src[i] == '\n':
			return i + 1
		case bytes.HasPrefix(src[i:], []byte("//")):
			k := bytes.IndexByte(src[i:], '\n')
			if k < 0 {
				return -1
			}
			return i + k + 1
		case bytes.HasPrefix(src[i:], []byte("/*")):
			k := bytes.Index(src[i+2:], []byte("*/"))
			if k < 0 {
				return -1
			}
			i += 2 + k + 2
		default:
			return -1
		}
	}
	return -1
}

// lineEndAfterBlank returns the offset just after the newline ending the
// line at i when only spaces come before it (or the end of the text), else -1.
func lineEndAfterBlank(src []byte, i int) int {
	for ; i < len(src); i++ {
		switch src[i] {
		case ' ', '\t', '\r':
		case '\n':
			return i + 1
		default:
			return -1
		}
	}
	return len(src)
}

// startsLine reports whether only spaces come before offset i on its line.
func startsLine(src []byte, i int) bool {
	for k := i - 1; k >= 0; k-- {
		switch src[k] {
		case ' ', '\t':
		case '\n':
			return true
		default:
			return false
		}
	}
	return true
}

// lineStart returns the offset of the start of the line holding i.
func lineStart(src []byte, i int) int {
	return bytes.LastIndexByte(src[:i], '\n') + 1
}

// lineIndent returns the leading blanks of the line holding offset i.
func lineIndent(src []byte, i int) string {
	ls := lineStart(src, i)
	k := ls
	for k < len(src) && (src[k] == ' ' || src[k] == '\t') {
		k++
	}
	return string(src[ls:k])
}

func isBlank(b []byte) bool {
	return len(bytes.Trim(b, " \t\r\n")) == 0
}

func isSpaces(b []byte) bool {
	return len(bytes.Trim(b, " \t")) == 0
}

// lineCol turns an offset into a line and column (both from 1).
func lineCol(src []byte, off int) (int, int) {
	if off > len(src) {
		off = len(src)
	}
	if off < 0 {
		off = 0
	}
	line := 1 + bytes.Count(src[:off], []byte("\n"))
	return line, off - lineStart(src, off) + 1
}

// detectNewline returns "\r\n" when the file's first line ends so, else "\n".
func detectNewline(src []byte) string {
	if i := bytes.IndexByte(src, '\n'); i > 0 && src[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// detectIndent returns the file's indent step: the indent of the first
// indented line (a tab, or that many spaces), else two spaces.
func detectIndent(src []byte) string {
	for _, line := range bytes.Split(src, []byte("\n")) {
		k := 0
		for k < len(line) && (line[k] == ' ' || line[k] == '\t') {
			k++
		}
		if k == 0 || k == len(line) || line[k] == '\r' {
			continue
		}
		if line[0] == '\t' {
			return "\t"
		}
		if k > 8 {
			k = 8
		}
		return strings.Repeat(" ", k)
	}
	return "  "
}
