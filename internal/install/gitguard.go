package install

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// GitGuard is `parley install git-guard`: git pre-commit and
// pre-merge-commit hooks that run `parley guard`, which refuses a commit
// (or a merge that commits by itself) touching files another agent has
// claimed on the project's board. It is written into the repository's
// hooks folder (git rev-parse --git-path hooks) as a block between two
// marker lines: in a new hook file, or after the first line (the #! line)
// of an existing shell script, which is otherwise left alone. A hook in
// another language is refused (ErrNotShell).
const GitGuard Client = "git-guard"

// The marker lines of the git guard's block.
const (
	guardBegin = "# >>> parley git-guard (parley uninstall git-guard takes it out)\n"
	guardEnd   = "# <<< parley git-guard\n"
)

// GuardHooks are the git hooks the guard goes into: pre-commit for
// commits, pre-merge-commit for merges that commit by themselves (git runs
// no pre-commit for those).
var GuardHooks = []string{"pre-commit", "pre-merge-commit"}

// shells are the programs whose scripts take the guard's block: POSIX
// shells and the shells that read POSIX shell.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "ash": true, "mksh": true, "yash": true, "posh": true}

// interpreter returns the program a script's #! line names ("" for none),
// looking through env: "#!/usr/bin/env -S python3 -u" is python3.
func interpreter(src []byte) string {
	if !bytes.HasPrefix(src, []byte("#!")) {
		return ""
	}
	line, _, _ := bytes.Cut(src[2:], []byte("\n"))
	fs := strings.Fields(strings.TrimSuffix(string(line), "\r"))
	if len(fs) == 0 {
		return ""
	}
	prog := path.Base(fs[0])
	if prog == "env" {
		prog = ""
		for _, f := range fs[1:] {
			if strings.HasPrefix(f, "-") || strings.Contains(f, "=") {
				continue
			}
			prog = path.Base(f)
			break
		}
	}
	return prog
}

// crlfShebang reports whether a hook's #! line ends in \r (a CRLF file):
// git cannot run it, since the system looks for a program whose name
// ends in \r. A hook with no #! line git runs with sh, which takes a \r
// as part of a command: harmless on a comment line, so that is no reason
// to refuse one.
func crlfShebang(src []byte) bool {
	if !bytes.HasPrefix(src, []byte("#!")) {
		return false
	}
	line, _, _ := bytes.Cut(src, []byte("\n"))
	return bytes.HasSuffix(line, []byte("\r"))
}

// toLF is how to convert a file to LF line endings, on any system:
// dos2unix, or tr (POSIX, unlike sed -i) into a copy written back over the
// file, which keeps its mode (a hook must stay executable).
func toLF(path string) string {
	q, tmp := shellQuote(path), shellQuote(path+".tmp")
	return fmt.Sprintf("`dos2unix %s`, or `tr -d '\\r' < %s > %s && cat %s > %s && rm %s`", q, q, tmp, tmp, q, tmp)
}

// guardLine is the command that runs the guard.
func guardLine(command string, args []string) string {
	line := shellQuote(command)
	for _, a := range args {
		line += " " + shellQuote(a)
	}
	return line + " guard"
}

// guardBlock is the hook's text: it runs the guard when the parley program
// is there (a moved program does not block commits).
func guardBlock(command string, args []string) string {
	return guardBegin +
		"if command -v " + shellQuote(command) + " >/dev/null 2>&1; then\n" +
		"\t" + guardLine(command, args) + " || exit 1\n" +
		"fi\n" +
		guardEnd
}

// findBlock returns where the guard's block is in src.
func findBlock(src []byte) (int, int, bool) {
	i := bytes.Index(src, []byte(guardBegin))
	if i < 0 {
		return 0, 0, false
	}
	j := bytes.Index(src[i:], []byte(guardEnd))
	if j < 0 {
		return 0, 0, false
	}
	return i, i + j + len(guardEnd), true
}

// InstallGitGuard plans the guard's hooks (GuardHooks) in hooksDir for the
// repository env.ProjectDir; command and args run parley (args: e.g.
// --home DIR). An existing hook that is not a shell script is refused
// with ErrNotShell, and nothing is written.
func InstallGitGuard(env Env, hooksDir, command string, args []string) (*Plan, error) {
	recPath := recordPath(env, GitGuard, Project)
	rec, err := loadRecord(recPath)
	if err != nil {
		return nil, err
	}
	p := &Plan{Client: GitGuard, Scope: Project, env: env, recPath: recPath}
	block := guardBlock(command, args)
	if rec == nil {
		rec = &record{Client: GitGuard, Scope: Project, Project: env.ProjectDir, Command: command}
	}
	rec.Command = command
	for _, name := range GuardHooks {
		path := filepath.Join(hooksDir, name)
		if err := danglingLink(path); err != nil {
			return nil, err
		}
		before, existed, err := readFile(path)
		if err != nil {
			return nil, err
		}
		// Also for a hook that holds the guard already: git runs none of it.
		if existed && crlfShebang(before) {
			return nil, &ConfigError{Path: path, Line: 1, Err: ErrNotShell, Msg: "the hook's #! line ends in CRLF (\\r\\n), so git cannot run it: the system looks for a program whose name ends in \\r. " +
				"Convert it to LF line endings (" + toLF(path) + "), check that it runs, then install again"}
		}
		if existed && bytes.Contains(before, []byte("\r\n")) {
			p.Notes = append(p.Notes, fmt.Sprintf("%s has lines ending in CRLF (\\r\\n): a shell reads the \\r into the command on such a line (Parley's lines end in LF); to convert it: %s", path, toLF(path)))
		}
		// Also over a block an older Parley put there: it breaks the hook.
		if prog := interpreter(before); existed && prog != "" && !shells[prog] {
			return nil, &ConfigError{Path: path, Line: 1, Err: ErrNotShell, Msg: fmt.Sprintf(
				"the hook is a %s script, not a shell script: Parley puts shell lines only into sh, bash, dash or zsh scripts (or a file with no #! line). "+
					"Call the guard from it yourself: run %s in the repository and stop the %s when it exits non-zero", prog, guardLine(command, args), strings.TrimSuffix(strings.TrimPrefix(name, "pre-"), "-commit"))}
		}
		var after []byte
		switch {
		case existed && bytes.Contains(before, []byte(block)):
			p.Unchanged = append(p.Unchanged, path)
			if rec.file(path) == nil {
				rec.Files = append(rec.Files, fileRecord{Path: path, Existed: true, After: hexSum(before)})
			}
			continue
		case existed:
			if i, j, ok := findBlock(before); ok { // another command: replace the block
				after = append(append(append([]byte{}, before[:i]...), block...), before[j:]...)
				break
			}
			at := 0
			if bytes.HasPrefix(before, []byte("#!")) {
				if nl := bytes.IndexByte(before, '\n'); nl >= 0 {
					at = nl + 1
				} else {
					return nil, fmt.Errorf("install: %s is one line without a line end; add one and try again", path)
				}
			}
			after = append(append(append([]byte{}, before[:at]...), block...), before[at:]...)
		default:
			after = []byte("#!/bin/sh\n" + block)
		}
		if existed {
			p.noteHardLinked(path)
		}
		fr := rec.file(path)
		if fr == nil {
			nf := fileRecord{Path: path, Existed: existed, Restorable: true}
			if !existed {
				nf.Dirs = missingDirs(hooksDir)
			}
			rec.Files = append(rec.Files, nf)
			fr = &rec.Files[len(rec.Files)-1]
		} else if !bytes.Equal(sum(before), fr.afterSum()) {
			fr.Restorable = false // someone else changed it since
		}
		fr.After = hexSum(after)
		ch := Change{Path: path, Create: !existed, before: before, after: after, perm: 0o755,
			Diff: unifiedDiff(path, before, after, !existed, false)}
		if !existed {
			// The folders the first new file creates.
			if !slices.ContainsFunc(p.Changes, func(c Change) bool { return c.Create }) {
				ch.dirs = fr.Dirs
			} else {
				fr.Dirs = nil
			}
		}
		p.Changes = append(p.Changes, ch)
	}
	p.rec = rec
	return p, nil
}

// UninstallGitGuard plans taking the git guard out of hooksDir, and out of
// the hook files the record of the install names elsewhere (a hooks folder
// that moved since: core.hooksPath): a file comes back byte for byte when
// nothing else changed it (a file Parley created is removed), else only
// the block goes, and a file left with nothing but "#!/bin/sh" that Parley
// created, or that no record names, is removed.
func UninstallGitGuard(env Env, hooksDir string) (*Plan, error) {
	recPath := recordPath(env, GitGuard, Project)
	rec, err := loadRecord(recPath)
	if err != nil {
		return nil, err
	}
	p := &Plan{Client: GitGuard, Scope: Project, Uninstall: true, env: env, recPath: recPath, rec: rec}
	var paths []string
	for _, name := range GuardHooks {
		paths = append(paths, filepath.Join(hooksDir, name))
	}
	if rec != nil {
		for _, f := range rec.Files {
			if !slices.Contains(paths, f.Path) {
				paths = append(paths, f.Path)
			}
		}
	}
	for _, path := range paths {
		ch, err := uninstallHook(rec, path)
		if err != nil {
			return nil, err
		}
		if ch == nil {
			p.Unchanged = append(p.Unchanged, path)
			continue
		}
		p.noteHardLinked(path)
		p.Changes = append(p.Changes, *ch)
	}
	// The folders Parley made go with the last file it removes.
	var dirs []string
	last := -1
	for i := range p.Changes {
		if p.Changes[i].Delete {
			dirs = appendNew(dirs, p.Changes[i].dirs...)
			p.Changes[i].dirs, last = nil, i
		}
	}
	if last >= 0 {
		p.Changes[last].dirs = dirs
	}
	if rec != nil {
		// Applied, nothing of the install is left to remember.
		p.rec = &record{Client: rec.Client, Scope: rec.Scope, Project: rec.Project, Command: rec.Command}
	}
	return p, nil
}

// uninstallHook plans taking the guard out of one hook file (nil: it has
// none).
func uninstallHook(rec *record, path string) (*Change, error) {
	cur, existed, err := readFile(path)
	if err != nil || !existed {
		return nil, err
	}
	fr := rec.file(path)
	ch := Change{Path: path, before: cur, perm: 0o755}
	if fr != nil && fr.Restorable && bytes.Equal(sum(cur), fr.afterSum()) {
		if !fr.Existed {
			ch.Delete, ch.Restore = true, true
		} else if orig, err := os.ReadFile(fr.Backup); err == nil {
			if _, _, has := findBlock(orig); !has {
				ch.after, ch.Restore = orig, true
			}
		}
	}
	if !ch.Restore {
		i, j, ok := findBlock(cur)
		if !ok {
			return nil, nil
		}
		ch.after = append(append([]byte{}, cur[:i]...), cur[j:]...)
		if (fr == nil || !fr.Existed) && string(ch.after) == "#!/bin/sh\n" {
			ch.Delete = true
		}
	}
	if ch.Delete {
		ch.after = nil
		if fr != nil {
			ch.dirs = fr.Dirs
		}
	}
	ch.Diff = unifiedDiff(path, ch.before, ch.after, false, ch.Delete)
	return &ch, nil
}

// danglingLink refuses a hook that is a symbolic link to nothing: writing
// the hook would create a file wherever the link points, a place whoever
// made the link chose (a repository can track such a link).
func danglingLink(path string) error {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		to, _ := os.Readlink(path)
		return fmt.Errorf("install: %s is a symbolic link to %s, which does not exist: Parley does not create a file through a link; remove the link or make the file it points to, and try again", path, to)
	}
	return nil
}

// AdoptGitGuardRecord moves the record of a guard installed with the
// repository's folder taken as from (an earlier Parley recorded a guard
// installed from a worktree under the worktree's folder) to env's
// project folder, when env's has none; it reports whether it moved one.
// Call it holding the install lock.
func AdoptGitGuardRecord(env Env, from string) (bool, error) {
	if from == "" || from == env.ProjectDir {
		return false, nil
	}
	to := recordPath(env, GitGuard, Project)
	if rec, err := loadRecord(to); err != nil || rec != nil {
		return false, err
	}
	oldEnv := env
	oldEnv.ProjectDir = from
	fromPath := recordPath(oldEnv, GitGuard, Project)
	rec, err := loadRecord(fromPath)
	if err != nil || rec == nil {
		return false, err
	}
	rec.Project = env.ProjectDir
	if err := saveRecord(to, rec); err != nil {
		return false, err
	}
	if err := os.Remove(fromPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true, fmt.Errorf("install: %w", err)
	}
	return true, nil
}

// CheckGitGuard looks at the git guard in hooksDir, the hooks folder git
// runs for the repository env.ProjectDir, as `parley doctor` does for the
// clients: each hook is there, holds the guard's block as Parley writes it,
// is one git runs (executable, a #! line without CRLF, a shell script) and
// names a parley program that exists. installed is false (and there are
// no findings) when neither the hooks nor Parley's record know of the
// guard there.
func CheckGitGuard(env Env, hooksDir string) (installed bool, findings []Finding) {
	add := func(level Level, path, format string, a ...any) {
		findings = append(findings, Finding{Client: GitGuard, Scope: Project, Path: path, Level: level, Msg: fmt.Sprintf(format, a...)})
	}
	rec, recErr := loadRecord(recordPath(env, GitGuard, Project))
	type hook struct {
		name, path string
		src, lf    []byte
		exists     bool
		err        error
		block      bool
	}
	var hooks []hook
	found := false
	for _, name := range GuardHooks {
		h := hook{name: name, path: filepath.Join(hooksDir, name)}
		h.src, h.exists, h.err = readFile(h.path)
		// The block is looked for in LF lines: a hook converted to CRLF
		// holds it still (and is told as a hook git cannot run).
		h.lf = bytes.ReplaceAll(h.src, []byte("\r\n"), []byte("\n"))
		if _, _, ok := findBlock(h.lf); ok {
			h.block, found = true, true
		}
		hooks = append(hooks, h)
	}
	if !found && rec == nil && recErr == nil {
		return false, nil
	}
	if recErr != nil {
		add(Fail, "", "%v", recErr)
	}
	const again = "run `parley install git-guard` again"
	bad := len(findings)
	for _, h := range hooks {
		what := "commits"
		if h.name == "pre-merge-commit" {
			what = "merges that commit by themselves"
		}
		if fi, err := os.Lstat(h.path); err == nil && fi.Mode()&fs.ModeSymlink != 0 && !h.exists && h.err == nil {
			to, _ := os.Readlink(h.path)
			add(Fail, h.path, "%s is a symbolic link to %s, which does not exist, so git runs no %s hook and %s go unguarded: remove the link (or create the file it points to), then %s", h.path, to, h.name, what, again)
			continue
		}
		switch {
		case h.err != nil:
			add(Fail, h.path, "%v", h.err)
			continue
		case !h.exists:
			add(Fail, h.path, "%s is missing, so %s go unguarded: %s", h.path, what, again)
			continue
		case !h.block:
			add(Fail, h.path, "%s no longer holds the guard's lines, so %s go unguarded: %s", h.path, what, again)
			continue
		}
		if crlfShebang(h.src) {
			add(Fail, h.path, "%s: the hook's #! line ends in CRLF (\\r\\n), so git cannot run it: convert it to LF line endings (%s)", h.path, toLF(h.path))
		} else if bytes.Contains(h.src, []byte("\r\n")) {
			add(Note, h.path, "%s has lines ending in CRLF (\\r\\n): a shell reads the \\r into the command on such a line; to convert it: %s", h.path, toLF(h.path))
		}
		i, j, _ := findBlock(h.lf)
		command, args, ours := guardOf(string(h.lf[i:j]))
		if prog := interpreter(h.src); prog != "" && !shells[prog] {
			line := "parley guard"
			if ours {
				line = guardLine(command, args)
			}
			add(Fail, h.path, "%s is a %s script, not a shell script, which the guard's shell lines break: take them out (`parley uninstall git-guard`) and call the guard from it yourself: run %s and stop the %s when it exits non-zero",
				h.path, prog, line, strings.TrimSuffix(strings.TrimPrefix(h.name, "pre-"), "-commit"))
		}
		if fi, err := os.Stat(h.path); err == nil && fi.Mode().Perm()&0o111 == 0 {
			add(Fail, h.path, "%s is not executable (mode %04o), so git does not run it and %s go unguarded: chmod +x %s", h.path, fi.Mode().Perm(), what, shellQuote(h.path))
		}
		switch {
		case !ours:
			add(Fail, h.path, "%s: the guard's lines were changed by hand: %s", h.path, again)
		default:
			if msg := checkProgram(command, env.Path); msg != "" {
				add(Fail, h.path, "%s: the guard %s, so the hook lets %s through unguarded: %s (with --command naming the parley program, if need be)", h.path, msg, what, again)
			}
		}
	}
	if rec != nil {
		// A hooks folder that moved since (core.hooksPath): the guard
		// left in the old one runs no more.
		var elsewhere []string
		for _, f := range rec.Files {
			if filepath.Dir(f.Path) == hooksDir {
				continue
			}
			if b, _, _ := readFile(f.Path); bytes.Contains(b, []byte(guardBegin)) {
				elsewhere = append(elsewhere, f.Path)
			}
		}
		if len(elsewhere) > 0 {
			add(Note, "", "%s hold the guard too, but git runs the hooks of %s now (core.hooksPath changed since the install?): `parley uninstall git-guard` takes it out of every hook the install's record names", strings.Join(elsewhere, ", "), hooksDir)
		}
	}
	if len(findings) == bad || onlyNotes(findings[bad:]) {
		var paths []string
		for _, h := range hooks {
			paths = append(paths, h.path)
		}
		findings = append(findings[:bad:bad], append([]Finding{{Client: GitGuard, Scope: Project, Level: OK,
			Msg: "the guard is intact in " + strings.Join(paths, ", ")}}, findings[bad:]...)...)
	}
	return true, findings
}

// guardOf reads the parley program and arguments a guard block (from
// guardBegin to guardEnd) runs; ours is false when the block is not
// exactly as Parley writes it for them.
func guardOf(block string) (command string, args []string, ours bool) {
	lines := strings.Split(block, "\n")
	if len(lines) != 6 {
		return "", nil, false
	}
	w := splitCommand(strings.TrimSuffix(strings.TrimPrefix(lines[2], "\t"), " || exit 1"))
	if len(w) < 2 || w[len(w)-1] != "guard" {
		return "", nil, false
	}
	command, args = w[0], w[1:len(w)-1]
	return command, args, guardBlock(command, args) == block
}
