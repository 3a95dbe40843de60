package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/install"
	"github.com/parley-mesh/parley/node"
)

// hookCommands lists, per client, the `parley hook CLIENT EVENT` commands
// this binary implements (events from install.HookEvents). `parley install`
// registers only these, so a client never runs a hook command that does not
// exist; the file that adds the hook commands adds their events here.
var hookCommands = map[install.Client][]string{}

// installFlags are the flags install and uninstall share.
type installFlags struct {
	project, user, dryRun bool
	dir                   string
}

func (f *installFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.user, "user", false, "your own config, for every session of the client (the default)")
	cmd.Flags().BoolVar(&f.project, "project", false, "the project folder's config, shared through the repository")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "print the changes as a unified diff and change nothing")
	cmd.Flags().StringVar(&f.dir, "dir", "", "the project folder for --project (default: the git repository's top folder, else the working folder)")
}

func (f *installFlags) scope() (install.Scope, error) {
	if f.project && f.user {
		return "", errors.New("choose one of --project and --user")
	}
	if f.project {
		return install.Project, nil
	}
	return install.User, nil
}

// checkDir refuses --dir where it means nothing (a client's own config) and
// a project folder that is not there: install creates the client's folders
// inside the project, never the project itself.
func (f *installFlags) checkDir(scope install.Scope) error {
	if f.dir == "" {
		return nil
	}
	if scope != install.Project {
		return errors.New("--dir names the project folder: use it with --project (your own config is in your home folder)")
	}
	st, err := os.Stat(f.dir)
	if err != nil {
		return fmt.Errorf("the project folder %s: %w", f.dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("the project folder %s is not a folder", f.dir)
	}
	return nil
}

// env returns where the clients' files are, and Parley's home: checked for
// install and uninstall (they keep backups there), unchecked for doctor,
// which reports on it.
func (f *installFlags) env(g *globals, checkHome bool) (install.Env, error) {
	home, err := g.homePath()
	if err == nil && checkHome {
		home, err = g.resolveHome()
	}
	if err != nil {
		return install.Env{}, err
	}
	dir := f.dir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return install.Env{}, err
		}
		dir = projectRoot(wd)
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return install.Env{}, err
	}
	return install.FromOS(dir, home)
}

// projectRoot returns the top folder of the git repository holding dir, or
// dir.
func projectRoot(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

func installCmd(g *globals) *cobra.Command {
	var f installFlags
	var command string
	var force bool
	cmd := &cobra.Command{
		Use:   "install claude|codex|gemini|opencode|git-guard",
		Short: "Register Parley with an agent client: its MCP server and, where the client has them, its hooks",
		Long: `Write Parley's MCP server entry (parley mcp) and, where the client has them, its
hooks into the client's config files, keeping everything else in them byte for
byte (comments and formatting included). A copy of each file it changes goes to
HOME/install/backup first (HOME: --home, else $PARLEY_HOME, else ~/.parley); a
second run changes nothing; --dry-run shows the diff. A file that is not valid
JSON/TOML is refused with its line.

  claude    ~/.claude.json and ~/.claude/settings.json (--project: .mcp.json, .claude/settings.json)
  codex     $CODEX_HOME/config.toml and hooks.json, ~/.codex without CODEX_HOME (--project: .codex/)
  gemini    ~/.gemini/settings.json (--project: .gemini/settings.json)
  opencode  ~/.config/opencode/opencode.json (--project: opencode.json)
  git-guard the git repository's pre-commit and pre-merge-commit hooks: parley
            guard refuses a commit (or a merge) touching files another agent
            has claimed on the board; a hook that is not a shell script, or
            one git tracks, is refused (--force edits a tracked one)

parley uninstall CLIENT takes out exactly what install added.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == string(install.GitGuard) {
				return gitGuard(g, cmd, &f, command, false, force)
			}
			if force {
				return errors.New("--force applies to git-guard only")
			}
			client, err := install.ParseClient(args[0])
			if err != nil {
				return err
			}
			scope, err := f.scope()
			if err != nil {
				return err
			}
			if err := f.checkDir(scope); err != nil {
				return err
			}
			env, err := f.env(g, true)
			if err != nil {
				return err
			}
			if command == "" {
				if command, err = defaultCommand(scope); err != nil {
					return err
				}
			}
			args, notes := commandArgs(scope, command, env)
			o := install.Options{Client: client, Scope: scope, Command: command, Args: args, Hooks: hookCommands[client]}
			plan, err := runPlan(env.ParleyHome, f.dryRun, func() (*install.Plan, error) { return install.Install(env, o) })
			if err != nil {
				return noProjectHere(err, "install", client)
			}
			plan.Notes = append(plan.Notes, notes...)
			if !f.dryRun {
				auditInstall(cmd, env.ParleyHome, audit.Install, plan)
			}
			if len(o.Hooks) == 0 && len(install.HookEvents[client]) > 0 {
				plan.Notes = append(plan.Notes, "No hooks were written: this parley has no `parley hook` commands yet (the MCP server works without them).")
			}
			return printPlan(g, cmd.OutOrStdout(), plan, f.dryRun, env, client, scope)
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&command, "command", "", "the parley program the client runs (default: this program's full path; with --project: parley, found on PATH)")
	cmd.Flags().BoolVar(&force, "force", false, "git-guard: edit or create a hook file that git tracks (it gets this machine's paths)")
	return cmd
}

func uninstallCmd(g *globals) *cobra.Command {
	var f installFlags
	cmd := &cobra.Command{
		Use:   "uninstall claude|codex|gemini|opencode|git-guard",
		Short: "Take Parley out of an agent client's config files",
		Long: `Take out exactly what parley install added. A file nothing else changed since
comes back byte for byte (a file Parley created is removed); otherwise only
Parley's entries go, and an entry Parley replaced comes back.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == string(install.GitGuard) {
				return gitGuard(g, cmd, &f, "", true, false)
			}
			client, err := install.ParseClient(args[0])
			if err != nil {
				return err
			}
			scope, err := f.scope()
			if err != nil {
				return err
			}
			if err := f.checkDir(scope); err != nil {
				return err
			}
			env, err := f.env(g, true)
			if err != nil {
				return err
			}
			plan, err := runPlan(env.ParleyHome, f.dryRun, func() (*install.Plan, error) { return install.Uninstall(env, client, scope) })
			if err != nil {
				return noProjectHere(err, "uninstall", client)
			}
			if !f.dryRun {
				auditInstall(cmd, env.ParleyHome, audit.Uninstall, plan)
			}
			return printPlan(g, cmd.OutOrStdout(), plan, f.dryRun, env, client, scope)
		},
	}
	f.add(cmd)
	return cmd
}

// noProjectHere adds to a refused --project in the home folder (whose
// project files are the user's own config) what to run instead.
func noProjectHere(err error, verb string, client install.Client) error {
	if !errors.Is(err, install.ErrHomeProject) {
		return err
	}
	// Built, not formatted: every `parley …` in a literal is checked to be
	// a command (TestNamedCommandsExist), and one of verb's and client's
	// is, for each of them.
	own := "`parley " + verb + " " + string(client) + "`"
	return fmt.Errorf("%w: %s (without --project) is for your own config; for a project, run it inside the project's folder, or name the folder with --project --dir DIR", err, own)
}

// runPlan makes a plan and, unless dryRun, applies it; install.Run plans
// again when the client rewrote a file meanwhile.
func runPlan(home string, dryRun bool, plan func() (*install.Plan, error)) (*install.Plan, error) {
	if dryRun {
		return plan()
	}
	unlock, err := install.Lock(home)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return install.Run(plan)
}

// auditInstall records an applied install or uninstall that changed files in
// the home's audit log. A failure is a warning: the files are written.
func auditInstall(cmd *cobra.Command, home, action string, plan *install.Plan) {
	if len(plan.Changes) == 0 {
		return
	}
	files := make([]string, len(plan.Changes))
	for i, c := range plan.Changes {
		files[i] = c.Path
	}
	err := node.AuditHome(home, audit.Record{Actor: "human", Action: action, Subject: string(plan.Client),
		Detail: map[string]string{"scope": string(plan.Scope), "files": strings.Join(files, " ")}})
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: not recorded in the audit log: %v\n", err)
	}
}

// defaultCommand is the parley program a client runs: this one, by its full
// path, for the user's own config; "parley" on PATH for a project's shared
// files.
func defaultCommand(scope install.Scope) (string, error) {
	if scope == install.Project {
		return "parley", nil
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", fmt.Errorf("cannot find this program's path (%v); pass --command", err)
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		// `go run` built this program in a folder that goes away.
		if p, err := exec.LookPath("parley"); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				return abs, nil
			}
		}
		return "", errors.New("this parley is a temporary build (go run): install it first (go install ./cmd/parley), or pass --command PATH")
	}
	// A package manager's parley is a link on PATH to a file in a
	// versioned folder (Homebrew's Cellar, a nix store path) that the next
	// upgrade removes: when the parley on PATH is this very program, the
	// config names it there, and keeps working across upgrades.
	if p, err := exec.LookPath("parley"); err == nil {
		if abs, err := filepath.Abs(p); err == nil && abs != exe {
			a, errA := os.Stat(abs)
			b, errB := os.Stat(exe)
			if errA == nil && errB == nil && os.SameFile(a, b) {
				return abs, nil
			}
		}
	}
	return exe, nil
}

// homeArgs are the arguments that point the client's parley at this home,
// when it is not the default one.
func homeArgs(home string) []string {
	if u, err := os.UserHomeDir(); err == nil && home == filepath.Join(u, ".parley") {
		return nil
	}
	return []string{"--home", home}
}

// commandArgs are the arguments the client's parley gets before its own
// (mcp, hook …), and notes on them. Your own config points at this home when
// it is not the default. A project's files are shared through the
// repository, so they name no home (a path of this machine's would be
// wrong on every other one): each teammate's parley finds its own, through
// PARLEY_HOME or ~/.parley. Nor can a project's files name this program by
// its path; they say parley, which must be on PATH.
func commandArgs(scope install.Scope, command string, env install.Env) ([]string, []string) {
	if scope != install.Project {
		return homeArgs(env.ParleyHome), nil
	}
	var notes []string
	if homeArgs(env.ParleyHome) != nil && os.Getenv("PARLEY_HOME") != env.ParleyHome {
		notes = append(notes, fmt.Sprintf("the project's files name no home (they are shared): the client's parley uses PARLEY_HOME, else ~/.parley; to use %s, start the client with PARLEY_HOME=%s", env.ParleyHome, env.ParleyHome))
	}
	if !filepath.IsAbs(command) && !strings.ContainsRune(command, filepath.Separator) {
		if _, err := lookPathIn(command, env.Path); err != nil {
			where := "put its folder on PATH (go install ./cmd/parley puts it in $(go env GOPATH)/bin)"
			if exe, err := os.Executable(); err == nil && filepath.Base(exe) == command && !strings.Contains(exe, "go-build") {
				where = fmt.Sprintf("put its folder on PATH: export PATH=\"$PATH:%s\" (in your shell's profile, so the client's shell has it too)", filepath.Dir(exe))
			}
			notes = append(notes, fmt.Sprintf("%s is not on your PATH, so the client will not find it: %s", command, where))
		}
	}
	return nil, notes
}

// lookPathIn finds an executable file named name in a PATH list.
func lookPathIn(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// printPlan says what a plan did (or, with dryRun, would do).
func printPlan(g *globals, w io.Writer, p *install.Plan, dryRun bool, env install.Env, client install.Client, scope install.Scope) error {
	if g.json {
		if p.Changes == nil {
			p.Changes = []install.Change{} // "changes": [], not null
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			*install.Plan
			DryRun bool `json:"dry_run,omitempty"`
		}{p, dryRun})
	}
	if dryRun {
		if !p.Changed() {
			fmt.Fprintf(w, "nothing to change for %s (%s)\n", client, scope)
		}
		fmt.Fprint(w, p.Diff())
	} else {
		for _, c := range p.Changes {
			switch {
			case c.Delete:
				fmt.Fprintf(w, "removed %s (Parley had created it)\n", c.Path)
			case c.Restore:
				fmt.Fprintf(w, "restored %s as it was before Parley\n", c.Path)
			case c.Create:
				fmt.Fprintf(w, "created %s\n", c.Path)
			default:
				fmt.Fprintf(w, "updated %s\n", c.Path)
			}
		}
		for _, u := range p.Unchanged {
			if p.Uninstall {
				fmt.Fprintf(w, "%s holds nothing of Parley's\n", u)
			} else {
				fmt.Fprintf(w, "%s already holds Parley's entries\n", u)
			}
		}
		if p.Uninstall && !p.Changed() && len(p.Unchanged) == 0 && len(p.Remaining) == 0 {
			fmt.Fprintf(w, "Parley is not installed for %s (%s)\n", client, scope)
		}
		if len(p.Backups) > 0 {
			// Uninstall keeps them too: the copies are the user's files, and
			// only the user deletes them (they may hold a client's tokens).
			// A file Parley created has no copy: there was nothing to keep.
			fmt.Fprintf(w, "copies of the files as they were are in %s (readable by you only; delete them when you no longer need them)\n", install.BackupDir(env, client, scope))
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintln(w, "note: "+n)
	}
	return nil
}
