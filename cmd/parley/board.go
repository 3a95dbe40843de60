package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/gitrepo"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/termtext"
)

// project resolves --project and the paths against the working folder.
func project(ctx context.Context, key string, paths []string) (string, []string, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return "", nil, err
	}
	return gitrepo.Project(ctx, cwd, key, paths)
}

func untilText(t time.Time) string {
	d := time.Until(t).Round(time.Second)
	return fmt.Sprintf("%s (in %s)", t.Local().Format("15:04:05"), d)
}

func claimCmd(g *globals) *cobra.Command {
	var as, key, note string
	var ttl, wait time.Duration
	cmd := &cobra.Command{
		Use:   "claim PATH...",
		Short: "Put files on the project's board: you work on them, and say why",
		Long: `Claims are advisory: other agents of the project see who works on what, why and until when,
and a claim that overlaps another agent's is refused with its holder, note and expiry. PATH is a
file, a folder (all of it, also one not made yet) or a glob (*, ** and ?; **/ is any number of
folders, none included: **/*.go takes main.go too), relative to the working folder; the project
is the git repository around it (its root commit), or --project KEY. A claim lasts --ttl
(renew it by claiming again) unless released.`,
		Example: `  parley claim rooms/room.go 'rooms/*_test.go' --note "splitting the room loop" --ttl 45m
  parley claim docs/ --note "rewriting the guide" --wait 60s`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ttl < 0 || wait < 0 {
				return errors.New("--ttl and --wait must not be negative")
			}
			if strings.TrimSpace(note) == "" {
				return errors.New("a claim needs a note: --note TEXT, why you work on it, in your own words")
			}
			if cmd.Flags().Changed("ttl") && (ttl < time.Second || ttl > 8*time.Hour) {
				return fmt.Errorf("--ttl %s: must be from 1s to 8h0m0s (leave it out for 30m)", ttl)
			}
			g2 := *g
			g2.timeout += wait
			var asked []string
			return call(&g2, cmd, func(ctx context.Context, c *localapi.Client) (localapi.ClaimResult, error) {
				k, paths, err := project(ctx, key, args)
				if err != nil {
					return localapi.ClaimResult{}, err
				}
				asked = paths
				req := localapi.ClaimRequest{Project: k, Paths: paths, Note: note, TTLSeconds: ttl.Seconds()}
				deadline := time.Now().Add(wait)
				told := false
				for first := true; ; first = false {
					// The node waits at most localapi.MaxWait per call.
					// The first call does not wait, so that a wait is
					// told before it starts, with what it waits for.
					left := time.Until(deadline)
					req.WaitSeconds = max(0, min(left, localapi.MaxWait).Seconds())
					if first {
						req.WaitSeconds = 0
					}
					res, err := c.Claim(ctx, as, req)
					if localapi.IsCode(err, localapi.CodeClaimed) && time.Until(deadline) > 0 {
						if !told && !g.json {
							msg := err.Error()
							if n, ok := namedText(g, ctx, c, err); ok {
								msg = n
							}
							fmt.Fprintf(cmd.ErrOrStderr(), "%s; waiting up to %s for it\n", termtext.Lines(cliText(msg)), wait)
							told = true
						}
						continue
					}
					switch {
					case localapi.IsCode(err, localapi.CodeClaimed) && wait > 0:
						err = fmt.Errorf("%w (after waiting %s)", err, wait)
					case localapi.IsCode(err, localapi.CodeClaimed):
						// The next step: wait for it, or ask its holder.
						err = fmt.Errorf("%w; nothing was claimed: claim again with --wait %s to take it once it is released or expires, or ask its holder to release it", err, waitFor(err, time.Now()))
					}
					return res, err
				}
			}, func(w io.Writer, v localapi.ClaimResult) {
				var also []string
				for _, h := range v.Held {
					if slices.Contains(asked, h.Path) {
						fmt.Fprintf(w, "claimed %s until %s\n", termtext.Line(h.Path), untilText(h.Expires))
					} else {
						also = append(also, fmt.Sprintf("%s until %s", termtext.Line(h.Path), untilText(h.Expires)))
					}
				}
				for _, p := range asked {
					if !slices.ContainsFunc(v.Held, func(h localapi.Claim) bool { return h.Path == p }) {
						fmt.Fprintf(w, "claim of %s posted, but the board does not hold it yet: it is dated ahead of this machine's clock (the clock stepped back?); it holds once the clock gets there\n", termtext.Line(p))
					}
				}
				if len(also) > 0 {
					fmt.Fprintf(w, "also held: %s\n", strings.Join(also, "; "))
				}
			})
		},
	}
	cmd.Flags().StringVar(&as, "as", defaultAs(), "agent that claims; $PARLEY_AGENT sets its default")
	cmd.Flags().StringVar(&key, "project", "", "project key (default: the git repository around the working folder)")
	cmd.Flags().StringVar(&note, "note", "", "why you work on it, in your own words (required)")
	durationFlag(cmd.Flags(), &ttl, "ttl", 30*time.Minute, "how long the claim lasts (at most 8h)")
	durationFlag(cmd.Flags(), &wait, "wait", 0, "wait this long for a conflicting claim to be released or to expire")
	return cmd
}

func releaseCmd(g *globals) *cobra.Command {
	var as, key string
	var all bool
	cmd := &cobra.Command{
		Use:   "release [PATH...]",
		Short: "Take your claims off the project's board (each PATH as you claimed it, or --all)",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !all {
				return errors.New("name the paths to release, or --all")
			}
			if len(args) > 0 && all {
				return errors.New("--all takes no paths")
			}
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.ReleaseResult, error) {
				k, paths, err := project(ctx, key, args)
				if err != nil {
					return localapi.ReleaseResult{}, err
				}
				res, err := c.Release(ctx, as, localapi.ReleaseRequest{Project: k, Paths: paths})
				if all && localapi.IsCode(err, localapi.CodeNotHeld) {
					// Nothing held is what --all asks for.
					return localapi.ReleaseResult{Project: k, Released: []string{}, Held: []localapi.Claim{}}, nil
				}
				return res, err
			}, func(w io.Writer, v localapi.ReleaseResult) {
				if len(v.Released) == 0 {
					fmt.Fprintf(w, "%s held nothing on the board\n", termtext.Line(as))
					return
				}
				fmt.Fprintf(w, "released %s\n", termtext.Line(strings.Join(v.Released, " ")))
			})
		},
	}
	cmd.Flags().StringVar(&as, "as", defaultAs(), "agent that releases; $PARLEY_AGENT sets its default")
	cmd.Flags().StringVar(&key, "project", "", "project key (default: the git repository around the working folder)")
	cmd.Flags().BoolVar(&all, "all", false, "release every claim of the agent")
	return cmd
}

func boardCmd(g *globals) *cobra.Command {
	var as, key string
	cmd := &cobra.Command{
		Use:   "board",
		Short: "Show the project's board: who works on which files, why, and until when",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var book localapi.NameBook // holders show as agent@handle
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.BoardView, error) {
				k, _, err := project(ctx, key, nil)
				if err != nil {
					return localapi.BoardView{}, err
				}
				book = nameBook(ctx, c)
				return c.Board(ctx, as, localapi.BoardRequest{Project: k})
			}, func(w io.Writer, v localapi.BoardView) {
				if v.Note != "" {
					defer fmt.Fprintf(w, "(%s)\n", termtext.Line(v.Note))
				}
				if len(v.Claims) == 0 {
					fmt.Fprintf(w, "the board of project %s is empty (claim with `parley claim PATH --note TEXT`)\n", v.Project)
					return
				}
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "PATH\tHOLDER\tUNTIL\tNOTE")
				for _, h := range v.Claims {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", termtext.Line(h.Path), termtext.Line(book.Agent(h.Holder)), untilText(h.Expires), oneLine(h.Note, 60))
				}
				tw.Flush()
			})
		},
	}
	cmd.PersistentFlags().StringVar(&as, "as", human, "agent that reads")
	cmd.PersistentFlags().StringVar(&key, "project", "", "project key (default: the git repository around the working folder)")
	cmd.AddCommand(boardHistoryCmd(g, &as, &key))
	return cmd
}

func boardHistoryCmd(g *globals, as, key *string) *cobra.Command {
	return &cobra.Command{
		Use:   "history [PATH]",
		Short: "Who held what, when and why: the board's claims and releases, oldest first",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var book localapi.NameBook // holders show as agent@handle
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.BoardHistory, error) {
				k, paths, err := project(ctx, *key, args)
				if err != nil {
					return localapi.BoardHistory{}, err
				}
				book = nameBook(ctx, c)
				req := localapi.BoardRequest{Project: k}
				if len(paths) == 1 {
					req.Path = paths[0]
				}
				return c.BoardHistory(ctx, *as, req)
			}, func(w io.Writer, v localapi.BoardHistory) {
				if len(v.Events) == 0 {
					if len(args) == 1 {
						fmt.Fprintf(w, "no claim or release in the history of project %s touches %s\n", v.Project, termtext.Line(args[0]))
					} else {
						fmt.Fprintf(w, "the board of project %s has no history yet (claim with `parley claim PATH --note TEXT`)\n", v.Project)
					}
					return
				}
				for _, e := range v.Events {
					paths := strings.Join(e.Paths, " ")
					if e.Kind == "release" && paths == "" {
						paths = "(all)"
					}
					line := fmt.Sprintf("%s  %s %s %s", e.Time.Local().Format("2006-01-02 15:04:05"), book.Agent(e.Holder), e.Kind, paths)
					if e.Note != "" {
						line += fmt.Sprintf(" — %q", e.Note)
					}
					if e.LostTo != nil {
						line += fmt.Sprintf(" (lost to %s's claim on %s)", book.Agent(e.LostTo.Holder), e.LostTo.Path)
					}
					if e.Bad != "" {
						line += " (ignored: " + e.Bad + ")"
					}
					fmt.Fprintln(w, termtext.Line(line))
				}
			})
		},
	}
}

// waitFor is the --wait that outlasts the claim a refusal (CodeClaimed)
// names, unless its holder renews it: the time left, in whole minutes and
// one more; 30m when the refusal does not say when it ends.
func waitFor(err error, now time.Time) string {
	var e *localapi.Error
	if !errors.As(err, &e) || e.Expires == 0 {
		return "30m"
	}
	mins := int(max(time.UnixMilli(e.Expires).Sub(now), 0)/time.Minute) + 1
	if mins < 60 {
		return fmt.Sprintf("%dm", mins)
	}
	return fmt.Sprintf("%dh%dm", mins/60, mins%60)
}
