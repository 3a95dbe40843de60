package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/config"
	"github.com/parley-mesh/parley/internal/install"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/termtext"
	"github.com/parley-mesh/parley/node"
)

func doctorCmd(g *globals) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check Parley's installs in agent clients and the node; say what is wrong",
		Long: `Check each client Parley is installed in (its config files are there and valid,
Parley's entries are intact and run a parley program that exists, the client's
extra steps are done), the git guard of the project's repository when it is
installed (its hooks are there, hold the guard, and git can run them), and the
node (its home, key and socket, and whether it runs). It checks the home it is
given (--home, else PARLEY_HOME, else ~/.parley): a client whose entries run
parley with another home (parley --home X install) is named with the doctor
that checks it, parley --home X doctor. One line per finding; exits 1 when
something is broken.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := installFlags{dir: dir}
			env, err := f.env(g, false)
			if err != nil {
				return err
			}
			var findings []install.Finding
			somewhere := false
			for _, c := range install.Clients {
				for _, s := range []install.Scope{install.User, install.Project} {
					installed, fs := install.Check(env, c, s, hookCommands[c])
					if installed {
						somewhere = true
						findings = append(findings, fs...)
					}
				}
			}
			if !somewhere {
				findings = append(findings, install.Finding{Level: install.Note,
					Msg: "Parley is not installed in any client here: parley install claude|codex|gemini|opencode"})
			}
			// The git guard of the repository around the project folder,
			// when it is installed there. git gets the time the node check
			// gets: one that hangs (a stale network mount) does not hold
			// doctor.
			limit := min(g.timeout, 5*time.Second)
			gctx, gcancel := context.WithTimeout(cmd.Context(), limit)
			_, hooks, project, err := guardPlace(gctx, env.ProjectDir)
			gcancel()
			switch {
			case err == nil:
				genv := env
				genv.ProjectDir = project
				if installed, fs := install.CheckGitGuard(genv, hooks, nodeHome); installed {
					findings = append(findings, fs...)
				}
			case isRepo(env.ProjectDir):
				// A repository git would not look at (safe.directory, a
				// git that hangs): its guard, if any, is not checked.
				why := err.Error()
				if errors.Is(gctx.Err(), context.DeadlineExceeded) {
					why = fmt.Sprintf("git did not answer within %s", limit)
				}
				findings = append(findings, install.Finding{Client: install.GitGuard, Scope: install.Project, Path: env.ProjectDir, Level: install.Note,
					Msg: "the git guard of " + env.ProjectDir + " is not checked: " + why})
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), limit)
			defer cancel()
			findings = append(findings, checkNode(ctx, env.ParleyHome)...)
			failed := false
			for _, f := range findings {
				if f.Level == install.Fail {
					failed = true
				}
			}
			if g.json {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(struct {
					OK       bool              `json:"ok"`
					Findings []install.Finding `json:"findings"`
				}{!failed, findings}); err != nil {
					return err
				}
			} else {
				printFindings(cmd.OutOrStdout(), findings)
			}
			if failed {
				return exitError{code: 1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the project folder to check (default: the git repository's top folder, else the working folder)")
	return cmd
}

func printFindings(w io.Writer, findings []install.Finding) {
	for _, f := range findings {
		tag := map[install.Level]string{install.OK: "ok  ", install.Note: "note", install.Warn: "warn", install.Fail: "FAIL"}[f.Level]
		fmt.Fprintf(w, "%s %s\n", tag, f)
	}
}

// isRepo reports whether dir is a git working copy's top folder (it holds
// .git), without asking git.
func isRepo(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, ".git"))
	return err == nil
}

// nodeHome reports whether dir is a node's home: one a node has run with,
// which holds its key.
func nodeHome(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, node.KeyFileName))
	return err == nil
}

// checkNode checks the node's home (permissions, key) and whether a node
// answers on its socket.
func checkNode(ctx context.Context, home string) []install.Finding {
	var out []install.Finding
	add := func(level install.Level, format string, a ...any) {
		out = append(out, install.Finding{Level: level, Path: home, Msg: "node: " + fmt.Sprintf(format, a...)})
	}
	fi, err := os.Stat(home)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		add(install.Note, "no home at %s yet (`%s`, or the first parley mcp, creates it)", home, node.UpCommand(home, false))
		return out
	case err != nil:
		add(install.Fail, "cannot read the home %s: %v", home, err)
		return out
	case !fi.IsDir():
		add(install.Fail, "the home %s is not a folder", home)
		return out
	case fi.Mode().Perm()&0o022 != 0:
		add(install.Fail, "the home %s is writable by others (mode %04o): chmod 700 %s", home, fi.Mode().Perm(), home)
	case fi.Mode().Perm()&0o077 != 0:
		add(install.Warn, "the home %s is readable by others (mode %04o): chmod 700 %s", home, fi.Mode().Perm(), home)
	}
	key := filepath.Join(home, node.KeyFileName)
	if ki, err := os.Stat(key); err == nil && ki.Mode().Perm()&0o077 != 0 {
		add(install.Fail, "%s is readable by others (mode %04o), so the node refuses it: chmod 600 %s", key, ki.Mode().Perm(), key)
	}
	// The config is read at start only: a running node does not notice an
	// edit that the next start will refuse.
	cfgPath := filepath.Join(home, config.FileName)
	if raw, err := os.ReadFile(cfgPath); err == nil {
		f, err := config.Parse(raw)
		for _, w := range f.Warnings {
			add(install.Warn, "%s: %s", cfgPath, w)
		}
		if err != nil {
			// Each fault on a line of its own: all of them, so that one
			// run of doctor shows everything to fix.
			var errs config.Errors
			if !errors.As(err, &errs) {
				errs = config.Errors{err}
			}
			for _, e := range errs {
				add(install.Fail, "%s: %v: the next parley up refuses it; fix that line", cfgPath, e)
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		add(install.Fail, "cannot read %s: %v", cfgPath, err)
	}
	sock := node.SocketPath(home)
	c := localapi.NewClient(sock)
	defer c.Close()
	st, err := c.Status(ctx)
	switch {
	case err == nil:
		add(install.OK, "running for %s as %s (%s), %d %s connected", uptime(st.UptimeSec), st.PeerID, st.Handle, st.Peers, plural(st.Peers, "peer", "peers"))
		if st.StoreProblem != "" {
			// Every post fails meanwhile: not a node that is fine.
			add(install.Fail, "the node refuses writes (posts, claims, contacts), and still serves reads: %s", termtext.Line(st.StoreProblem))
		}
		if si, err := os.Stat(sock); err == nil && si.Mode().Perm()&0o077 != 0 {
			add(install.Fail, "the socket %s is open to others (mode %04o)", sock, si.Mode().Perm())
		}
	case errors.Is(err, localapi.ErrNoNode):
		if _, serr := os.Lstat(sock); serr == nil {
			add(install.Warn, "no node answers on %s (a node that stopped without cleaning up?); `%s` starts one", sock, node.UpCommand(home, false))
		} else {
			add(install.Warn, "not running (parley mcp starts one when a client needs it; or run `%s`)", node.UpCommand(home, false))
		}
		// A node started on a disk below the floor serves reads only.
		if free, floor, below := node.DiskBelowFloor(home); below {
			add(install.Warn, "the disk of %s has %d MiB free: a node started there refuses writes below %d MiB (--min-free-disk): free some space first",
				home, free>>20, floor>>20)
		}
	default:
		add(install.Fail, "the node on %s does not answer properly: %v", sock, err)
	}
	return out
}
