package install

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	udiff "github.com/aymanbagabas/go-udiff"
	"github.com/tailscale/hujson"
)

// Plan is what an install or an uninstall will do: the files it changes,
// with their text before and after. Nothing is written until Apply.
type Plan struct {
	Client    Client   `json:"client"`
	Scope     Scope    `json:"scope"`
	Uninstall bool     `json:"uninstall,omitempty"`
	Changes   []Change `json:"changes"`
	// Unchanged lists the files that already hold what they should.
	Unchanged []string `json:"unchanged,omitempty"`
	// Notes are one-line things to do or know (a trust step, a flag).
	Notes []string `json:"notes,omitempty"`
	// Remaining lists the files the record of the install names that this
	// plan does not look at (an install made with another CLAUDE_CONFIG_DIR
	// or CODEX_HOME): the record stays for them.
	Remaining []string `json:"remaining,omitempty"`
	// Backups lists the copies Apply made of files as they were before it
	// changed them (none for a file it creates, nor for one it created and
	// removes unchanged since).
	Backups []string `json:"backups,omitempty"`

	env     Env
	rec     *record  // the record as it will be after Apply (nil: remove it)
	old     *record  // an install's record as it was before (nil: none)
	dirs    []string // an uninstall's folders to remove when empty
	recPath string
}

// Change is one file a plan changes.
type Change struct {
	Path string `json:"path"`
	// Create is true when the file does not exist yet; Delete when the
	// plan removes it (an uninstall of a file Parley created).
	Create bool `json:"create,omitempty"`
	Delete bool `json:"delete,omitempty"`
	// Restore is true when an uninstall puts the original back byte for
	// byte (nothing else changed the file since Parley wrote it).
	Restore bool   `json:"restore,omitempty"`
	Diff    string `json:"diff"`

	before, after []byte
	perm          fs.FileMode
	dirs          []string // folders to create, outermost first
	// root is the project folder the file must stay in ("" for your own
	// config); real is the file the plan found Path to reach (writeTarget),
	// which the write checks again ("" for none to check).
	root, real string
}

// Changed reports whether the plan changes any file.
func (p *Plan) Changed() bool { return len(p.Changes) > 0 }

// Diff returns the unified diff of every change.
func (p *Plan) Diff() string {
	var b strings.Builder
	for _, c := range p.Changes {
		b.WriteString(c.Diff)
	}
	return b.String()
}

func unifiedDiff(path string, before, after []byte, create, del bool) string {
	from, to := "a"+path, "b"+path
	if create {
		from = "/dev/null"
	}
	if del {
		to = "/dev/null"
	}
	d := udiff.Unified(from, to, string(before), string(after))
	if d == "" {
		return ""
	}
	if !strings.HasSuffix(d, "\n") {
		d += "\n"
	}
	return d
}

// Install plans writing Parley's entries for o into the client's config
// files. A file that is not valid in its format is refused with the line;
// nothing is changed then.
func Install(env Env, o Options) (*Plan, error) {
	if o.Command == "" {
		return nil, fmt.Errorf("install: no command to write")
	}
	if o.Scope == "" {
		o.Scope = User
	}
	for _, h := range o.Hooks {
		if !slices.Contains(HookEvents[o.Client], h) {
			return nil, fmt.Errorf("install: %s has no hook event %q", o.Client, h)
		}
	}
	var projectNotes []string
	if o.Client == Codex && o.Scope == Project && slices.Contains(o.Hooks, "notify") {
		// Codex ignores notify in a project's config (and warns).
		o.Hooks = slices.DeleteFunc(slices.Clone(o.Hooks), func(h string) bool { return h == "notify" })
		projectNotes = append(projectNotes, "Codex reads notify only from your own config: `parley install codex --user` adds the idle signal.")
	}
	given := env // the project folder as given, to find a record named by it
	env = projectEnv(env, o.Scope)
	ts, err := targets(env, o)
	if err != nil {
		return nil, err
	}
	recPath := recordPath(given, o.Client, o.Scope)
	old, err := loadRecord(recPath)
	if err != nil {
		return nil, err
	}
	if o.Scope == Project {
		old.rebase(env.ProjectDir)
	}
	rec := &record{Client: o.Client, Scope: o.Scope, Command: o.Command, Hooks: slices.Clone(o.Hooks)}
	k := known{o.Command}
	if old != nil {
		k = append(k, old.Command)
	}
	if o.Scope == Project {
		rec.Project = env.ProjectDir
	}
	p := &Plan{Client: o.Client, Scope: o.Scope, env: env, rec: rec, old: old, recPath: recPath}
	wroteHooks := false
	root := ""
	if o.Scope == Project {
		root = env.ProjectDir
	}
	for _, t := range ts {
		// A link out of the project, or one Parley cannot write through, is
		// refused, in a dry run too.
		real, err := writeTarget(t.path, root)
		if err != nil {
			return nil, err
		}
		before, existed, err := readFile(real)
		if err != nil {
			return nil, err
		}
		fr := fileRecord{Path: t.path, Existed: existed, Restorable: true}
		if old != nil && existed {
			if f := old.file(t.path); f != nil {
				fr = f.clone()
				s := sum(before)
				// A file as it was before Parley's latest write is one that
				// write did not reach (an install cut short after its record).
				if !bytes.Equal(s, fr.afterSum()) && (fr.Before == "" || hexSum(before) != fr.Before) {
					// Someone else changed the file since Parley wrote it:
					// the original copy no longer restores it.
					fr.Restorable = false
				}
			}
		}
		if old != nil && !existed {
			// A file an install cut short meant to create: the folders it
			// created for it are Parley's still.
			if f := old.file(t.path); f != nil && !f.Existed {
				for _, d := range f.Dirs {
					if _, err := os.Stat(d); err == nil {
						fr.Dirs = appendNew(fr.Dirs, d)
					}
				}
			}
		}
		var after []byte
		var fileNotes []string
		switch t.format {
		case fmtJSON:
			after, fileNotes, err = installJSON(t, o.Client, k, before, existed, &fr)
		case fmtTOML:
			after, fileNotes, err = installTOML(t, k, before, &fr)
		}
		if err != nil {
			return nil, withPath(err, t.path)
		}
		p.Notes = append(p.Notes, fileNotes...)
		if len(t.hooks) > 0 {
			wroteHooks = true
		}
		if bytes.Equal(before, after) {
			if existed && (t.server != nil || len(t.hooks) > 0) {
				fr.After = hexSum(after)
				if fr.Backup == "" {
					fr.Restorable = false // no copy of an original to put back
				}
				rec.Files = append(rec.Files, fr)
				p.Unchanged = append(p.Unchanged, t.path)
			}
			continue
		}
		if existed {
			if err := writable(t.path); err != nil {
				return nil, err
			}
			p.noteHardLinked(t.path)
		}
		ch := Change{Path: t.path, Create: !existed, before: before, after: after, perm: t.perm, root: root, real: real}
		if !existed {
			ch.dirs = missingDirs(filepath.Dir(t.path))
			fr.Dirs = appendNew(fr.Dirs, ch.dirs...)
		}
		ch.Diff = unifiedDiff(t.path, before, after, !existed, false)
		fr.After = hexSum(after)
		rec.Files = append(rec.Files, fr)
		p.Changes = append(p.Changes, ch)
	}
	// Files an earlier install wrote that these options do not name (another
	// CLAUDE_CONFIG_DIR, CODEX_HOME) still hold its entries: they stay in the
	// record, so that an uninstall that finds them can take them out.
	if old != nil {
		for _, f := range old.Files {
			if !slices.ContainsFunc(ts, func(t target) bool { return t.path == f.Path }) {
				rec.Files = append(rec.Files, f.clone())
				p.Remaining = append(p.Remaining, f.Path)
			}
		}
		if len(p.Remaining) > 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("an earlier install wrote %s too (with another %s?); Parley's entries there stay, and so does their record", strings.Join(p.Remaining, ", "), configEnvVar(o.Client)))
		}
	}
	p.Notes = append(p.Notes, notes(env, o, wroteHooks)...)
	p.Notes = append(p.Notes, projectNotes...)
	return p, nil
}

// installJSON writes Parley's entries into a JSON file's text (after its
// byte order mark, which stays, when it has one).
func installJSON(t target, client Client, k known, before []byte, existed bool, fr *fileRecord) ([]byte, []string, error) {
	bom, before := splitBOM(before)
	after, notes, err := installJSONText(t, client, k, before, existed, fr)
	return withBOM(bom, after), notes, err
}

func installJSONText(t target, client Client, k known, before []byte, existed bool, fr *fileRecord) ([]byte, []string, error) {
	src := before
	if !existed {
		src = []byte(t.newFile)
	}
	d, err := newJSONDoc(src, t.dialect)
	if err != nil {
		return nil, nil, err
	}
	src = d.src
	if t.server != nil {
		if err := d.checkServerJSON(t, k); err != nil {
			return nil, nil, err
		}
		changed, u, err := d.put(t.server, t.serverValue)
		if err != nil {
			return nil, nil, err
		}
		// A re-install keeps the record of the first one (what it created,
		// what it replaced). An entry found as Parley writes it, with no
		// record of Parley's writing it, was there before the install: it
		// is recorded as found, and an uninstall leaves it.
		switch r := fr.jsonUndo(u.Path); {
		case changed && (r == nil || r.Found):
			fr.setJSON(u)
		case !changed && r == nil:
			fr.setJSON(jsonUndo{Path: u.Path, Found: true})
		}
	}
	if t.hooks != nil {
		// Take out Parley's hooks for events no longer wanted (putting back
		// the user's hook one replaced; the event's others are theirs):
		// only those the record says Parley wrote. A `parley hook` the user
		// wrote by hand, or one no record names, stays: taken out, it would
		// be gone with no record to put it back from.
		for {
			root, _ := d.parse()
			h := findParleyHook(d.src, &root, client, k, func(ev string) bool {
				_, want := t.hooks[ev]
				u := fr.jsonUndo([]string{"hooks", ev})
				return !want && u != nil && !u.Back && !u.Found
			})
			if h == nil {
				break
			}
			u := fr.jsonUndo([]string{"hooks", h.event})
			put, err := d.takeOutHook(h, u)
			if err != nil {
				return nil, nil, err
			}
			if put {
				u.Back = true
			}
		}
		events := make([]string, 0, len(t.hooks))
		for _, ev := range HookEvents[client] {
			if _, ok := t.hooks[ev]; ok {
				events = append(events, ev)
			}
		}
		for _, ev := range events {
			u, changed, err := d.ensureHook(client, k, ev, t.hooks[ev])
			if err != nil {
				return nil, nil, err
			}
			// A hook Parley added is recorded afresh; for one it replaced,
			// the record of the first install keeps what was there before.
			// One found as Parley writes it, with no record, was there
			// before the install.
			r := fr.jsonUndo(u.Path)
			switch {
			case changed && (u.Prev == nil || r == nil || r.Back || r.Found):
				fr.setJSON(u)
			case !changed && r == nil:
				fr.setJSON(jsonUndo{Path: u.Path, Found: true})
			}
		}
	}
	if !existed && bytes.Equal(d.src, src) {
		return before, nil, nil // nothing to write into a file that is not there
	}
	if err := checkOthersKept(src, d.src, t, client, k); err != nil {
		return nil, nil, err
	}
	return d.src, nil, nil
}

// installTOML writes Parley's table (and notify) into Codex's config.toml
// (after its byte order mark, which stays, when it has one).
func installTOML(t target, k known, before []byte, fr *fileRecord) ([]byte, []string, error) {
	bom, before := splitBOM(before)
	after, notes, err := installTOMLText(t, k, before, fr)
	return withBOM(bom, after), notes, err
}

func installTOMLText(t target, k known, before []byte, fr *fileRecord) ([]byte, []string, error) {
	d, err := newTOMLDoc(before)
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	m, _ := d.decode()
	if f, ok := m["features"].(map[string]any); ok {
		for _, k := range []string{"hooks", "codex_hooks"} {
			if v, ok := f[k].(bool); ok && !v {
				notes = append(notes, fmt.Sprintf("%s sets [features] %s = false: Codex runs no hooks, Parley's included, until you set it to true.", t.path, k))
			}
		}
	}
	want := map[string]any{}
	for _, kv := range t.serverTOML {
		want[kv.k] = tomlPlain(kv.v)
	}
	// The whole table, as TOML reads it: a sub-table under it is part of
	// the entry ([mcp_servers.parley.env] is an env key of the server).
	if cur, _ := dig(m, t.server); !reflect.DeepEqual(cur, want) {
		why, line, err := d.notOwnTable(t, k)
		if err != nil {
			return nil, nil, err
		}
		if why != "" {
			return nil, nil, userServerError("["+strings.Join(t.server, ".")+"]", why, line, 0)
		}
	}
	changed, u, err := d.putTable(t.server, t.serverTOML)
	if err != nil {
		return nil, nil, err
	}
	setTOML(fr, changed, u)
	cur, hasNotify := m["notify"]
	curOurs := hasNotify && k.notify(cur)
	switch {
	case t.notify != nil && hasNotify && !curOurs:
		notes = append(notes, fmt.Sprintf("%s already has notify = %s; Parley left it, so Codex tells Parley it is idle only through hooks.", t.path, tomlShow(cur)))
	case t.notify != nil:
		changed, u, err := d.putTopKey("notify", t.notify)
		if err != nil {
			return nil, nil, err
		}
		setTOML(fr, changed, u)
	case curOurs && isFound(fr.tomlUndo([]string{"notify"})):
		// There before the install: not Parley's to take out.
	case curOurs:
		r := fr.tomlUndo([]string{"notify"})
		if _, err := d.removeTopKey(undoOr(r, []string{"notify"}), r != nil); err != nil {
			return nil, nil, err
		}
		fr.dropTOML([]string{"notify"})
	}
	after, err := d.decode()
	if err != nil {
		return nil, nil, err
	}
	if !reflect.DeepEqual(stripTOML(m, k, m), stripTOML(after, k, m)) {
		return nil, nil, fmt.Errorf("install: the edit would change entries that are not Parley's (a bug in Parley; nothing was written)")
	}
	return d.src, notes, nil
}

// setTOML records how to undo an entry put (changed) or found as Parley
// writes it: a re-install keeps the record of the first one; an entry
// found with no record was there before the install.
func setTOML(fr *fileRecord, changed bool, u tomlUndo) {
	switch r := fr.tomlUndo(u.Path); {
	case changed && (r == nil || r.Found):
		fr.setTOML(u)
	case !changed && r == nil:
		fr.setTOML(tomlUndo{Path: u.Path, Table: u.Table, Found: true})
	}
}

// isFound reports whether r records an entry that was there before the
// install.
func isFound(r *tomlUndo) bool { return r != nil && r.Found }

// foundNote is the uninstall's note for an entry it leaves in place.
func foundNote(path, entry string) string {
	return fmt.Sprintf("%s: %s left in place; it was there before the install.", path, entry)
}

func undoOr(r *tomlUndo, path []string) tomlUndo {
	if r != nil {
		return *r
	}
	return tomlUndo{Path: path}
}

// parleyHook is one of Parley's hook entries found in a hooks file.
type parleyHook struct {
	event      string
	group      int  // index in hooks.EVENT
	hook       int  // index in the group's hooks
	pure       bool // the group holds only Parley's hooks
	groupValue any
	hookValue  any
}

// findParleyHook returns the first Parley hook of client whose event
// passes keep, or nil.
func findParleyHook(src []byte, root *hujson.Value, client Client, k known, keep func(event string) bool) *parleyHook {
	hooks, ok := objectOf(lookup(root, []string{"hooks"}))
	if !ok {
		return nil
	}
	for _, m := range hooks.Members {
		arr, ok := m.Value.Value.(*hujson.Array)
		if !ok {
			continue
		}
		event := m.Name.Value.(hujson.Literal).String()
		for gi := range arr.Elements {
			g, ok := arr.Elements[gi].Value.(*hujson.Object)
			if !ok {
				continue
			}
			hi := memberIndex(g, "hooks")
			if hi < 0 {
				continue
			}
			ha, ok := g.Members[hi].Value.Value.(*hujson.Array)
			if !ok {
				continue
			}
			found, ours := -1, 0
			for i := range ha.Elements {
				v, _ := decodeValue(src, &ha.Elements[i])
				hm, _ := v.(map[string]any)
				cmd, _ := hm["command"].(string)
				if ev, ok := k.hookEvent(cmd, client); ok && ev == event {
					ours++
					if found < 0 && keep(event) {
						found = i
					}
				}
			}
			if found >= 0 {
				gv, _ := decodeValue(src, &arr.Elements[gi])
				hv, _ := decodeValue(src, &ha.Elements[found])
				return &parleyHook{event: event, group: gi, hook: found, pure: ours == len(ha.Elements), groupValue: gv, hookValue: hv}
			}
		}
	}
	return nil
}

// objectOf returns v's object, when v is one.
func objectOf(v *hujson.Value) (*hujson.Object, bool) {
	if v == nil {
		return nil, false
	}
	o, ok := v.Value.(*hujson.Object)
	return o, ok
}

// removeHook takes out one Parley hook: its whole group when the group holds
// only Parley's hooks, else the hook alone.
func (d *jsonDoc) removeHook(h *parleyHook, u *jsonUndo) error {
	path := []string{"hooks", h.event}
	if h.pure {
		created, inner := -1, (*string)(nil)
		if u != nil {
			created, inner = u.Created, u.EmptyInner
		}
		return d.removeElement(path, h.group, created, inner)
	}
	root, err := d.parse()
	if err != nil {
		return err
	}
	g := lookup(&root, path).Value.(*hujson.Array).Elements[h.group].Value.(*hujson.Object)
	return d.removeItem(&g.Members[memberIndex(g, "hooks")].Value, h.hook, nil)
}

// ensureHook makes hooks.EVENT hold Parley's group. It reports whether it
// changed the file, and how to undo it: the group it added, or the text of
// the group (or of the hook, in a group of others' hooks) it replaced.
func (d *jsonDoc) ensureHook(client Client, k known, event string, group jobj) (jsonUndo, bool, error) {
	path := []string{"hooks", event}
	root, err := d.parse()
	if err != nil {
		return jsonUndo{Path: path}, false, err
	}
	h := findParleyHook(d.src, &root, client, k, func(ev string) bool { return ev == event })
	if h == nil {
		u, err := d.appendTo(path, group)
		return u, err == nil, err
	}
	arr := lookup(&root, path).Value.(*hujson.Array)
	if h.pure {
		if reflect.DeepEqual(h.groupValue, plain(group)) {
			return jsonUndo{Path: path}, false, nil
		}
		g := &arr.Elements[h.group]
		prev := string(d.src[g.StartOffset:g.EndOffset])
		return jsonUndo{Path: path, Prev: &prev}, true, d.replaceValue(nil, g, group)
	}
	want, _ := group.get("hooks")
	hook := want.([]any)[0]
	if reflect.DeepEqual(h.hookValue, plain(hook)) {
		return jsonUndo{Path: path}, false, nil
	}
	g := arr.Elements[h.group].Value.(*hujson.Object)
	el := &g.Members[memberIndex(g, "hooks")].Value.Value.(*hujson.Array).Elements[h.hook]
	prev := string(d.src[el.StartOffset:el.EndOffset])
	return jsonUndo{Path: path, Prev: &prev, PrevHook: true}, true, d.replaceValue(nil, el, hook)
}

// takeOutHook takes one of Parley's hooks out. When u says it replaced a
// hook or a group of the user's, that comes back in its place (and
// takeOutHook reports true); else the hook goes, with its group when the
// group holds only Parley's hooks.
func (d *jsonDoc) takeOutHook(h *parleyHook, u *jsonUndo) (bool, error) {
	if u == nil || u.Prev == nil {
		return false, d.removeHook(h, u)
	}
	root, err := d.parse()
	if err != nil {
		return false, err
	}
	arr := lookup(&root, []string{"hooks", h.event}).Value.(*hujson.Array)
	g := &arr.Elements[h.group]
	if !u.PrevHook && h.pure {
		return true, d.apply(splice{g.StartOffset, g.EndOffset, *u.Prev})
	}
	text := *u.Prev
	if !u.PrevHook {
		// The group Parley's replaced holds others' hooks now: the hooks of
		// the user's group come back in place of Parley's.
		var ok bool
		if text, ok = groupHooksText(text); !ok {
			return false, d.removeHook(h, u)
		}
	}
	gobj := g.Value.(*hujson.Object)
	el := &gobj.Members[memberIndex(gobj, "hooks")].Value.Value.(*hujson.Array).Elements[h.hook]
	return true, d.apply(splice{el.StartOffset, el.EndOffset, text})
}

// groupHooksText returns the text of the items of a hook group's "hooks".
func groupHooksText(group string) (string, bool) {
	v, err := hujson.Parse([]byte(group))
	if err != nil {
		return "", false
	}
	hv := lookup(&v, []string{"hooks"})
	if hv == nil {
		return "", false
	}
	a, ok := hv.Value.(*hujson.Array)
	if !ok || len(a.Elements) == 0 {
		return "", false
	}
	return group[a.Elements[0].StartOffset:a.Elements[len(a.Elements)-1].EndOffset], true
}

// checkOthersKept checks that before and after differ only in Parley's
// entries.
func checkOthersKept(before, after []byte, t target, client Client, k known) error {
	b, err := standardValue(before)
	if err != nil {
		return err
	}
	ref, _ := standardValue(before) // stripJSON changes b
	a, err := standardValue(after)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(stripJSON(b, t, client, k, ref), stripJSON(a, t, client, k, ref)) {
		return fmt.Errorf("install: the edit would change entries that are not Parley's (a bug in Parley; nothing was written)")
	}
	return nil
}

// standardValue decodes a JSON or JSONC file's text (numbers as written;
// a byte order mark before it is passed over).
func standardValue(src []byte) (any, error) {
	_, src = splitBOM(src)
	std, err := hujson.Standardize(append([]byte(nil), src...))
	if err != nil {
		return nil, &ConfigError{Msg: "not valid JSON: " + err.Error(), Err: ErrInvalid}
	}
	v, err := decodeJSON(std)
	if err != nil {
		line, col := 0, 0
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col = lineCol(src, int(se.Offset)) // Standardize keeps offsets
		}
		return nil, &ConfigError{Line: line, Column: col, Msg: "not valid JSON: " + err.Error(), Err: ErrInvalid}
	}
	return v, nil
}

// stripJSON removes Parley's entries from a decoded config (changing it),
// and the containers on their paths that this leaves empty, unless they are
// empty in ref (the file before the edit): an empty one of the user's stays.
func stripJSON(v any, t target, client Client, k known, ref any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	refm, _ := ref.(map[string]any)
	had := func(path ...string) bool {
		parent, ok := dig(refm, path[:len(path)-1])
		if !ok {
			return false
		}
		v, ok := parent[path[len(path)-1]]
		return ok && isEmptyValue(v)
	}
	if t.server != nil {
		name := t.server[len(t.server)-1]
		if parent, ok := dig(m, t.server[:len(t.server)-1]); ok && k.server(parent[name]) {
			delete(parent, name)
			if len(parent) == 0 && len(t.server) > 1 && !had(t.server[:len(t.server)-1]...) {
				pp, _ := dig(m, t.server[:len(t.server)-2])
				delete(pp, t.server[len(t.server)-2])
			}
		}
	}
	if t.hooks != nil {
		if hooks, ok := m["hooks"].(map[string]any); ok {
			removedAny := false
			for ev, arr := range hooks {
				a, ok := arr.([]any)
				if !ok {
					continue
				}
				keep, removed := []any{}, false
				for _, g := range a {
					if gm, ok := g.(map[string]any); ok {
						if hs, ok := gm["hooks"].([]any); ok {
							kh := []any{}
							for _, h := range hs {
								hm, _ := h.(map[string]any)
								cmd, _ := hm["command"].(string)
								if e, ok := k.hookEvent(cmd, client); ok && e == ev {
									removed = true
									continue
								}
								kh = append(kh, h)
							}
							if len(kh) == 0 && len(hs) > 0 {
								continue
							}
							gm["hooks"] = kh
						}
					}
					keep = append(keep, g)
				}
				switch {
				case !removed:
				case len(keep) == 0 && !had("hooks", ev):
					delete(hooks, ev)
				default:
					hooks[ev] = keep
				}
				removedAny = removedAny || removed
			}
			if removedAny && len(hooks) == 0 && !had("hooks") {
				delete(m, "hooks")
			}
		}
	}
	return m
}

// dig returns the object at path in m.
func dig(m map[string]any, path []string) (map[string]any, bool) {
	for _, p := range path {
		next, ok := m[p].(map[string]any)
		if !ok {
			return nil, false
		}
		m = next
	}
	return m, true
}

// stripTOML removes Parley's table and notify from a decoded config.toml,
// and mcp_servers when this leaves it empty, unless it is empty in ref (the
// file before the edit).
func stripTOML(m map[string]any, k known, ref map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	if k.notify(out["notify"]) {
		delete(out, "notify")
	}
	if s, ok := out["mcp_servers"].(map[string]any); ok {
		c := map[string]any{}
		for k, v := range s {
			c[k] = v
		}
		if p, ok := c["parley"].(map[string]any); ok && k.program(fmt.Sprint(p["command"])) {
			// Parley's keys go; sub-tables ([mcp_servers.parley.env]) stay.
			sub := map[string]any{}
			for key, v := range p {
				if _, ok := v.(map[string]any); ok {
					sub[key] = v
				}
			}
			if len(sub) == 0 {
				delete(c, "parley")
			} else {
				c["parley"] = sub
			}
			if had, ok := ref["mcp_servers"].(map[string]any); len(c) == 0 && !(ok && len(had) == 0) {
				delete(out, "mcp_servers")
				return out
			}
		}
		out["mcp_servers"] = c
	}
	return out
}

// Uninstall plans taking Parley's entries for client out of the scope's
// config files. A file nothing else changed since Parley wrote it comes
// back byte for byte; otherwise only Parley's entries go (with what they
// replaced put back).
func Uninstall(env Env, client Client, scope Scope) (*Plan, error) {
	if scope == "" {
		scope = User
	}
	given := env // the project folder as given, to find a record named by it
	env = projectEnv(env, scope)
	ts, err := targets(env, Options{Client: client, Scope: scope, Command: "parley", Hooks: HookEvents[client]})
	if err != nil {
		return nil, err
	}
	recPath := recordPath(given, client, scope)
	rec, err := loadRecord(recPath)
	if err != nil {
		return nil, err
	}
	if scope == Project {
		rec.rebase(env.ProjectDir)
	}
	if rec == nil {
		if other := recordElsewhere(env, client, scope, ts); other != "" {
			// A command to paste: the home quoted, and for a project its
			// folder, since the record is the project's, not the working
			// folder's wherever it is pasted.
			run := "parley --home " + shellQuote(other) + " uninstall " + string(client)
			if scope == Project {
				run += " --project --dir " + shellQuote(env.ProjectDir)
			}
			return nil, fmt.Errorf("%w: Parley's entries for %s name the home %s, which holds the record of the install, and this home (%s) holds none; run `%s`, which puts the files back as they were (from here, a file Parley created would stay behind, and that record would still say installed); nothing was changed",
				ErrOtherHome, client, other, env.ParleyHome, run)
		}
	}
	p := &Plan{Client: client, Scope: scope, Uninstall: true, env: env, recPath: recPath}
	var k known
	if rec != nil {
		k = known{rec.Command}
		// The record goes once every file it names has been looked at; those
		// this uninstall does not name stay in it.
		p.rec = &record{Client: rec.Client, Scope: rec.Scope, Project: rec.Project, Command: rec.Command, Hooks: rec.Hooks}
		for _, f := range rec.Files {
			if !slices.ContainsFunc(ts, func(t target) bool { return t.path == f.Path }) {
				p.rec.Files = append(p.rec.Files, f.clone())
				p.Remaining = append(p.Remaining, f.Path)
			}
		}
		if len(p.Remaining) > 0 {
			p.Notes = append(p.Notes, fmt.Sprintf("the record of Parley's install also names %s, which this uninstall did not look at (was the install made with another %s?); the record is kept for them: run the uninstall again as the install ran",
				strings.Join(p.Remaining, ", "), configEnvVar(client)))
		}
	}
	var hooks []string // the events the install wrote hooks for
	if rec != nil {
		hooks = rec.Hooks
	}
	for _, t := range ts {
		var fr *fileRecord
		if rec != nil {
			fr = rec.file(t.path)
		}
		// Links are followed as they are, also a project's out of it: an
		// install made through one (before Parley refused them) can still
		// be taken out, and an uninstall only takes Parley's entries out.
		real, err := writeTarget(t.path, "")
		if le := (*linkError)(nil); errors.As(err, &le) && le.missing != "" {
			continue // a link to nothing: no entries to take out
		}
		if err != nil {
			return nil, err
		}
		cur, existed, err := readFile(real)
		if err != nil {
			return nil, err
		}
		if !existed {
			if fr != nil && !fr.Existed {
				// A file an install cut short did not create: the folders
				// it created for it go when empty.
				p.dirs = append(p.dirs, fr.Dirs...)
			}
			continue
		}
		ch := Change{Path: t.path, before: cur, real: real}
		if fi, err := os.Stat(t.path); err == nil {
			ch.perm = fi.Mode().Perm() // to put it back, should Apply stop
		}
		// A file Parley created that is a link now was moved away by the
		// user (into a dotfiles repository), a link put in its place:
		// Parley created no file there (never through a link), so it
		// removes none there, nor leaves the link leading to nothing; its
		// entries go.
		created := fr != nil && !fr.Existed && !isLink(t.path)
		if fr != nil && fr.Restorable && bytes.Equal(sum(cur), fr.afterSum()) {
			switch {
			case created:
				ch.Delete, ch.Restore = true, true
			case fr.Existed:
				if orig, err := os.ReadFile(fr.Backup); err == nil && isClean(t, client, k, orig) {
					ch.after, ch.Restore = orig, true
				}
			}
		}
		if !ch.Restore {
			after, notes, err := uninstallFile(t, client, k, cur, fr, hooks)
			if err != nil {
				return nil, withPath(err, t.path)
			}
			p.Notes = append(p.Notes, notes...)
			ch.after = after
			if created && isEmptyConfig(t, after) {
				ch.Delete = true
			}
		}
		if !ch.Delete && bytes.Equal(ch.before, ch.after) {
			p.Unchanged = append(p.Unchanged, t.path)
			continue
		}
		if ch.Delete {
			ch.after = nil
		}
		if err := writable(t.path); err != nil {
			return nil, err
		}
		p.noteHardLinked(t.path)
		ch.Diff = unifiedDiff(t.path, ch.before, ch.after, false, ch.Delete)
		if fr != nil && ch.Delete {
			ch.dirs = fr.Dirs // removed when empty
		}
		p.Changes = append(p.Changes, ch)
	}
	return p, nil
}

// uninstallFile takes Parley's entries out of a file's text (after its
// byte order mark, which stays, when it has one).
func uninstallFile(t target, client Client, k known, cur []byte, fr *fileRecord, hooks []string) ([]byte, []string, error) {
	bom, cur := splitBOM(cur)
	var after []byte
	var notes []string
	var err error
	if t.format == fmtTOML {
		after, notes, err = uninstallTOML(t, k, cur, fr)
	} else {
		after, notes, err = uninstallJSON(t, client, k, cur, fr, hooks)
	}
	return withBOM(bom, after), notes, err
}

// uninstallTOML takes Parley's entries out of a TOML file's text.
func uninstallTOML(t target, k known, cur []byte, fr *fileRecord) ([]byte, []string, error) {
	var notes []string
	d, err := newTOMLDoc(cur)
	if err != nil {
		return nil, nil, err
	}
	m, _ := d.decode()
	// Last in, first out: install wrote the table, then notify (whose
	// separators may stand next to the table's).
	if k.notify(m["notify"]) {
		var r *tomlUndo
		if fr != nil {
			r = fr.tomlUndo([]string{"notify"})
		}
		if isFound(r) {
			notes = append(notes, foundNote(t.path, "notify"))
		} else if _, err := d.removeTopKey(undoOr(r, []string{"notify"}), r != nil); err != nil {
			return nil, nil, err
		}
	}
	why, _, err := d.notOwnTable(t, k)
	if err != nil {
		return nil, nil, err
	}
	if why != "" {
		notes = append(notes, fmt.Sprintf("%s: [%s] is not Parley's own (%s); left alone.", t.path, strings.Join(t.server, "."), why))
	} else if _, ok := tableValue(m, t.server); ok {
		var r *tomlUndo
		if fr != nil {
			r = fr.tomlUndo(t.server)
		}
		if isFound(r) {
			notes = append(notes, foundNote(t.path, "["+strings.Join(t.server, ".")+"]"))
		} else if _, err := d.removeTable(undoOr(r, t.server), r != nil); err != nil {
			return nil, nil, err
		}
	}
	return d.src, notes, nil
}

// uninstallJSON takes Parley's entries out of a JSON file's text (without
// a byte order mark). hooks are the events the install wrote hooks for.
func uninstallJSON(t target, client Client, k known, cur []byte, fr *fileRecord, hooks []string) ([]byte, []string, error) {
	var notes []string
	d, err := newJSONDoc(cur, t.dialect)
	if err != nil {
		return nil, nil, err
	}
	undo := func(path []string) *jsonUndo {
		if fr == nil {
			return nil
		}
		return fr.jsonUndo(path)
	}
	if t.server != nil {
		root, _ := d.parse()
		if v := lookup(&root, t.server); v != nil {
			val, _ := decodeValue(d.src, v)
			why := t.notOwnServer(k, val, hasJSONComment(d.src[v.StartOffset:v.EndOffset]))
			switch r := undo(t.server); {
			case why != "":
				notes = append(notes, fmt.Sprintf("%s: %s is not Parley's own (%s); left alone.", t.path, strings.Join(t.server, "."), why))
			case r != nil && r.Found:
				notes = append(notes, foundNote(t.path, strings.Join(t.server, ".")))
			case r != nil && r.Prev != nil:
				if err := d.replaceRaw(t.server, *r.Prev); err != nil {
					return nil, nil, err
				}
			case r != nil:
				created := r.Created
				if created == 0 {
					created = 1
				}
				if _, err := d.removeMember(t.server, created, r.EmptyInner); err != nil {
					return nil, nil, err
				}
			default:
				if _, err := d.removeMember(t.server, -1, nil); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	// Where install replaced a hook of the user's, it comes back, and the
	// event's other hooks are theirs. With a record of the file, only the
	// hooks of the events it names go: a `parley hook` the user wrote for
	// another event is theirs; without one, every hook shaped as Parley's.
	restored := map[string]bool{}
	for n := 0; n < 1000; n++ {
		root, _ := d.parse()
		h := findParleyHook(d.src, &root, client, k, func(ev string) bool {
			u := undo([]string{"hooks", ev})
			if u != nil && u.Found {
				return false // there before the install
			}
			if fr != nil && u == nil && !slices.Contains(hooks, ev) {
				return false
			}
			return !restored[ev] && (u == nil || !u.Back)
		})
		if h == nil {
			break
		}
		put, err := d.takeOutHook(h, undo([]string{"hooks", h.event}))
		if err != nil {
			return nil, nil, err
		}
		restored[h.event] = put
	}
	// Hooks there before the install stay.
	if fr != nil {
		root, _ := d.parse()
		for _, u := range fr.JSON {
			if !u.Found || len(u.Path) != 2 || u.Path[0] != "hooks" {
				continue
			}
			ev := u.Path[1]
			if findParleyHook(d.src, &root, client, k, func(e string) bool { return e == ev }) != nil {
				notes = append(notes, foundNote(t.path, "the "+ev+" hook"))
			}
		}
	}
	// Containers one entry created and another's removal left empty.
	if fr != nil {
		for _, r := range fr.JSON {
			if err := d.pruneCreated(r); err != nil {
				return nil, nil, err
			}
		}
	}
	return d.src, notes, nil
}

// pruneCreated removes the containers an entry's install created above it
// (innermost first) while they are empty.
func (d *jsonDoc) pruneCreated(r jsonUndo) error {
	outermost := len(r.Path) - r.Created + 1
	for depth := len(r.Path) - 1; depth >= outermost && depth >= 1; depth-- {
		root, err := d.parse()
		if err != nil {
			return err
		}
		v := lookup(&root, r.Path[:depth])
		if v == nil {
			continue
		}
		if _, hasItems := lastItemEnd(v); hasItems || v.Value.Kind() != '{' && v.Value.Kind() != '[' {
			return nil
		}
		inner := (*string)(nil)
		if depth == outermost {
			inner = r.EmptyInner
		}
		if _, err := d.removeMember(r.Path[:depth], 1, inner); err != nil {
			return err
		}
	}
	return nil
}

// isClean reports whether a file's text holds none of Parley's entries.
func isClean(t target, client Client, k known, src []byte) bool {
	if len(bytes.TrimSpace(src)) == 0 {
		return true
	}
	if t.format == fmtTOML {
		m, err := decodeTOML(src)
		if err != nil {
			return false
		}
		return reflect.DeepEqual(m, stripTOML(m, k, m))
	}
	v, err := standardValue(src)
	if err != nil {
		return false
	}
	a, _ := standardValue(src)
	return reflect.DeepEqual(v, stripJSON(a, t, client, k, v))
}

// isEmptyConfig reports whether a file Parley created holds nothing else.
func isEmptyConfig(t target, src []byte) bool {
	if t.format == fmtTOML {
		return len(bytes.TrimSpace(src)) == 0
	}
	v, err := standardValue(src)
	if err != nil {
		return false
	}
	if t.newFile != "" {
		nv, _ := standardValue([]byte(t.newFile))
		if reflect.DeepEqual(v, nv) {
			return true
		}
	}
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}

// Apply writes the plan: a copy of each file goes under Parley's home
// first (but of one holding Parley's text alone: one it creates, or one it
// created and removes as it wrote it), then, for an install, the record of
// it, synced, and only then is each file replaced in one step (a rename):
// an install cut short between its renames (a crash, Ctrl-C) leaves no
// edit the record does not name, and the record keeps the SHA-256 of each
// file before the write, so a file the rename did not reach is told from
// one someone else changed. An uninstall updates the record (or removes
// it) after its renames: until then it still names every entry left. Each
// file is compared with the plan before its copy is made and again right
// before the rename: if the client wrote it in between, Apply stops with
// ErrRaced and leaves the client's text (files written before it in this
// plan are put back, unless they changed too, and the record is put back
// as it was but for those). A plan that changes a file with hard links is
// refused (ErrHardLinked) before anything is written.
func (p *Plan) Apply() error {
	for _, c := range p.Changes {
		if !c.Create {
			if err := hardLinked(c.Path); err != nil {
				return err
			}
		}
	}
	if !p.Uninstall && !p.Changed() {
		if _, err := os.Stat(p.recPath); err == nil {
			return nil // already installed and recorded
		}
		if err := saveRecord(p.recPath, p.rec); err != nil {
			return fmt.Errorf("install: write the record %s: %w", p.recPath, err)
		}
		return nil
	}
	var done []Change
	// rollback puts back the files written, and returns those it could not
	// put back (the client wrote them since).
	rollback := func() []Change {
		var left []Change
		for i := len(done) - 1; i >= 0; i-- {
			c := done[i]
			// Best effort, and only while the file still holds what Parley
			// left: a write the client made since stays. The copy stays too.
			ours := func() error { return holds(c.Path, c.after, !c.Delete) }
			if ours() != nil {
				left = append(left, c)
				continue
			}
			switch {
			case c.Create:
				if err := removeFile(c.Path, c.root, c.real); err != nil {
					left = append(left, c)
					continue
				}
				removeEmptyDirs(c.dirs)
			default:
				if err := replaceFile(c.Path, c.root, c.real, c.before, c.perm, ours); err != nil {
					left = append(left, c)
				}
			}
		}
		return left
	}
	// Each file is compared with the plan and copied first.
	for _, c := range p.Changes {
		if err := holds(c.Path, c.before, !c.Create); err != nil {
			return err
		}
		// No copy of a file Parley creates, nor of one it created and
		// removes as it wrote it: neither holds anything of the user's.
		if !c.Create && !(c.Delete && c.Restore) {
			fr := p.rec.file(c.Path)
			first := fr != nil && fr.Backup == ""
			orig, err := p.backup(c.Path, c.before, first)
			if err != nil {
				return err
			}
			if first {
				fr.Backup = orig
			}
		}
	}
	// An install's record is written before its first rename.
	var putBackRecord func(left []Change)
	if !p.Uninstall {
		for _, c := range p.Changes {
			if fr := p.rec.file(c.Path); fr != nil {
				fr.Before = ""
				if !c.Create {
					fr.Before = hexSum(c.before)
				}
			}
		}
		oldRec, had, err := readFile(p.recPath)
		if err != nil {
			return err
		}
		if err := saveRecord(p.recPath, p.rec); err != nil {
			_ = p.restoreRecord(oldRec, had, nil)
			return fmt.Errorf("install: write the record %s: %w; nothing was changed", p.recPath, err)
		}
		putBackRecord = func(left []Change) {
			if err := p.restoreRecord(oldRec, had, left); err != nil {
				p.Notes = append(p.Notes, fmt.Sprintf("the record %s could not be put back as it was (%v); it names the edits this install meant to make, and the SHA-256 of each file before them", p.recPath, err))
			}
		}
	}
	fail := func(err error) error {
		left := rollback()
		if putBackRecord != nil {
			putBackRecord(left)
		}
		return err
	}
	for _, c := range p.Changes {
		unchanged := func() error { return holds(c.Path, c.before, !c.Create) }
		if c.Delete {
			if beforeReplace != nil {
				beforeReplace(c.Path)
			}
			if err := unchanged(); err != nil {
				return fail(err)
			}
			if err := removeFile(c.Path, c.root, c.real); err != nil {
				return fail(fmt.Errorf("install: remove %s: %w", c.Path, err))
			}
			removeEmptyDirs(c.dirs)
			done = append(done, c)
			continue
		}
		for _, dir := range c.dirs {
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				removeEmptyDirs(c.dirs)
				return fail(fmt.Errorf("install: create %s: %w", dir, err))
			}
		}
		if err := replaceFile(c.Path, c.root, c.real, c.after, c.perm, unchanged); err != nil {
			removeEmptyDirs(c.dirs)
			return fail(err)
		}
		done = append(done, c)
	}
	if !p.Uninstall {
		return nil
	}
	// An uninstall's record is updated last; when it cannot be (a full
	// disk), the files are put back as they were, so that no entry of
	// Parley's is left with no record of what it replaced or created.
	if p.rec != nil && len(p.rec.Files) > 0 {
		if err := saveRecord(p.recPath, p.rec); err != nil { // the files it did not look at
			rollback()
			return fmt.Errorf("install: write the record %s: %w; the files are put back as they were", p.recPath, err)
		}
	} else if err := os.Remove(p.recPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		rollback()
		return fmt.Errorf("install: remove record %s: %w; the files are put back as they were", p.recPath, err)
	}
	removeEmptyDirs(p.dirs)
	return nil
}

// restoreRecord puts an install's record back as it was before Apply wrote
// it (old, or none when !had), after a failed Apply put its files back:
// but for the files in left, which stay changed (the client wrote them
// after Parley), whose entries of the new record it keeps.
func (p *Plan) restoreRecord(old []byte, had bool, left []Change) error {
	if len(left) == 0 {
		if !had {
			if err := os.Remove(p.recPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return nil
		}
		return writeNew(p.recPath, old)
	}
	r := &record{Client: p.rec.Client, Scope: p.rec.Scope, Project: p.rec.Project, Command: p.rec.Command, Hooks: p.rec.Hooks}
	if p.old != nil {
		r.Files = nil
		for _, f := range p.old.Files {
			r.Files = append(r.Files, f.clone())
		}
	}
	for _, c := range left {
		nf := p.rec.file(c.Path)
		if nf == nil {
			continue
		}
		if f := r.file(c.Path); f != nil {
			*f = nf.clone()
		} else {
			r.Files = append(r.Files, nf.clone())
		}
	}
	return saveRecord(p.recPath, r)
}

// holds checks that path holds want (exists false: that it is missing),
// else returns ErrRaced.
func holds(path string, want []byte, exists bool) error {
	cur, existed, err := readFile(path)
	if err != nil {
		return err
	}
	if existed != exists || !bytes.Equal(cur, want) {
		return fmt.Errorf("%w: %s", ErrRaced, path)
	}
	return nil
}

// Attempts is how many times Run makes and applies a plan before it gives up
// on a file that keeps changing.
const Attempts = 3

// Run makes a plan (Install or Uninstall) and applies it. When a file
// changed between the two (ErrRaced: the client rewrote it), it makes the
// plan again from the file as it is now, up to Attempts times in all.
func Run(plan func() (*Plan, error)) (*Plan, error) {
	for attempt := 1; ; attempt++ {
		p, err := plan()
		if err != nil {
			return nil, err
		}
		err = p.Apply()
		if errors.Is(err, ErrRaced) && attempt < Attempts {
			continue
		}
		if err != nil {
			return nil, err
		}
		return p, nil
	}
}

// backup keeps the file's text as it was before Parley's first write
// (first: it returns where that copy is) and before its latest one. An
// original copy already there (of an install whose record is gone: moved
// away when damaged, or never written) is never written over: it may be
// the one copy of the file from before Parley; the new one goes under a
// name with the time, and a note says where both are.
func (p *Plan) backup(path string, data []byte, first bool) (string, error) {
	var orig string
	if first {
		orig = p.backupPath(path, "original")
		if old, ok, err := readFile(orig); err != nil {
			return "", err
		} else if ok && !bytes.Equal(old, data) {
			orig = p.backupPath(path, "original-"+time.Now().UTC().Format("20060102T150405.000000000Z"))
			p.Notes = append(p.Notes, fmt.Sprintf("%s holds an older copy of %s, from an install Parley has no record of; it is kept, and this install's copy is %s", p.backupPath(path, "original"), path, orig))
		}
		if err := writeNew(orig, data); err != nil {
			return "", err
		}
		p.Backups = append(p.Backups, orig)
	}
	if err := writeNew(p.backupPath(path, "previous"), data); err != nil {
		return "", err
	}
	p.Backups = append(p.Backups, p.backupPath(path, "previous"))
	return orig, nil
}

func (p *Plan) backupPath(path, kind string) string {
	h := sha256.Sum256([]byte(path))
	name := strings.TrimSuffix(filepath.Base(p.recPath), ".json")
	return filepath.Join(filepath.Dir(p.recPath), "backup", name, hex.EncodeToString(h[:4])+"-"+filepath.Base(path)+"."+kind)
}

// BackupDir is where a client's backups go.
func BackupDir(env Env, client Client, scope Scope) string {
	rp := recordPath(env, client, scope)
	return filepath.Join(filepath.Dir(rp), "backup", strings.TrimSuffix(filepath.Base(rp), ".json"))
}

// recordElsewhere returns, for an uninstall whose home holds no record of
// the install, the home that does: one that Parley's entries in the files
// name (--home DIR; an entry naming none runs with ~/.parley) and that holds
// a record for this client and scope. An entry whose program is not named
// parley (an install writes the full path of the program that ran it,
// whatever its name) counts when it is shaped as Parley's and the record
// in the home it names names its program. It returns "" when there is none.
func recordElsewhere(env Env, client Client, scope Scope, ts []target) string {
	type entry struct{ program, home string }
	var entries []entry
	for _, t := range ts {
		b, ok, err := readFile(t.path)
		if err != nil || !ok {
			continue
		}
		for _, argv := range parleyEntries(t, client, b) {
			e := entry{argv[0], namedHome(argv[1:], env.Home)}
			if e.home != "" && !slices.Contains(entries, e) {
				entries = append(entries, e)
			}
		}
	}
	for _, e := range entries {
		if sameFolder(e.home, env.ParleyHome) {
			continue
		}
		other := env
		other.ParleyHome = e.home
		rp := recordPath(other, client, scope)
		if isParleyBinary(e.program) {
			if _, err := os.Stat(rp); err == nil {
				return e.home
			}
			continue
		}
		if rec, err := loadRecord(rp); err == nil && rec != nil && rec.Command == e.program {
			return e.home
		}
	}
	return ""
}

// parleyEntries returns the command (program and arguments) of each entry
// in a config file's text shaped as one of Parley's, whatever its program:
// an MCP server running `mcp`, hooks and notify running `hook`.
func parleyEntries(t target, client Client, src []byte) [][]string {
	var out [][]string
	strs := func(a []any) []string {
		var ss []string
		for _, x := range a {
			s, _ := x.(string)
			ss = append(ss, s)
		}
		return ss
	}
	k := anyProgram
	var m map[string]any
	if t.format == fmtTOML {
		d, err := decodeTOML(src)
		if err != nil {
			return nil
		}
		m = d
		if n, ok := m["notify"].([]any); ok && k.notify(n) {
			out = append(out, strs(n))
		}
	} else {
		v, err := standardValue(src)
		if err != nil {
			return nil
		}
		m, _ = v.(map[string]any)
		eachHook(m, func(_ string, _ map[string]any, cmd string) {
			if _, ok := k.hookEvent(cmd, client); ok {
				out = append(out, splitCommand(cmd))
			}
		})
	}
	if t.server != nil {
		if v, ok := dig(m, t.server[:len(t.server)-1]); ok {
			if sv := v[t.server[len(t.server)-1]]; k.server(sv) {
				sm := sv.(map[string]any)
				switch c := sm["command"].(type) {
				case string:
					a, _ := sm["args"].([]any)
					out = append(out, append([]string{c}, strs(a)...))
				case []any:
					out = append(out, strs(c))
				}
			}
		}
	}
	return out
}

// namedHome returns the home a parley command's arguments name (--home
// DIR), or, when they name none, the default one, ~/.parley.
func namedHome(args []string, userHome string) string {
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "--home" && len(args) > 1:
			return args[1]
		case strings.HasPrefix(a, "--home="):
			return strings.TrimPrefix(a, "--home=")
		case a == "--timeout" && len(args) > 1:
			args = args[2:]
		case strings.HasPrefix(a, "--timeout=") || a == "--json":
			args = args[1:]
		default:
			args = nil
		}
	}
	if userHome == "" {
		return ""
	}
	return filepath.Join(userHome, ".parley")
}

// sameFolder reports whether a and b name the same folder.
func sameFolder(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ea, errA := filepath.EvalSymlinks(a)
	eb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ea == eb
}

// eachHook calls f with each hook of a settings file's "hooks" table
// (Claude Code's and Gemini CLI's form: event → groups → hooks): its
// event, the hook's object and its command.
func eachHook(m map[string]any, f func(ev string, hook map[string]any, cmd string)) {
	hooks, _ := m["hooks"].(map[string]any)
	for ev, arr := range hooks {
		groups, _ := arr.([]any)
		for _, g := range groups {
			gm, _ := g.(map[string]any)
			hs, _ := gm["hooks"].([]any)
			for _, h := range hs {
				hm, _ := h.(map[string]any)
				cmd, _ := hm["command"].(string)
				f(ev, hm, cmd)
			}
		}
	}
}
