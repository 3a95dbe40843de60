package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/audit"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/termtext"
	"github.com/parley-mesh/parley/node"
)

// The audit commands read HOME/audit.log directly: they work whether or not
// the node runs, and the node appends under a lock they do not need.
func auditCmd(g *globals) *cobra.Command {
	var since string
	var limit int
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "List the node's audit log: who approved, revoked, invited, removed, muted, installed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return fmt.Errorf("--limit %d: use 0 (all) or more", limit)
			}
			home, err := g.resolveHome()
			if err != nil {
				return err
			}
			t, err := parseSince(since, time.Now())
			if err != nil {
				return err
			}
			es, err := audit.List(home, t, limit)
			if err != nil {
				return err
			}
			if es == nil {
				es = []audit.Listed{}
			}
			var book localapi.NameBook
			rooms := map[string]string{} // room ID → name
			if !g.json {
				if c, ctx, cancel, err := g.client(cmd); err == nil {
					book = nameBook(ctx, c) // nil when no node runs: short peer IDs
					if rs, err := c.Rooms(ctx); err == nil {
						for _, r := range rs {
							rooms[r.RoomID] = r.Name
						}
					}
					cancel()
				}
			}
			return printOut(g, cmd.OutOrStdout(), es, func(w io.Writer, es []audit.Listed) { printAudit(w, es, book, rooms) })
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "only entries since a time (RFC 3339, 2006-01-02) or for a duration back (24h, 7d)")
	cmd.Flags().IntVar(&limit, "limit", 0, "only the last N entries (0: all)")
	cmd.AddCommand(auditVerifyCmd(g), auditExportCmd(g))
	return cmd
}

// peerIDs finds the peer IDs of Ed25519 keys (base58, "12D3KooW" and 44
// more) in an audit text.
var peerIDs = regexp.MustCompile(`12D3KooW[1-9A-HJ-NP-Za-km-z]{44}`)

// detailValue shows one detail value: quoted when it holds a space, "=",
// a quote or a backslash, or nothing, so a value others chose (a room's
// name, a contact's note) cannot show a key of its own. Controls are
// termtext's to escape.
func detailValue(v string) string {
	if v != "" && !strings.ContainsAny(v, " =\"\\") {
		return v
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

// printAudit lists entries for a person: nodes by the names the node knows
// (a short peer ID otherwise; --json keeps the full IDs), and rooms the node
// is in by their names beside their IDs.
func printAudit(w io.Writer, es []audit.Listed, book localapi.NameBook, rooms map[string]string) {
	readable := func(s string) string {
		if name, ok := rooms[s]; ok && name != "" {
			s = name + " (" + s + ")"
		}
		return termtext.Line(peerIDs.ReplaceAllStringFunc(s, book.Node))
	}
	if len(es) == 0 {
		fmt.Fprintln(w, "the audit log is empty")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "N\tTIME\tACTOR\tACTION\tSUBJECT\tDETAIL")
	for _, e := range es {
		var d []string
		for k, v := range e.Detail {
			d = append(d, k+"="+detailValue(v))
		}
		slices.Sort(d)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.N, e.Time, readable(e.Actor), e.Action, readable(e.Subject), readable(strings.Join(d, " ")))
	}
	tw.Flush()
}

func auditVerifyCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "verify",
		Short: "Check the audit log's chain and signatures; name the first bad entry",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := g.resolveHome()
			if err != nil {
				return err
			}
			self, err := node.HomePeer(home)
			if err != nil {
				return err
			}
			rep, err := audit.Verify(home, self)
			if err != nil {
				return err
			}
			if err := printOut(g, cmd.OutOrStdout(), rep, func(w io.Writer, r audit.Report) {
				if r.OK {
					fmt.Fprintf(w, "audit log OK: %d entries, signed by %s, chain intact\n", r.Entries, self)
					return
				}
				fmt.Fprintf(w, "audit log BAD at %s (the %d entries before it verify)\n", r.Problem, r.Entries)
			}); err != nil {
				return err
			}
			if !rep.OK {
				return exitError{code: 1}
			}
			return nil
		},
	}
}

func auditExportCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "export",
		Short: "Print the audit log as JSON lines (each entry with its signature and hash)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := g.resolveHome()
			if err != nil {
				return err
			}
			es, err := audit.List(home, time.Time{}, 0)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			for _, e := range es {
				if err := enc.Encode(e); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// parseSince reads --since: empty (all), a duration back from now ("36h",
// "7d"), a date or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if _, err := fmt.Sscanf(d, "%d", &n); err == nil && fmt.Sprint(n) == d && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: give a duration (24h, 7d), a date (2006-01-02) or an RFC 3339 time", s)
}
