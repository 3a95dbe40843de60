package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/termtext"
	"github.com/parley-mesh/parley/node"
)

func idCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "id",
		Short: "Print this node's peer ID, handle and addresses",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.Info, error) { return c.ID(ctx) },
				func(w io.Writer, v localapi.Info) {
					fmt.Fprintf(w, "peer_id: %s\nhandle:  %s\n", v.PeerID, termtext.Line(v.Handle))
					if v.Org != nil {
						fmt.Fprintf(w, "org:     %s\n", orgLine(v.Org))
					}
					fmt.Fprintln(w, "addrs:")
					for _, a := range v.Addrs {
						fmt.Fprintf(w, "  %s\n", a)
					}
					printRelayAddrs(w, v.RelayAddrs)
				})
		},
	}
}

// printRelayAddrs prints the node's relayed addresses, the ones to give
// out when it is not reachable directly.
func printRelayAddrs(w io.Writer, addrs []string) {
	if len(addrs) == 0 {
		return
	}
	fmt.Fprintln(w, "relayed addrs (through the relays this node holds a reservation on; give one of these to peers that cannot reach it directly):")
	for _, a := range addrs {
		fmt.Fprintf(w, "  %s\n", a)
	}
}

// printRelays prints the node's reservations on relays: held until when,
// or why one failed and when it is asked again.
func printRelays(w io.Writer, rs []localapi.RelayInfo, reachability string) {
	if len(rs) == 0 {
		return
	}
	clock := func(t time.Time) string { return t.Local().Format("15:04:05") }
	fmt.Fprintln(w, "relays (this node's reservations):")
	for _, r := range rs {
		conf := ""
		if r.Configured {
			conf = " (configured)"
		}
		line := r.State
		switch r.State {
		case "held":
			line += " until " + clock(r.Expires) + " (renewed before it ends)"
		case "failed":
			line += " at " + clock(r.FailedAt) + ": " + termtext.Line(r.Error)
			if !r.RetryAt.IsZero() {
				line += "; asked again about " + clock(r.RetryAt)
			} else {
				line += "; asked again as soon as it can be reached"
			}
		case "waiting":
			if reachability == "private" {
				line += ": not asked yet (asked within seconds)"
			} else {
				line += ": not asked yet: the node asks once AutoNAT finds it behind a NAT (reachability: " + reachability +
					"; connected peers tell it; set reachability = private in HOME/config if it is)"
			}
		}
		fmt.Fprintf(w, "  %s%s: %s\n", r.PeerID, conf, line)
	}
}

// orgLine shows a membership certificate: the organisation, its key and
// the certificate's end.
func orgLine(m *localapi.Membership) string {
	return fmt.Sprintf("member of %s (%s) until %s", termtext.Line(m.Name), m.OrgID, m.Until.UTC().Format("2006-01-02"))
}

func statusCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show whether the node runs, and how it is doing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.Status, error) { return c.Status(ctx) },
				func(w io.Writer, v localapi.Status) {
					fmt.Fprintf(w, "node %s (%s) running for %s, version %s\n", v.PeerID, termtext.Line(v.Handle), uptime(v.UptimeSec), v.Version)
					if v.Org != nil {
						fmt.Fprintf(w, "org: %s\n", orgLine(v.Org))
					}
					fmt.Fprintf(w, "home: %s\npeers: %d connected, %d in the DHT routing table, %d on GossipSub\nmdns: %v\n",
						v.Home, v.Peers, v.DHTPeers, v.PubSubPeer, v.MDNS)
					fmt.Fprintf(w, "reachability: %s\nrelay service: %s\n", v.Reachability, v.RelayService)
					fmt.Fprintf(w, "connections: %d direct, %d relayed\n", v.Direct, len(v.Relayed))
					for _, p := range v.Relayed {
						fmt.Fprintf(w, "  %s via %s: %s\n", p.PeerID, p.Relay, termtext.Line(p.Why))
					}
					printRelays(w, v.Relays, v.Reachability)
					fmt.Fprintf(w, "addrs:\n  %s\n", strings.Join(v.Addrs, "\n  "))
					printRelayAddrs(w, v.RelayAddrs)
					if v.StoreProblem != "" {
						fmt.Fprintf(w, "STORE REFUSING WRITES: %s\n", termtext.Line(v.StoreProblem))
					}
					if v.HumanOwed > 0 {
						var parts []string
						if v.HumanAsks > 0 {
							parts = append(parts, fmt.Sprintf("%d %s", v.HumanAsks, plural(v.HumanAsks, "ask", "asks")))
						}
						if v.HumanInvitations > 0 {
							parts = append(parts, fmt.Sprintf("%d %s", v.HumanInvitations, plural(v.HumanInvitations, "invitation", "invitations")))
						}
						fmt.Fprintf(w, "waiting for you: %s (parley inbox shows %s)\n", strings.Join(parts, " and "), plural(v.HumanOwed, "it", "them"))
					}
					if v.ContactRequests > 0 {
						fmt.Fprintf(w, "contact requests waiting for you: %d (parley inbox or parley contact list shows %s; approve or deny each)\n",
							v.ContactRequests, plural(v.ContactRequests, "it", "them"))
					}
					if v.Unreached > 0 {
						fmt.Fprintf(w, "agents not reached: %d %s not read in time (parley who marks the agents)\n", v.Unreached,
							plural(v.Unreached, "owed item was", "owed items were"))
					}
				})
		},
	}
}

func peersCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "peers",
		Short: "List connected peers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) ([]localapi.Peer, error) { return c.Peers(ctx) },
				func(w io.Writer, v []localapi.Peer) {
					if len(v) == 0 {
						fmt.Fprintln(w, "no peers connected")
						return
					}
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "NAME\tORG\tPEER ID\tCONN\tADDRESS\tWHY")
					for _, p := range v {
						org := ""
						if p.Org != nil {
							org = p.Org.Name
						}
						why := p.Why
						if why == p.Conn {
							why = "" // "direct" says nothing the CONN column does not
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", dash(termtext.Line(p.Name)), dash(termtext.Line(org)), p.PeerID, p.Conn, strings.Join(p.Addrs, " "), dash(termtext.Line(why)))
					}
					tw.Flush()
				})
		},
	}
}

func connectCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "connect MULTIADDR",
		Short: "Dial a peer (a multiaddr ending in /p2p/PEER_ID)",
		Long: `Dial a peer: a multiaddr ending in /p2p/PEER_ID, as its node's parley id prints it,
or several of one node's separated by commas, as the ready line's addrs= gives them.
A peer ID alone is no address (parley contact request finds a node by its ID).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(g, cmd, func(ctx context.Context, c *localapi.Client) (localapi.Peer, error) { return c.Connect(ctx, args[0]) },
				func(w io.Writer, v localapi.Peer) {
					if v.Why != "" {
						fmt.Fprintf(w, "%s: %s\n", v.PeerID, termtext.Line(v.Why))
						return
					}
					if v.Conn == "relayed" {
						fmt.Fprintf(w, "connected to %s, through the relay %s (hole punching may make it direct: parley peers says)\n", v.PeerID, v.Relay)
						return
					}
					fmt.Fprintf(w, "connected to %s\n", v.PeerID)
				})
		},
	}
}

func downCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Stop the running node, and wait until it has exited and let go of the home",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := g.resolveHome()
			if err != nil {
				return err
			}
			type result struct {
				Status string `json:"status"`
			}
			err = call(g, cmd, func(ctx context.Context, c *localapi.Client) (result, error) {
				_, pid, err := node.HomeLockHolder(home)
				if err != nil {
					return result{}, err
				}
				if err := c.Down(ctx); err != nil {
					return result{}, err
				}
				return result{"stopped"}, waitDown(ctx, cmd.ErrOrStderr(), home, pid, downTimeout)
			}, func(w io.Writer, v result) { fmt.Fprintln(w, "node stopped") })
			if errors.Is(err, localapi.ErrNoNode) {
				// Not "start one with parley up": there is nothing to stop.
				return fmt.Errorf("no node is running for home %s: nothing to stop", home)
			}
			return err
		},
	}
}

// downTimeout bounds how long down waits for the node to exit (it stops
// within 5 s, whatever a stuck part does).
const downTimeout = 20 * time.Second

// waitDown polls until the node's process (pid, when known) has exited, or,
// when its pid is unknown, until no process holds the home's lock, so that
// an `up` right after finds the home free unless another node took it in
// the meantime (said on w). It says what it waits for when that takes a
// while.
func waitDown(ctx context.Context, w io.Writer, home string, pid int, limit time.Duration) error {
	start := time.Now()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	said := false
	what := "the node"
	if pid > 0 {
		what = fmt.Sprintf("the node (pid %d)", pid)
	}
	for {
		held, now, err := node.HomeLockHolder(home)
		if err != nil {
			return err
		}
		if pid > 0 && processGone(pid) {
			// The node stopped is gone; the lock is the kernel's to let go
			// with it. Another process (a node started again at once)
			// may hold the home now: that is not the stopped node.
			if held {
				who := "another process"
				if now > 0 && now != pid {
					who = fmt.Sprintf("another process (pid %d)", now)
				}
				fmt.Fprintf(w, "parley: %s has exited; %s holds %s now\n", what, who, home)
			}
			return nil
		}
		if pid <= 0 && !held {
			return nil
		}
		waited := time.Since(start)
		if waited >= limit {
			return fmt.Errorf("%s has not exited and let go of %s within %s; it may still be stopping (see %s)",
				what, filepath.Join(home, node.LockFileName), limit, filepath.Join(home, node.LogFileName))
		}
		if !said && waited >= 2*time.Second {
			said = true
			fmt.Fprintf(w, "parley: waiting for %s to exit and let go of %s …\n", what, filepath.Join(home, node.LockFileName))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s was asked to stop, but had not exited when the wait ended: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// processGone reports whether pid has exited: no such process, or one that
// is only waiting to be reaped (a zombie).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] == 'Z'
	}
	return false
}

// uptime is how long the node has run, to the second, as a person reads a
// duration (21m47s).
func uptime(sec float64) string {
	return time.Duration(sec * float64(time.Second)).Round(time.Second).String()
}
