package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/gitrepo"
	"github.com/parley-mesh/parley/internal/localapi"
)

// worktreeDir is the folder, in the repository's top folder, that holds
// the agents' worktrees (git's info/exclude keeps it out of status).
const worktreeDir = ".worktrees"

var worktreeName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

func worktreeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worktree",
		Short: "Give an agent a git worktree of its own, and put it on the board",
	}
	cmd.AddCommand(worktreeAddCmd(g), worktreeRemoveCmd(g))
	return cmd
}

// worktreeRoot is the top folder of the main working copy of the
// repository around the working folder (also from inside a worktree).
func worktreeRoot(ctx context.Context) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	common, err := gitOut(ctx, wd, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", fmt.Errorf("parley worktree needs a git repository: %v", err)
	}
	return gitOut(ctx, filepath.Dir(common), "rev-parse", "--show-toplevel")
}

func worktreeAddCmd(g *globals) *cobra.Command {
	var as, note, branch string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "add NAME",
		Short: "Make the worktree .worktrees/NAME on branch NAME (new from HEAD, or existing) and claim it",
		Long: `Makes a git worktree for one agent in .worktrees/NAME of the repository's top folder, on
the branch NAME (or --branch), and claims .worktrees/NAME/** on the project's board for the
agent (--as), so everyone sees whose it is and why. The claim lasts --ttl; renew it with
parley claim .worktrees/NAME --note TEXT. parley worktree remove NAME takes it away again.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !worktreeName.MatchString(name) {
				return fmt.Errorf("worktree name %q: 1 to 64 of a-z 0-9 . _ -", name)
			}
			if branch == "" {
				branch = name
			}
			if note == "" {
				note = fmt.Sprintf("my own worktree %s (branch %s)", name, branch)
			}
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.ClaimResult, error) {
				root, err := worktreeRoot(ctx)
				if err != nil {
					return localapi.ClaimResult{}, err
				}
				path := filepath.Join(root, worktreeDir, name)
				if _, err := os.Lstat(path); err == nil {
					// Before the board: the claim on it stays as it is.
					return localapi.ClaimResult{}, fmt.Errorf("%s already exists (parley worktree remove %s takes it away)", path, name)
				}
				// Paths from the main working copy's top folder, also
				// when run inside a worktree.
				k, paths, err := gitrepo.Project(ctx, root, "", []string{worktreeDir + "/" + name + "/**"})
				if err != nil {
					return localapi.ClaimResult{}, err
				}
				had, err := worktreeClaims(ctx, c, k, name)
				if err != nil {
					return localapi.ClaimResult{}, err
				}
				// Claim first: another agent's claim on it stops us before git runs.
				res, err := c.Claim(ctx, as, localapi.ClaimRequest{Project: k, Paths: paths, Note: note, TTLSeconds: ttl.Seconds()})
				if err != nil {
					return res, err
				}
				if err := excludeWorktrees(ctx, root); err != nil {
					return res, err
				}
				gitArgs := []string{"worktree", "add", path, branch}
				if _, err := gitOut(ctx, root, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err != nil {
					gitArgs = []string{"worktree", "add", "-b", branch, path}
				}
				if _, err := gitOut(ctx, root, gitArgs...); err != nil {
					// A claim this call renewed stays; one it made goes.
					if slices.ContainsFunc(had, func(cl localapi.Claim) bool { return cl.Path == paths[0] }) {
						return res, err
					}
					_, rerr := c.Release(ctx, as, localapi.ReleaseRequest{Project: k, Paths: paths})
					return res, errors.Join(err, rerr)
				}
				return res, nil
			}, func(w io.Writer, v localapi.ClaimResult) {
				fmt.Fprintf(w, "worktree .worktrees/%s on branch %s; claimed for %s\n", name, branch, as)
			})
		},
	}
	cmd.Flags().StringVar(&as, "as", defaultAs(), "the agent the worktree is for; $PARLEY_AGENT sets its default")
	cmd.Flags().StringVar(&note, "note", "", "what the agent does there (default: names the worktree and branch)")
	cmd.Flags().StringVar(&branch, "branch", "", "the branch to check out (default NAME; made from HEAD if it does not exist)")
	durationFlag(cmd.Flags(), &ttl, "ttl", 8*time.Hour, "how long the claim on the worktree lasts (at most 8h)")
	return cmd
}

func worktreeRemoveCmd(g *globals) *cobra.Command {
	var as string
	var force bool
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove the worktree .worktrees/NAME (its branch stays) and release its claim",
		Long: `Removes the worktree .worktrees/NAME (its branch stays) and releases the claims on it,
each as the agent of this node that holds it. A worktree another agent has claimed (with --as,
or $PARLEY_AGENT: any agent but that one; without: an agent of another node) is refused with
its holder, note and expiry, and nothing is removed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !worktreeName.MatchString(name) {
				return fmt.Errorf("worktree name %q: 1 to 64 of a-z 0-9 . _ -", name)
			}
			// Who removes it: --as, else $PARLEY_AGENT, else anyone of
			// this node (a person counts this node's agents as its own,
			// as the guard does).
			if !cmd.Flags().Changed("as") {
				as = os.Getenv("PARLEY_AGENT")
			}
			as = givenAgent(as) // compared with the claims' holders, as the node names them
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.ReleaseResult, error) {
				root, err := worktreeRoot(ctx)
				if err != nil {
					return localapi.ReleaseResult{}, err
				}
				k, _, err := gitrepo.Project(ctx, root, "", nil)
				if err != nil {
					return localapi.ReleaseResult{}, err
				}
				id, err := c.ID(ctx)
				if err != nil {
					return localapi.ReleaseResult{}, err
				}
				// The claims on the worktree, checked before git runs.
				held, err := worktreeClaims(ctx, c, k, name)
				if err != nil {
					return localapi.ReleaseResult{}, err
				}
				mine := map[string][]string{} // holder name: paths as stored
				for _, cl := range held {
					who, peer, _ := strings.Cut(cl.Holder, "@")
					if peer != id.PeerID || as != "" && who != as {
						return localapi.ReleaseResult{}, fmt.Errorf("%s/%s is claimed by %s until %s: %q; it is not removed (talk to them: parley board shows who)",
							worktreeDir, name, cl.Holder, cl.Expires.UTC().Format(time.RFC3339), cl.Note)
					}
					mine[who] = append(mine[who], cl.Path)
				}
				path := filepath.Join(root, worktreeDir, name)
				gitArgs := []string{"worktree", "remove", path}
				if force {
					gitArgs = []string{"worktree", "remove", "--force", path}
				}
				if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
					if len(held) == 0 {
						return localapi.ReleaseResult{}, fmt.Errorf("there is no worktree %s/%s in %s, and no claim on it (`git worktree list` lists the worktrees, `parley board` the claims)",
							worktreeDir, name, root)
					}
					// Deleted by hand: git forgets it, and its claims go.
					if _, err := gitOut(ctx, root, "worktree", "prune"); err != nil {
						return localapi.ReleaseResult{}, err
					}
				} else if _, err := gitOut(ctx, root, gitArgs...); err != nil {
					return localapi.ReleaseResult{}, err
				}
				res := localapi.ReleaseResult{Project: k, Released: []string{}}
				var errs []error
				for _, who := range slices.Sorted(maps.Keys(mine)) {
					r, err := c.Release(ctx, who, localapi.ReleaseRequest{Project: k, Paths: mine[who]})
					if localapi.IsCode(err, localapi.CodeNotHeld) {
						continue // expired or released meanwhile
					}
					if err != nil {
						errs = append(errs, err)
						continue
					}
					res.Released = append(res.Released, r.Released...)
				}
				if len(errs) > 0 {
					return res, partial{errors.Join(errs...)}
				}
				return res, nil
			}, func(w io.Writer, v localapi.ReleaseResult) {
				fmt.Fprintf(w, "removed .worktrees/%s%s\n", name, strings.Repeat(" and released its claim", min(1, len(v.Released))))
			})
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "the agent removing it: another agent's claim on it refuses (default $PARLEY_AGENT, else any agent of this node)")
	cmd.Flags().BoolVar(&force, "force", false, "remove it even with changes not committed (they are lost)")
	return cmd
}

// worktreeClaims returns the live claims on the worktree NAME and inside
// it (.worktrees/NAME/...) on project's board, paths as the board holds
// them.
func worktreeClaims(ctx context.Context, c *localapi.Client, project, name string) ([]localapi.Claim, error) {
	prefix := worktreeDir + "/" + name + "/"
	v, err := c.Board(ctx, human, localapi.BoardRequest{Project: project, Paths: []string{prefix + "**"}})
	if err != nil {
		return nil, err
	}
	var out []localapi.Claim
	for _, cl := range v.Claims {
		if strings.HasPrefix(cl.Path, prefix) {
			out = append(out, cl)
		}
	}
	return out, nil
}

// excludeWorktrees adds .worktrees/ to the repository's info/exclude once.
func excludeWorktrees(ctx context.Context, root string) error {
	p, err := gitOut(ctx, root, "rev-parse", "--path-format=absolute", "--git-path", "info/exclude")
	if err != nil {
		return err
	}
	b, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == "/"+worktreeDir+"/" {
			return nil
		}
	}
	line := "/" + worktreeDir + "/\n"
	if len(b) > 0 && !strings.HasSuffix(string(b), "\n") {
		line = "\n" + line
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	// Appended, never rewritten: the file is the user's, and a process
	// killed mid-write can leave at most a part of Parley's own line.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
