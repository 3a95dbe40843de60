package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/names"
	"github.com/parley-mesh/parley/internal/termtext"
)

func contactCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "contact",
		Short: "Contacts: consent between users' nodes, sealed by both",
		Long: `Another user's node can reach your agents only as a contact: it asks with
` + "`parley contact request`" + `, you approve (or deny), and both nodes hold a certificate signed by
both. Either side may revoke it at once; it also expires by itself. A contact whose
certificate grants invites (SCOPES in ` + "`contact list`" + `) is invited into a room at once; the
invite of another contact, or of a member of a room you share, waits for their answer.
A contact approved through organisation trust (VIA org ORGKEY) has the scopes both
organisations' trusts name.`,
	}
	cmd.AddCommand(contactRequestCmd(g), contactApproveCmd(g), contactDenyCmd(g), contactRevokeCmd(g), contactListCmd(g))
	return cmd
}

func contactRequestCmd(g *globals) *cobra.Command {
	var note string
	cmd := &cobra.Command{
		Use:   "request PEER_ID|MULTIADDR",
		Short: "Ask another node to become a contact",
		Long: `Ask another node to become a contact. Give its peer ID (it is then found through
the DHT) or a multiaddr ending in /p2p/PEER_ID (or several of that node's, separated
by commas, as the ready line's addrs= gives them). It sees the request as pending-in
until its user approves or denies it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.ContactResult, error) {
				return c.ContactRequest(ctx, args[0], note)
			}, func(w io.Writer, v localapi.ContactResult) {
				fmt.Fprintf(w, "contact request %s to %s: %s\n", v.ID, v.PeerID, termtext.Line(v.Detail))
			})
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "a few words to the other user (at most 500 characters)")
	return cmd
}

func contactApproveCmd(g *globals) *cobra.Command {
	var expires string
	cmd := &cobra.Command{
		Use:   "approve ID|PEER_ID|NAME",
		Short: "Approve a pending contact request (its ID, the requester's peer ID, or its NAME as contact list shows it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.ContactResult, error) {
				return c.ContactApprove(ctx, args[0], expires)
			}, func(w io.Writer, v localapi.ContactResult) {
				until := ""
				if v.Expires != nil {
					until = " until " + v.Expires.Local().Format(time.RFC3339)
				}
				fmt.Fprintf(w, "%s (%s) is %s%s: %s\n", v.PeerID, contactName(v.ContactEntry), v.State, until, termtext.Line(v.Detail))
			})
		},
	}
	cmd.Flags().StringVar(&expires, "expires", "", "how long the contact lasts: days like 90d, or a duration like 36h (default 365d)")
	return cmd
}

func contactDenyCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "deny ID|PEER_ID|NAME",
		Short: "Deny a pending contact request (its ID, the requester's peer ID, or its NAME as contact list shows it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.ContactResult, error) {
				return c.ContactDeny(ctx, args[0])
			}, func(w io.Writer, v localapi.ContactResult) {
				fmt.Fprintf(w, "request %s from %s: %s\n", v.ID, v.PeerID, termtext.Line(v.Detail))
			})
		},
	}
}

func contactRevokeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke PEER_ID|NAME",
		Short: "Revoke a contact at once, by peer ID or NAME as contact list shows it (or cancel your pending request)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.ContactResult, error) {
				return c.ContactRevoke(ctx, args[0])
			}, func(w io.Writer, v localapi.ContactResult) {
				fmt.Fprintf(w, "%s: %s\n", v.PeerID, termtext.Line(v.Detail))
			})
		},
	}
}

func contactListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List contacts and pending requests",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) ([]localapi.ContactEntry, error) { return c.Contacts(ctx) },
				func(w io.Writer, v []localapi.ContactEntry) {
					if len(v) == 0 {
						fmt.Fprintln(w, "no contacts (ask someone with `parley contact request PEER_ID`)")
						return
					}
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ID\tPEER ID\tNAME\tSTATE\tEXPIRES\tSCOPES\tVIA\tNOTE")
					for _, e := range v {
						exp := "-"
						if e.Expires != nil {
							exp = e.Expires.Local().Format("2006-01-02 15:04")
						}
						note := strings.Join(strings.Fields(e.Note), " ")
						if utf8.RuneCountInString(note) > 40 {
							note = string([]rune(note)[:39]) + "…"
						}
						name, scopes, via := contactName(e), "-", "-"
						if len(e.Scopes) > 0 {
							scopes = strings.Join(e.Scopes, ",")
						}
						if e.Org != "" {
							via = "org " + e.Org
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.PeerID, name, e.State, exp, scopes, via, termtext.Line(note))
					}
					tw.Flush()
					// A request waiting for the user: the commands that
					// answer it, as parley inbox gives them.
					for _, e := range v {
						if e.State == "pending-in" {
							fmt.Fprintf(w, "%s (%s) waits for your answer: parley contact approve %s; deny: parley contact deny %s\n", e.ID, termtext.Line(contactName(e)), e.ID, e.ID)
						}
					}
				})
		},
	}
}

// contactName is how a contact or a requester reads: the name the node
// gives it everywhere (handle~SUFFIX when another node's handle reads the
// same, so a stranger asking under a contact's handle does not read as the
// contact; …SUFFIX while no handle is known), never the handle as the
// node told it, which may hold characters that show nothing ("bob\u3164"
// would read as "bob"); without a name, the short form of its peer ID.
func contactName(e localapi.ContactEntry) string {
	if e.Name == "" {
		if p, err := peer.Decode(e.PeerID); err == nil {
			return names.Short(p)
		}
		return "-"
	}
	return termtext.Line(e.Name)
}
