package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/localapi"
)

func uiCmd(g *globals) *cobra.Command {
	var open bool
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Print the address of the node's dashboard (--open: open it in the browser)",
		Long: `The node serves a live dashboard on 127.0.0.1: rooms and their messages (post,
reply to what is asked of you, invite), agents and what they wait on, contact
requests to approve or deny, the audit log and usage per agent. The address
carries the home's token (HOME/ui.token): keep it to yourself. Its port is
ui_port in the config (default: any free port).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.UIInfo, error) {
				info, err := c.UI(ctx)
				if err == nil && info.URL == "" {
					err = fmt.Errorf("the node serves no dashboard: %s", info.Error)
				}
				if err == nil && open {
					err = openBrowser(info.URL)
				}
				return info, err
			}, func(w io.Writer, v localapi.UIInfo) { fmt.Fprintln(w, v.URL) })
		},
	}
	cmd.Flags().BoolVar(&open, "open", false, "open the dashboard in the default browser")
	return cmd
}

// openBrowser opens url with the system's opener.
func openBrowser(url string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	if _, err := exec.LookPath(name); err != nil {
		return errors.New("no browser opener (" + name + ") found: open the address yourself")
	}
	if err := exec.Command(name, url).Start(); err != nil {
		return fmt.Errorf("open the browser: %w", err)
	}
	return nil
}
