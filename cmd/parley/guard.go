package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/gitrepo"
	"github.com/parley-mesh/parley/internal/install"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/procs"
	"github.com/parley-mesh/parley/internal/termtext"
	"github.com/parley-mesh/parley/rooms/board"
)

// gitOut runs git in dir and returns its output, trimmed.
func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// Once ctx is done, git is killed; a process it started that still
	// holds its output is not waited for longer than this.
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimRight(out.String(), "\n"), nil
}

func guardCmd(g *globals) *cobra.Command {
	var as, key string
	cmd := &cobra.Command{
		Use:   "guard",
		Short: "Refuse a commit touching files another agent has claimed (the git pre-commit and pre-merge-commit hooks run it)",
		Long: `Checks the files the commit changes against HEAD (both paths of a rename or a copy;
in a merge, the files the merge brings) against the project's board and fails when one of
them is claimed by another agent. The agent committing is --as (or $PARLEY_AGENT), else the local
agent whose client program (Claude Code, Codex, Gemini CLI: the process that started its
parley mcp) runs the commit; its own claims do not count. A commit no agent's client runs
(a person's, in a terminal of their own) counts every agent of this node as its own: it is
refused over claims of other nodes' agents only.
Install it as pre-commit and pre-merge-commit hooks with parley install git-guard.
To commit anyway: PARLEY_GUARD=off git commit ..., or git commit --no-verify. With no node
running, before the repository's first commit (the project is named by its root
commit, so no claim can name it yet) or in a shallow clone (which lacks that commit), it
says so and lets the commit through.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Getenv("PARLEY_GUARD") == "off" {
				return nil
			}
			if as == "" {
				as = os.Getenv("PARLEY_AGENT")
			}
			as = givenAgent(as) // compared with the claims' holders, as the node names them
			c, ctx, cancel, err := g.client(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			defer c.Close()
			wd, err := os.Getwd()
			if err != nil {
				return err
			}
			staged, err := stagedPaths(ctx, wd)
			if err != nil {
				return err
			}
			if len(staged) == 0 {
				return nil
			}
			k, _, err := project(ctx, key, nil)
			if errors.Is(err, gitrepo.ErrNoCommit) {
				// The project is named by its root commit: before the
				// first one no agent could claim a file of it.
				fmt.Fprintln(cmd.ErrOrStderr(), "parley guard: the repository has no commit yet, so no claim can name it; the board is not checked")
				return nil
			}
			if errors.Is(err, gitrepo.ErrShallow) {
				// A shallow clone lacks the root commit that names the
				// project: no board can be told from it.
				fmt.Fprintln(cmd.ErrOrStderr(), "parley guard: a shallow clone lacks the root commit that names the project, so the board is not checked (git fetch --unshallow)")
				return nil
			}
			if err != nil {
				return err
			}
			id, err := c.ID(ctx)
			if errors.Is(err, localapi.ErrNoNode) {
				fmt.Fprintln(cmd.ErrOrStderr(), "parley guard: no node is running; the board is not checked")
				return nil
			}
			if err != nil {
				return err
			}
			// Without --as: the agents whose client program runs this
			// commit (its nearest ancestor that started a parley mcp).
			var by []string
			if as == "" {
				// Best effort: a node from before the route answers
				// 404 or 405, and the commit is then anyone's, as
				// before.
				if r, err := c.AgentsByProcess(ctx, procs.Ancestors(os.Getpid())); err == nil {
					by = r.Agents
				}
			}
			reader := as
			if reader == "" {
				reader = human
				if len(by) > 0 {
					reader = by[0]
				}
			}
			v, err := c.Board(ctx, reader, localapi.BoardRequest{Project: k, Paths: boardPaths(staged)})
			if err != nil {
				return g.apiErr(err)
			}
			mine := func(h localapi.Claim) bool {
				switch {
				case as != "":
					return h.Holder == as+"@"+id.PeerID
				case len(by) > 0:
					return slices.ContainsFunc(by, func(a string) bool { return h.Holder == a+"@"+id.PeerID })
				}
				return strings.HasSuffix(h.Holder, "@"+id.PeerID)
			}
			// A file the committer holds a claim on is its own, whatever
			// other claim was granted beside it that also reaches it.
			theirs := board.Blocking(staged, v.Claims, func(h localapi.Claim) string { return h.Path }, mine)
			if len(theirs) == 0 {
				return nil
			}
			w := cmd.ErrOrStderr()
			book := nameBook(ctx, c)
			switch {
			case as != "":
				fmt.Fprintf(w, "parley guard: this commit, %s's, touches files another agent has claimed:\n", termtext.Line(as))
			case len(by) > 0:
				fmt.Fprintf(w, "parley guard: this commit, run by the client of %s, touches files another agent has claimed:\n", termtext.Line(strings.Join(by, ", ")))
			default:
				fmt.Fprintln(w, "parley guard: this commit touches files another agent has claimed:")
			}
			for _, h := range theirs {
				fmt.Fprintf(w, "  %s — %s until %s: %q\n", termtext.Line(h.Path), termtext.Line(book.Agent(h.Holder)), h.Expires.Local().Format(time.DateTime), h.Note)
			}
			fmt.Fprintln(w, "Talk to them (parley board shows who), or commit anyway: PARLEY_GUARD=off git commit ... (or git commit --no-verify).")
			return errors.New("commit refused by parley guard")
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "the agent committing: its own claims do not count (default $PARLEY_AGENT, else the agent whose client runs the commit; none: every agent of this node)")
	cmd.Flags().StringVar(&key, "project", "", "project key (default: the git repository around the working folder)")
	return cmd
}

// stagedPaths returns the paths the commit being made in dir touches
// (against HEAD; in a merge's pre-merge-commit hook, the files the merge
// changes): both sides of a rename or a copy, each path once.
func stagedPaths(ctx context.Context, dir string) ([]string, error) {
	out, err := gitOut(ctx, dir, "-c", "core.quotePath=false", "diff", "--cached", "--name-status", "-z", "--find-copies", "--find-renames")
	if err != nil {
		return nil, err
	}
	var paths []string
	seen := map[string]bool{}
	fs := strings.Split(out, "\x00")
	for i := 0; i < len(fs); i++ {
		status := fs[i]
		if status == "" {
			continue
		}
		n := 1
		if status[0] == 'R' || status[0] == 'C' {
			n = 2 // old path, new path
		}
		for ; n > 0 && i+1 < len(fs); n-- {
			i++
			if !seen[fs[i]] {
				seen[fs[i]] = true
				paths = append(paths, fs[i])
			}
		}
	}
	return paths, nil
}

// boardPaths are the paths the guard asks the node about for the staged
// files: the claims that overlap them are those that may match a file
// (board.Blocking then matches each claim against the files themselves).
// A name that is a claim path goes as it is; one that is not (longer than
// board.MaxPattern, or with a "*" or "?", which a claim path reads as a
// glob) goes as the nearest folder above it that is one, with "/**" (the
// repository's root: "**"). Before, the node refused a name of more than
// 512 bytes or 8 stars as a bad request, and the guard then every commit
// that staged one; a file named "src/?.go" was asked about as a glob, and
// refused over a claim on src/a.go.
func boardPaths(files []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range files {
		if len(f) > board.MaxPattern || strings.ContainsAny(f, "*?") {
			d := f
			for {
				i := strings.LastIndexByte(d, '/')
				if i < 0 {
					f = "**"
					break
				}
				if d = d[:i]; len(d)+len("/**") <= board.MaxPattern && !strings.ContainsAny(d, "*?") {
					f = d + "/**"
					break
				}
			}
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// gitGuard installs or uninstalls the guard's hooks of the repository
// around the working folder.
func gitGuard(g *globals, cmd *cobra.Command, f *installFlags, command string, uninstall, force bool) error {
	if f.user {
		return errors.New("the git guard goes into a repository; --user does not apply")
	}
	ctx := cmd.Context()
	root, hooks, project, err := guardPlace(ctx, f.dir)
	if err != nil {
		return err
	}
	env, err := f.env(g, true)
	if err != nil {
		return err
	}
	env.ProjectDir = project
	if !uninstall && !force {
		if err := untrackedHooks(ctx, root, hooks); err != nil {
			return err
		}
	}
	if command == "" {
		if command, err = defaultCommand(install.User); err != nil {
			return err
		}
	}
	if !f.dryRun {
		// Installs and uninstalls one at a time, as for the clients' files
		// (runPlan): two at once would each plan from no record.
		unlock, err := install.Lock(env.ParleyHome)
		if err != nil {
			return err
		}
		defer unlock()
		// An earlier Parley recorded a guard installed from a worktree
		// under the worktree's folder.
		if _, err := install.AdoptGitGuardRecord(env, root); err != nil {
			return err
		}
	}
	var plan *install.Plan
	for attempt := 0; ; attempt++ {
		if uninstall {
			plan, err = install.UninstallGitGuard(env, hooks)
		} else {
			plan, err = install.InstallGitGuard(env, hooks, command, homeArgs(env.ParleyHome))
		}
		if err != nil {
			return err
		}
		if f.dryRun {
			break
		}
		err = plan.Apply()
		if errors.Is(err, install.ErrRaced) && attempt < 2 {
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	if !f.dryRun {
		action := audit.Install
		if uninstall {
			action = audit.Uninstall
		}
		auditInstall(cmd, env.ParleyHome, action, plan)
	}
	return printPlan(g, cmd.OutOrStdout(), plan, f.dryRun, env, install.GitGuard, install.Project)
}

// guardPlace finds, for the git repository around dir (the working folder
// when ""), its work tree's top folder, the hooks folder every working
// copy of it uses (its worktrees share it; core.hooksPath respected), and
// the folder the git guard's record is kept under: the main working
// copy's, whichever of its worktrees runs install, uninstall or doctor.
func guardPlace(ctx context.Context, dir string) (root, hooks, project string, err error) {
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return "", "", "", err
		}
	}
	root, err = gitOut(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", "", "", fmt.Errorf("the git guard needs a git repository: %v", err)
	}
	run := func(dir string, args ...string) (string, error) { return gitOut(ctx, dir, args...) }
	hooks, err = gitAbsPath(run, dir, root, "--git-path", "hooks")
	if err != nil {
		return "", "", "", err
	}
	project = root
	if common, err := gitAbsPath(run, dir, root, "--git-common-dir"); err == nil && filepath.Base(common) == ".git" {
		project = filepath.Dir(common)
	}
	return root, hooks, project, nil
}

// gitAbsPath asks git rev-parse in dir for a path (args: --git-path hooks,
// --git-common-dir) as one absolute path, with --path-format=absolute. A
// git before 2.31 does not know that flag and prints it back as a line of
// its own: then the path is asked again without it, in the work tree's
// top folder root, and a relative answer is taken from there (git gives
// core.hooksPath as set, which hooks take from the top folder).
func gitAbsPath(run func(dir string, args ...string) (string, error), dir, root string, args ...string) (string, error) {
	out, err := run(dir, append([]string{"rev-parse", "--path-format=absolute"}, args...)...)
	if err == nil {
		if p, ok := oneAbsPath(out); ok {
			return p, nil
		}
	}
	out, err = run(root, append([]string{"rev-parse"}, args...)...)
	if err != nil {
		return "", err
	}
	if strings.Contains(out, "\n") || out == "" {
		return "", fmt.Errorf("git rev-parse %s: unexpected answer %q", strings.Join(args, " "), out)
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	return filepath.Clean(out), nil
}

// oneAbsPath returns out when it is one line holding an absolute path.
func oneAbsPath(out string) (string, bool) {
	if out == "" || strings.ContainsAny(out, "\n\r") || !filepath.IsAbs(out) {
		return "", false
	}
	return filepath.Clean(out), true
}

// untrackedHooks refuses hooks that git tracks: the guard's lines name this
// machine's parley program and home, and a hook file in the repository (a
// link to scripts/pre-commit.sh, core.hooksPath set to .husky) would be
// committed with them for everyone. Both the hook file and, for a link,
// the file it leads to are looked at; a link that leads out of the
// repository (its work tree root and its git folders) is refused too: the
// file it names is chosen by whoever wrote the link.
func untrackedHooks(ctx context.Context, root, hooks string) error {
	tracked := func(dir string, paths ...string) bool {
		// Inside .git, ls-files answers for the whole work tree.
		if in, err := gitOut(ctx, dir, "rev-parse", "--is-inside-work-tree"); err != nil || in != "true" {
			return false
		}
		out, err := gitOut(ctx, dir, append([]string{"ls-files", "-z", "--error-unmatch", "--"}, paths...)...)
		return err == nil && out != ""
	}
	// inRepo reports whether path is in the work tree or the git folders.
	within := []string{root}
	run := func(dir string, args ...string) (string, error) { return gitOut(ctx, dir, args...) }
	for _, a := range []string{"--absolute-git-dir", "--git-common-dir"} {
		if d, err := gitAbsPath(run, root, root, a); err == nil {
			within = append(within, d)
		}
	}
	inRepo := func(path string) bool {
		for _, d := range within {
			if real, err := filepath.EvalSymlinks(d); err == nil {
				d = real
			}
			if rel, err := filepath.Rel(d, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return true
			}
		}
		return false
	}
	// trackedAt reports whether git tracks the file at path itself (a
	// link, not what it leads to), asked from the work tree's top.
	trackedAt := func(path string) bool {
		dir := filepath.Dir(path)
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		top := root
		if real, err := filepath.EvalSymlinks(root); err == nil {
			top = real
		}
		rel, err := filepath.Rel(top, filepath.Join(dir, filepath.Base(path)))
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return false
		}
		out, err := gitOut(ctx, top, "--literal-pathspecs", "ls-files", "-z", "--error-unmatch", "--", filepath.ToSlash(rel))
		return err == nil && out != ""
	}
	// The hooks folder as named in the work tree (git gives the absolute
	// path with links resolved): a folder there that is a link out of the
	// repository (a tracked .husky link) is refused like a hook link.
	if lex, err := gitOut(ctx, root, "rev-parse", "--git-path", "hooks"); err == nil && lex != "" && !strings.Contains(lex, "\n") {
		if !filepath.IsAbs(lex) {
			lex = filepath.Join(root, lex)
		}
		if rel, err := filepath.Rel(root, lex); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			real, err := filepath.EvalSymlinks(lex)
			if _, lerr := os.Lstat(lex); err != nil && lerr == nil {
				return fmt.Errorf("install: the hooks folder %s is a link to nothing: Parley does not create files through a link; remove the link or make the folder, and try again", lex)
			}
			if err == nil && !inRepo(real) {
				return fmt.Errorf("install: the hooks folder %s is a link to %s, outside the repository: Parley would write the guard's hooks there; add parley guard to the hooks yourself, or install with --force to write them anyway", lex, real)
			}
		}
	}
	// A hooks folder outside the repository (core.hooksPath naming a folder
	// of the user's, often in their own git config: ~/.githooks) is every
	// repository's that uses it: the guard written there would run in all
	// of them. One that is not a folder (/dev/null) the install refuses.
	if fi, err := os.Stat(hooks); err != nil || fi.IsDir() {
		real := hooks
		for d, rest := hooks, ""; ; d, rest = filepath.Dir(d), filepath.Join(filepath.Base(d), rest) {
			if r, err := filepath.EvalSymlinks(d); err == nil {
				real = filepath.Join(r, rest)
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
		if !inRepo(real) {
			return fmt.Errorf("install: git's hooks folder here is %s (core.hooksPath; `git config --show-origin core.hooksPath` says where it is set), outside the repository: every repository that uses it would run the guard, and its hooks are not this repository's; add parley guard to them yourself, or install with --force to write them anyway", hooks)
		}
	}
	for _, name := range install.GuardHooks {
		p := filepath.Join(hooks, name)
		if fi, err := os.Lstat(p); err == nil {
			if trackedAt(p) {
				return fmt.Errorf("install: %s is a file git tracks: the guard's lines name this machine's parley program and home, and would be committed with it; call parley guard from it yourself, or install with --force to edit it anyway", p)
			}
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				continue // a dangling link: the install refuses it
			}
			if fi.Mode()&os.ModeSymlink != 0 && !inRepo(real) {
				return fmt.Errorf("install: %s is a symbolic link to %s, outside the repository: Parley would write the guard's lines into that file; call parley guard from it yourself, or install with --force to edit it anyway", p, real)
			}
			if tracked(filepath.Dir(real), filepath.Base(real)) {
				return fmt.Errorf("install: %s is the file %s, which git tracks: the guard's lines name this machine's parley program and home, and would be committed with it; call parley guard from it yourself, or install with --force to edit it anyway", p, real)
			}
			continue
		}
		real, err := filepath.EvalSymlinks(hooks)
		if err != nil {
			continue // no hooks folder yet: it is made in .git
		}
		if tracked(real, ".") {
			return fmt.Errorf("install: the hooks folder %s holds files git tracks: a new %s there would be committed with this machine's parley program and home; add parley guard to the repository's hooks yourself, or install with --force to create it anyway", hooks, name)
		}
	}
	return nil
}
