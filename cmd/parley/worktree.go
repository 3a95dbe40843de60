package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

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
				rel := worktreeDir + "/" + name + "/**"
				k, paths, err := project(ctx, "", []string{filepath.Join(root, rel)})
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
					_, rerr := c.Release(ctx, as, localapi.ReleaseRequest{Project: k, Paths: paths})
					return res, errors.Join(err, rerr)
				}
				return res, nil
			}, func(w io.Writer, v localapi.ClaimResult) {
				fmt.Fprintf(w, "worktree .worktrees/%s on branch %s; claimed for %s\n", name, branch, as)
			})
		},
	}
	cmd.Flags().StringVar(&as, "as", human, "the agent the worktree is for")
	cmd.Flags().StringVar(&note, "note", "", "what the agent does there (default: names the worktree and branch)")
	cmd.Flags().StringVar(&branch, "branch", "", "the branch to check out (default NAME; made from HEAD if it does not exist)")
	cmd.Flags().DurationVar(&ttl, "ttl", 8*time.Hour, "how long the claim on the worktree lasts (at most 8h)")
	return cmd
}

func worktreeRemoveCmd(g *globals) *cobra.Command {
	var as string
	var force bool
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove the worktree .worktrees/NAME (its branch stays) and release its claim (as the agent of this node that holds it, unless --as)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !worktreeName.MatchString(name) {
				return fmt.Errorf("worktree name %q: 1 to 64 of a-z 0-9 . _ -", name)
			}
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.ReleaseResult, error) {
				root, err := worktreeRoot(ctx)
				if err != nil {
					return localapi.ReleaseResult{}, err
				}
				path := filepath.Join(root, worktreeDir, name)
				gitArgs := []string{"worktree", "remove", path}
				if force {
					gitArgs = []string{"worktree", "remove", "--force", path}
				}
				if _, err := gitOut(ctx, root, gitArgs...); err != nil {
					return localapi.ReleaseResult{}, err
				}
				k, paths, err := project(ctx, "", []string{filepath.Join(root, worktreeDir, name) + "/**"})
				if err != nil {
					return localapi.ReleaseResult{}, err
				}
				who := as
				if !cmd.Flags().Changed("as") {
					// The agent the worktree was made for holds its claim:
					// found on the board, it is released as that agent.
					if h := worktreeHolder(ctx, c, k, paths[0]); h != "" {
						who = h
					}
				}
				res, err := c.Release(ctx, who, localapi.ReleaseRequest{Project: k, Paths: paths})
				if localapi.IsCode(err, localapi.CodeNotHeld) {
					return localapi.ReleaseResult{Project: k}, nil // expired or released already
				}
				return res, err
			}, func(w io.Writer, v localapi.ReleaseResult) {
				fmt.Fprintf(w, "removed .worktrees/%s%s\n", name, strings.Repeat(" and released its claim", min(1, len(v.Released))))
			})
		},
	}
	cmd.Flags().StringVar(&as, "as", human, "the agent the worktree was for (default: the agent of this node that holds its claim)")
	cmd.Flags().BoolVar(&force, "force", false, "remove it even with changes not committed (they are lost)")
	return cmd
}

// worktreeHolder returns the agent of this node that holds the claim on
// path (a worktree's NAME/**) on project's board, or "".
func worktreeHolder(ctx context.Context, c *localapi.Client, project, path string) string {
	id, err := c.ID(ctx)
	if err != nil {
		return ""
	}
	v, err := c.Board(ctx, human, localapi.BoardRequest{Project: project, Paths: []string{path}})
	if err != nil {
		return ""
	}
	for _, cl := range v.Claims {
		if name, peer, ok := strings.Cut(cl.Holder, "@"); ok && cl.Path == path && peer == id.PeerID {
			return name
		}
	}
	return ""
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
	if len(b) > 0 && !strings.HasSuffix(string(b), "\n") {
		b = append(b, '\n')
	}
	b = append(b, "/"+worktreeDir+"/\n"...)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}
