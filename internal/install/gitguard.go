package install

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// GitGuard is `parley install git-guard`: a git pre-commit hook that runs
// `parley guard`, which refuses a commit touching files another agent has
// claimed on the project's board. It is written into the repository's
// hooks folder (git rev-parse --git-path hooks) as a block between two
// marker lines: in a new pre-commit file, or after the first line (the
// #! line) of an existing one, which is otherwise left alone.
const GitGuard Client = "git-guard"

// The marker lines of the git guard's block.
const (
	guardBegin = "# >>> parley git-guard (parley uninstall git-guard takes it out)\n"
	guardEnd   = "# <<< parley git-guard\n"
)

// guardBlock is the hook's text: it runs the guard when the parley program
// is there (a moved program does not block commits).
func guardBlock(command string, args []string) string {
	line := shellQuote(command)
	for _, a := range args {
		line += " " + shellQuote(a)
	}
	return guardBegin +
		"if command -v " + shellQuote(command) + " >/dev/null 2>&1; then\n" +
		"\t" + line + " guard || exit 1\n" +
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

// InstallGitGuard plans the pre-commit hook in hooksDir for the repository
// env.ProjectDir; command and args run parley (args: e.g. --home DIR).
func InstallGitGuard(env Env, hooksDir, command string, args []string) (*Plan, error) {
	path := filepath.Join(hooksDir, "pre-commit")
	recPath := recordPath(env, GitGuard, Project)
	rec, err := loadRecord(recPath)
	if err != nil {
		return nil, err
	}
	p := &Plan{Client: GitGuard, Scope: Project, env: env, recPath: recPath}
	before, existed, err := readFile(path)
	if err != nil {
		return nil, err
	}
	block := guardBlock(command, args)
	var after []byte
	switch {
	case existed && bytes.Contains(before, []byte(block)):
		p.Unchanged = append(p.Unchanged, path)
		if rec == nil {
			p.rec = &record{Client: GitGuard, Scope: Project, Project: env.ProjectDir, Command: command,
				Files: []fileRecord{{Path: path, Existed: true, After: hexSum(before)}}}
		} else {
			p.rec = rec
		}
		return p, nil
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
	fr := rec.file(path)
	if fr == nil {
		nf := fileRecord{Path: path, Existed: existed, Restorable: true}
		if !existed {
			nf.Dirs = missingDirs(hooksDir)
		}
		rec = &record{Client: GitGuard, Scope: Project, Project: env.ProjectDir, Command: command, Files: []fileRecord{nf}}
		fr = &rec.Files[0]
	} else if !bytes.Equal(sum(before), fr.afterSum()) {
		fr.Restorable = false // someone else changed it since
	}
	fr.After = hexSum(after)
	rec.Command = command
	p.rec = rec
	ch := Change{Path: path, Create: !existed, before: before, after: after, perm: 0o755,
		Diff: unifiedDiff(path, before, after, !existed, false)}
	if !existed {
		ch.dirs = fr.Dirs
	}
	p.Changes = append(p.Changes, ch)
	return p, nil
}

// UninstallGitGuard plans taking the git guard out of hooksDir: the file
// comes back byte for byte when nothing else changed it (a file Parley
// created is removed), else only the block goes.
func UninstallGitGuard(env Env, hooksDir string) (*Plan, error) {
	path := filepath.Join(hooksDir, "pre-commit")
	recPath := recordPath(env, GitGuard, Project)
	rec, err := loadRecord(recPath)
	if err != nil {
		return nil, err
	}
	p := &Plan{Client: GitGuard, Scope: Project, Uninstall: true, env: env, recPath: recPath}
	cur, existed, err := readFile(path)
	if err != nil || !existed {
		return p, err
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
			p.Unchanged = append(p.Unchanged, path)
			return p, nil
		}
		ch.after = append(append([]byte{}, cur[:i]...), cur[j:]...)
		if fr != nil && !fr.Existed && string(ch.after) == "#!/bin/sh\n" {
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
	p.Changes = append(p.Changes, ch)
	return p, nil
}
