package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/localapi"
)

func invitesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "invites",
		Short: "Invites that did not open a room at once, waiting for your answer",
		Long: `An invite from a contact whose certificate grants invites opens the room at once. These
wait here until you accept or decline them: one from a contact whose certificate does not
grant invites (made through organisation trust with fewer scopes), one from a contact
whose invites already opened 100 rooms here, and one from a co-member of a room you share
who is not your contact (a stock node does not send those: it invites contacts only).
At most 8 wait from one node and 64 in all, for 14 days; further ones are refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) ([]localapi.WaitingInvite, error) { return c.Invites(ctx) },
				func(w io.Writer, v []localapi.WaitingInvite) {
					if len(v) == 0 {
						fmt.Fprintln(w, "no invites wait for your answer")
						return
					}
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ROOM ID\tNAME\tINVITED BY\tSINCE\tEXPIRES")
					for _, i := range v {
						name := dash(oneLine(i.RoomName, 40))
						if i.ToldBack {
							name += " (told back: you were in it)"
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", i.ID, name, i.Inviter,
							i.At.Local().Format("2006-01-02 15:04"), i.Expires.Local().Format("2006-01-02 15:04"))
					}
					tw.Flush()
					fmt.Fprintln(w, "answer with `parley invites accept ROOM_ID` or `parley invites decline ROOM_ID`")
				})
		},
	}
	cmd.AddCommand(inviteAnswerCmd(g, true), inviteAnswerCmd(g, false))
	return cmd
}

func inviteAnswerCmd(g *globals, accept bool) *cobra.Command {
	use, short := "decline ROOM_ID", "Decline a waiting invite (its room ID, or a unique start of it)"
	if accept {
		use, short = "accept ROOM_ID", "Accept a waiting invite and join the room (its room ID, or a unique start of it)"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.InviteAnswer, error) {
				if accept {
					return c.InviteAccept(ctx, args[0])
				}
				return c.InviteDecline(ctx, args[0])
			}, func(w io.Writer, v localapi.InviteAnswer) {
				if v.Accepted {
					fmt.Fprintf(w, "accepted: joining room %s (see `parley room list`)\n", v.ID)
					return
				}
				fmt.Fprintf(w, "declined the invite to room %s\n", v.ID)
			})
		},
	}
}
