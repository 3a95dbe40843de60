package inbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestRefusedClaimsKeepThePostLimit: beta holds x.go. Alpha, allowed 6
// posts a minute, opens a room to talk (one post) and tries to claim x.go
// five times; each is refused as beta's, and nothing is posted. Before,
// the node's board counted a claim (CheckPost, node/board.go) before the
// board checked it, so alpha's next message, to ask beta about x.go (what
// the conflict tells it to do), was refused as "posted more than 6
// times"; now a claim is counted only once posted, and the message goes.
func TestRefusedClaimsKeepThePostLimit(t *testing.T) {
	_, c := alphaAndBeta(t, func(c *node.Config) { c.AgentPostLimit = 6 })
	ctx := context.Background()
	if _, err := c.Claim(ctx, "beta", localapi.ClaimRequest{Project: moderatedProject, Paths: []string{"x.go"}, Note: "mine", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	room, err := c.OpenRoom(ctx, "alpha", localapi.OpenRoomRequest{Name: "talk"})
	if err != nil {
		t.Fatal(err)
	}
	for k := range 5 {
		if _, err := c.Claim(ctx, "alpha", localapi.ClaimRequest{Project: moderatedProject, Paths: []string{"x.go"}, Note: "mine too", TTLSeconds: 600}); !localapi.IsCode(err, localapi.CodeClaimed) {
			t.Fatalf("alpha's claim %d on beta's x.go: %v, want a conflict", k, err)
		}
	}
	if _, err := c.Say(ctx, "alpha", localapi.SayRequest{Room: room.RoomID, Text: "beta, when are you done with x.go?"}); err != nil {
		t.Fatalf("alpha's first message, after one room opened and five claims refused (nothing posted): %v", err)
	}
}

// TestKilledAgentReleasesItsClaims: alpha claims src/** for 8 h; its user
// kills it (parley agent kill: "its posts are refused"). Before, its claim
// stayed on the board until it expired: beta's claim on src/a.go was
// refused as alpha's for up to 8 h, and the git guard refused every other
// agent's commit under src/ for as long, with no one left to release it
// but the user, by hand, as the killed agent. Now the kill releases every
// claim the agent holds.
func TestKilledAgentReleasesItsClaims(t *testing.T) {
	_, c := alphaAndBeta(t)
	ctx := context.Background()
	if _, err := c.Claim(ctx, "alpha", localapi.ClaimRequest{Project: moderatedProject, Paths: []string{"src/**"}, Note: "runaway", TTLSeconds: 8 * 3600}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kill(ctx, localapi.ModerateRequest{Agent: "alpha"}); err != nil {
		t.Fatal(err)
	}
	v, err := c.Board(ctx, "beta", localapi.BoardRequest{Project: moderatedProject, Paths: []string{"src/a.go"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range v.Claims {
		t.Errorf("after alpha was killed, the board (as the git guard asks it for src/a.go) still has %s held by %s until %s", h.Path, h.Holder, h.Expires)
	}
	if _, err := c.Claim(ctx, "beta", localapi.ClaimRequest{Project: moderatedProject, Paths: []string{"src/a.go"}, Note: "fix", TTLSeconds: 600}); err != nil {
		t.Errorf("beta's claim on src/a.go after alpha (src/**) was killed: %v", err)
	}
}

// TestTinyClaimTTLIsRefused: a ttl_seconds above zero that rounds to no
// millisecond was taken as zero, the default, and the paths were held for
// 30 minutes; it is refused now.
func TestTinyClaimTTLIsRefused(t *testing.T) {
	nt := start(t, 1)
	ctx := context.Background()
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	register(t, nt, 0, "alpha")
	_, err := c.Claim(ctx, "alpha", localapi.ClaimRequest{Project: moderatedProject, Paths: []string{"x.go"}, Note: "a moment", TTLSeconds: 0.0004})
	if !localapi.IsCode(err, localapi.CodeBadRequest) {
		t.Fatalf("a claim of 0.0004 s: %v, want it refused as bad input", err)
	}
}

// TestAgentKilledWhileItsClaimWaitsPostsNothing: beta holds x.go; alpha
// claims it, waiting up to 40 s for beta's claim to go; alpha's user kills
// alpha meanwhile, and beta then releases x.go. Before, alpha's claim was
// posted once x.go was free: held for 8 h by an agent that could no longer
// release it (the kill had released what alpha held then: nothing). Now
// the waiting claim is refused as killed, and x.go stays free.
func TestAgentKilledWhileItsClaimWaitsPostsNothing(t *testing.T) {
	nt, c := alphaAndBeta(t)
	ctx := context.Background()
	if _, err := c.Claim(ctx, "beta", localapi.ClaimRequest{Project: moderatedProject, Paths: []string{"x.go"}, Note: "mine", TTLSeconds: 600}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Claim(ctx, "alpha", localapi.ClaimRequest{Project: moderatedProject, Paths: []string{"x.go"}, Note: "runaway", TTLSeconds: 8 * 3600, WaitSeconds: 40})
		done <- err
	}()
	nt.WaitFor(20*time.Second, func() bool { return nt.Node(0).Board().Waiting() == 1 }, "alpha's claim to wait")
	if _, err := c.Kill(ctx, localapi.ModerateRequest{Agent: "alpha"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Release(ctx, "beta", localapi.ReleaseRequest{Project: moderatedProject, Paths: []string{"x.go"}}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !localapi.IsCode(err, localapi.CodeKilled) {
		t.Fatalf("alpha's waiting claim after alpha was killed: %v, want it refused as killed", err)
	}
	v, err := c.Board(ctx, "beta", localapi.BoardRequest{Project: moderatedProject})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range v.Claims {
		t.Errorf("after alpha was killed while its claim waited, the board has %s held by %s", h.Path, h.Holder)
	}
}

// alphaAndBeta starts one node (with opts) with agents alpha and beta
// registered, and a client of its local API, closed at the test's end.
func alphaAndBeta(t *testing.T, opts ...func(*node.Config)) (*nodetest.Net, *localapi.Client) {
	t.Helper()
	nt := start(t, 1, opts...)
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	t.Cleanup(func() { c.Close() })
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "beta")
	return nt, c
}
