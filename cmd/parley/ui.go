package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
)

func uiCmd(g *globals) *cobra.Command {
	var open bool
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Print the address of the node's dashboard (--open: open it in the browser)",
		Long: `The node serves a live dashboard on 127.0.0.1: rooms and their messages (post,
reply to what is asked of you, invite), agents and what they wait on, contact
requests to approve or deny, the audit log and usage per agent. Each address
printed opens the dashboard once, within 5 minutes: it carries a one-time
code, not the home's token (HOME/ui.token), so the browser's history keeps
nothing that opens it again. Once open, the page changes the code for the
token, keeps the token in its browser tab and moves to /ui/page, so a reload
of the tab works; for another tab, run parley ui again. Its port is ui_port
in the config (unset: the port it had last time when free, else any).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.UIInfo, error) {
				info, err := c.UI(ctx)
				if err == nil && info.URL == "" {
					err = fmt.Errorf("the node serves no dashboard: %s", info.Error)
				}
				if err == nil && open {
					var home string
					if home, err = g.homePath(); err == nil {
						if err = openBrowser(home, info.URL); err != nil {
							err = partial{err} // the address is printed
						}
					}
				}
				return info, err
			}, func(w io.Writer, v localapi.UIInfo) { fmt.Fprintln(w, v.URL) })
		},
	}
	cmd.Flags().BoolVar(&open, "open", false, "open the dashboard in the default browser")
	return cmd
}

// openPage is the page `ui --open` hands the browser, in the home.
const openPage = node.UIOpenFileName

// openBrowser opens url with the system's opener. The address opens the
// dashboard once, and an opener's (and a browser's) command line can be
// read by every user of the machine, who could open it first: the opener
// gets a page in the home instead, readable by its owner only, which sends
// the browser on to url.
func openBrowser(home, url string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	if _, err := exec.LookPath(name); err != nil {
		return errors.New("no browser opener (" + name + ") found: open the address yourself")
	}
	page, err := writeOpenPage(home, url)
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	opener := exec.Command(name, (&neturl.URL{Scheme: "file", Path: page}).String())
	opener.Stderr = &stderr
	if err := opener.Start(); err != nil {
		return fmt.Errorf("open the browser: %w; open the address above by hand", err)
	}
	// An opener that cannot open (no browser, no display) says so and
	// exits at once; one that works may stay until the browser does.
	done := make(chan error, 1)
	go func() { done <- opener.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			why := strings.TrimSpace(stderr.String())
			if i := strings.IndexByte(why, '\n'); i >= 0 {
				why = why[:i]
			}
			if why != "" {
				why = " (" + why + ")"
			}
			return fmt.Errorf("the browser was not opened: %s failed: %v%s; open the address above by hand", name, err, why)
		}
	case <-time.After(openerWait):
	}
	return nil
}

// openerWait is how long ui --open waits for the opener to fail.
const openerWait = 2 * time.Second

// writeOpenPage writes HOME/ui-open.html (mode 0600), a page that sends
// the browser on to url at once, and returns its path.
func writeOpenPage(home, url string) (string, error) {
	u := html.EscapeString(url)
	body := "<!doctype html>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"refresh\" content=\"0; url=" + u + "\">\n" +
		"<title>Parley</title>\n<p><a href=\"" + u + "\">Open the Parley dashboard</a></p>\n"
	f, err := os.CreateTemp(home, ".ui-open-*")
	if err != nil {
		return "", fmt.Errorf("write the page that opens the dashboard: %w", err)
	}
	_, werr := f.WriteString(body)
	if err := errors.Join(werr, f.Chmod(0o600), f.Close()); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("write the page that opens the dashboard: %w", err)
	}
	page := filepath.Join(home, openPage)
	if err := os.Rename(f.Name(), page); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("write the page that opens the dashboard: %w", err)
	}
	return page, nil
}
