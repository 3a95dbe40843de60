package testnet

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNATLab runs the NAT scenario once behind cone NATs (the connection
// must become direct by hole punching) and once behind symmetric NATs (it
// must stay relayed, and survive its relay being killed and started again
// while both talk); either way every message arrives, in the same order on
// both nodes, and no namespace outlives the run. cone-tcp runs the cone
// scenario with the relay's TCP address: before, a node that reached the
// public node over TCP alone dialled from an ephemeral port, so no peer
// observed an address of its own, hole punching never started, and the
// connection stayed relayed.
func TestNATLab(t *testing.T) {
	if err := CheckNAT(); err != nil {
		t.Skipf("skipping the NAT lab: %v", err)
	}
	if testing.Short() {
		t.Skip("starts nodes in network namespaces")
	}
	dir := t.TempDir()
	r := &runner{p: newProgress(nil), dir: dir}
	bin, err := r.parleyBinary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{NATCone, NATSymmetric, "cone-tcp"} {
		nat, tcp := strings.CutSuffix(name, "-tcp")
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var progress bytes.Buffer
			res, err := RunNAT(ctx, NATConfig{NAT: nat, Messages: 6, RelayDrop: nat == NATSymmetric, RelayStall: nat == NATSymmetric, RelayTCP: tcp, Parley: bin, Dir: filepath.Join(dir, name)}, &progress)
			if testing.Verbose() || err != nil || !res.OK {
				t.Logf("progress:\n%s", progress.String())
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Runs) != 1 {
				t.Fatalf("%d runs", len(res.Runs))
			}
			run := res.Runs[0]
			if !res.OK {
				t.Fatalf("failures: %v\nrun: %+v", res.Failures, run)
			}
			want := 12
			if nat == NATSymmetric {
				want = 24 // and 6 while the relay stalled, 6 while it was gone
				if run.RelayBackS <= 0 || run.StallBackS <= 0 {
					t.Errorf("no time from the relay's return or its stall's end: %+v", run)
				}
			}
			if run.Sent != want || run.Delivered != run.Sent || !run.OrderIdentical || run.UpToFirstMessageS <= 0 {
				t.Fatalf("run: %+v", run)
			}
			if want := nat == NATCone; run.Direct != want {
				t.Fatalf("direct = %v, want %v: %s", run.Direct, want, run.Why)
			}
			// One line a person reads: not libp2p's list of the addresses
			// dialled, one a line.
			if nat == NATSymmetric && (!strings.HasPrefix(run.Why, "relayed: hole punching failed (") || strings.Contains(run.Why, "\n")) {
				t.Errorf("why = %q", run.Why)
			}
			t.Logf("%s: %s", nat, natSummary(run))
			out, err := exec.Command("ip", "netns", "list").Output()
			if err != nil {
				t.Fatal(err)
			}
			if prefix := "pnat" + strconv.Itoa(os.Getpid()) + "-"; strings.Contains(string(out), prefix) {
				t.Errorf("namespaces left behind:\n%s", out)
			}
		})
	}
}

func TestNATConfig(t *testing.T) {
	for _, cfg := range []NATConfig{{NAT: "full-cone"}, {Runs: -1}, {Messages: 1}, {Messages: 5000}} {
		if _, err := RunNAT(context.Background(), cfg, nil); !errors.Is(err, ErrUsage) {
			t.Errorf("%+v: err = %v, want ErrUsage", cfg, err)
		}
	}
}
