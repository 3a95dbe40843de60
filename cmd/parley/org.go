package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/termtext"
	"github.com/parley-mesh/parley/node"
)

func orgCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "org",
		Short: "Organisations: membership certificates and trust between organisations",
		Long: `An organisation is a key kept in a file of your choosing, apart from any node's key.
It signs membership certificates for its members' nodes, revocations, and its trust in
other organisations; the signed records go to your node, which passes them to the
members. When two organisations trust each other, a member of one asking a member of
the other to be a contact is approved without anyone approving it by hand, within the
scopes both trusts name. Removing a member or withdrawing a trust revokes those
contacts at once.

  parley org init Acme --key ~/acme.orgkey      make the key (prints ORGKEY)
  parley org add PEER_ID --handle ann --key …    certify a member's node (your own first)
  parley org remove PEER_ID --key …              revoke a member
  parley org trust ORGKEY --key … [--scopes ask,invite,presence]
  parley org untrust ORGKEY --key …
  parley org status
  parley org accept ORGKEY                       take a membership a contact pushed
  parley org decline ORGKEY

A membership certificate of your node that someone else's node pushes (an
organisation's admin certifying you) waits for you: see it in 'parley org status',
then accept or decline it. Until you accept, your node is in no organisation, and
that organisation's trusts approve no one for you.`,
	}
	cmd.AddCommand(orgInitCmd(g), orgAddCmd(g), orgRemoveCmd(g), orgTrustCmd(g), orgUntrustCmd(g), orgStatusCmd(g),
		orgAnswerCmd(g, "accept"), orgAnswerCmd(g, "decline"))
	return cmd
}

// orgAnswerCmd answers a membership a contact pushed.
func orgAnswerCmd(g *globals, verb string) *cobra.Command {
	short := "Take a membership certificate a contact pushed: your node joins that organisation"
	if verb == "decline" {
		short = "Drop a membership certificate a contact pushed"
	}
	return &cobra.Command{
		Use:   verb + " ORGKEY",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := orgKeyArg(args[0]); err != nil {
				return err
			}
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.OrgStatus, error) {
				if verb == "decline" {
					return c.OrgDecline(ctx, args[0])
				}
				return c.OrgAccept(ctx, args[0])
			}, func(w io.Writer, v localapi.OrgStatus) {
				if verb == "decline" {
					fmt.Fprintf(w, "declined the membership of %s\n", args[0])
					return
				}
				fmt.Fprintf(w, "this node is %s in organisation %s (ORGKEY %s) until %s\n", termtext.Line(v.Handle), termtext.Line(v.Name), v.Org, v.Expires.Format(time.DateOnly))
			})
		},
	}
}

// orgKeyMade is what org init prints.
type orgKeyMade struct {
	Name string `json:"name"`
	Org  string `json:"org"` // the ORGKEY
	Key  string `json:"key"` // the key file
}

func orgInitCmd(g *globals) *cobra.Command {
	var key string
	cmd := &cobra.Command{
		Use:   "init NAME --key FILE",
		Short: "Make an organisation key (a new file, mode 0600)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if key == "" {
				return fmt.Errorf("--key FILE is needed: where to keep the organisation's key (not in a node's home)")
			}
			k, err := node.CreateOrgKey(key, args[0])
			if err != nil {
				return err
			}
			out := orgKeyMade{Name: k.Name, Org: k.ID.String(), Key: key}
			return printOut(g, cmd.OutOrStdout(), out, func(w io.Writer, v orgKeyMade) {
				fmt.Fprintf(w, "organisation %s: ORGKEY %s (key in %s; keep it safe)\n", termtext.Line(v.Name), v.Org, v.Key)
			})
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "the organisation key file to create")
	return cmd
}

// orgSign loads the key and signs a record, then hands it to the node.
func orgPublish(g *globals, cmd *cobra.Command, keyFile string, sign func(k *node.OrgKey) ([]byte, error), done string) error {
	if keyFile == "" {
		return fmt.Errorf("--key FILE is needed: the organisation's key file")
	}
	k, err := node.LoadOrgKey(keyFile)
	if err != nil {
		return err
	}
	rec, err := sign(k)
	if err != nil {
		return err
	}
	return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.OrgRecordResult, error) {
		res, err := c.OrgPublish(ctx, rec)
		var e *localapi.Error
		if !errors.As(err, &e) || e.Code != localapi.CodeStale || e.Seq == 0 {
			return res, err
		}
		// The record the node holds was signed with a Seq above this
		// one: by this key on a machine whose clock was ahead (the Seq
		// is the time in microseconds), or a moment ago. What the user
		// asks now is the newest decision: sign it again after that one.
		if rec, err = sign(k.After(e.Seq)); err != nil {
			return res, err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "note: the organisation record the node holds has seq %d, ahead of this machine's clock "+
			"(signed on a clock ahead?); signed again after it\n", e.Seq)
		return c.OrgPublish(ctx, rec)
	}, func(w io.Writer, v localapi.OrgRecordResult) {
		fmt.Fprintf(w, "%s %s (organisation %s); passed to %d peers\n", done, v.Subject, termtext.Line(k.Name), v.Delivered)
	})
}

func orgPeerArg(s string) (peer.ID, error) {
	p, err := peer.Decode(s)
	if err != nil {
		// libp2p's reason ("invalid cid: invalid cid: …") says no more.
		return "", fmt.Errorf("%.80q is not a peer ID (one looks like 12D3KooW…, as `parley id` prints it)", s)
	}
	return p, nil
}

// orgKeyArg parses an organisation key (ORGKEY). It is written as a peer
// ID is, but the error names what was wanted.
func orgKeyArg(s string) (peer.ID, error) {
	p, err := peer.Decode(s)
	if err != nil {
		return "", fmt.Errorf("%.80q is not an ORGKEY (`parley org init` prints one; `parley org status` shows the ones offered to this node)", s)
	}
	return p, nil
}

func orgAddCmd(g *globals) *cobra.Command {
	var key, handle, valid string
	cmd := &cobra.Command{
		Use:   "add PEER_ID --handle NAME --key FILE",
		Short: "Certify a node as a member (your own node first; others must be your contacts)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := orgPeerArg(args[0])
			if err != nil {
				return err
			}
			d, err := parseValid(valid)
			if err != nil {
				return err
			}
			return orgPublish(g, cmd, key, func(k *node.OrgKey) ([]byte, error) { return k.Member(p, handle, d) }, "member")
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "the organisation key file")
	cmd.Flags().StringVar(&handle, "handle", "", "the member's name in the organisation")
	cmd.Flags().StringVar(&valid, "valid", "365d", "how long the membership lasts (e.g. 90d, 36h)")
	return cmd
}

func orgRemoveCmd(g *globals) *cobra.Command {
	var key string
	cmd := &cobra.Command{
		Use:   "remove PEER_ID --key FILE",
		Short: "Revoke a member: its contacts made through the organisation are revoked",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := orgPeerArg(args[0])
			if err != nil {
				return err
			}
			return orgPublish(g, cmd, key, func(k *node.OrgKey) ([]byte, error) { return k.Revoke(p) }, "revoked")
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "the organisation key file")
	return cmd
}

func orgTrustCmd(g *globals) *cobra.Command {
	var key, scopes, valid string
	cmd := &cobra.Command{
		Use:   "trust ORGKEY --key FILE",
		Short: "Trust another organisation (it must trust yours too)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := orgKeyArg(args[0])
			if err != nil {
				return err
			}
			d, err := parseValid(valid)
			if err != nil {
				return err
			}
			var sc []string
			for _, s := range strings.Split(scopes, ",") {
				if s = strings.TrimSpace(s); s != "" {
					sc = append(sc, s)
				}
			}
			return orgPublish(g, cmd, key, func(k *node.OrgKey) ([]byte, error) { return k.Trust(o, sc, d) }, "trusted")
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "the organisation key file")
	cmd.Flags().StringVar(&scopes, "scopes", "ask,invite,presence", "what contacts made through the trust may do")
	cmd.Flags().StringVar(&valid, "valid", "365d", "how long the trust lasts")
	return cmd
}

func orgUntrustCmd(g *globals) *cobra.Command {
	var key string
	cmd := &cobra.Command{
		Use:   "untrust ORGKEY --key FILE",
		Short: "Withdraw the trust: contacts made through it are revoked",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := orgKeyArg(args[0])
			if err != nil {
				return err
			}
			return orgPublish(g, cmd, key, func(k *node.OrgKey) ([]byte, error) { return k.Untrust(o) }, "untrusted")
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "the organisation key file")
	return cmd
}

func orgStatusCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show this node's organisation, members and trusts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.OrgStatus, error) { return c.OrgStatus(ctx) },
				func(w io.Writer, v localapi.OrgStatus) {
					for _, o := range v.Offers {
						fmt.Fprintf(w, "%s offers membership of %s (ORGKEY %s) as %s until %s", o.From, termtext.Line(o.Name), o.Org,
							termtext.Line(o.Handle), o.Expires.Format(time.DateOnly))
						if len(o.Trusts) > 0 {
							fmt.Fprintf(w, ", trusting %s", strings.Join(o.Trusts, ", "))
						}
						fmt.Fprintf(w, ": parley org accept %s (or decline)\n", o.Org)
					}
					if v.Org == "" {
						fmt.Fprintln(w, "not a member of an organisation")
						return
					}
					fmt.Fprintf(w, "organisation %s (ORGKEY %s); this node is %s until %s\n", termtext.Line(v.Name), v.Org, termtext.Line(v.Handle), v.Expires.Format(time.DateOnly))
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "MEMBER\tHANDLE\tUNTIL")
					for _, m := range v.Members {
						fmt.Fprintf(tw, "%s\t%s\t%s\n", m.PeerID, termtext.Line(m.Handle), m.Expires.Format(time.DateOnly))
					}
					tw.Flush()
					for _, t := range v.Trusts {
						if t.Trusted {
							fmt.Fprintf(w, "trusts %s: %s until %s\n", t.Org, strings.Join(t.Scopes, ","), t.Expires.Format(time.DateOnly))
						} else {
							fmt.Fprintf(w, "trust in %s withdrawn\n", t.Org)
						}
					}
					for p, o := range v.Contacts {
						fmt.Fprintf(w, "contact %s through %s\n", p, o)
					}
				})
		},
	}
}

// maxValidDays is the longest --valid in days (a time.Duration holds
// about 106,751 days).
const maxValidDays = 100 * 365

// parseValid reads "90d", "36h" or a Go duration.
func parseValid(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		d, err := strconv.Atoi(n)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("--valid %q: want e.g. 90d or 36h", s)
		}
		if d > maxValidDays {
			return 0, fmt.Errorf("--valid %q: at most %dd", s, maxValidDays)
		}
		return time.Duration(d) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("--valid %q: want e.g. 90d or 36h", s)
	}
	return d, nil
}
