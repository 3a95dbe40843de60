package inbox_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
)

const moderatedProject = "0123456789abcdef0123456789abcdef"

// TestBoardClaimsAreModeratedPosts: a claim is a signed room event every
// member node of the board stores for good, as a message is. Before, a
// runaway agent that claimed in a loop was held to no post limit (each
// claim went to every member's disk), and one its user muted, or killed,
// still put claims on the board, holding paths for up to 8 h against
// every other agent and blocking their commits through the git guard.
// Now a claim is checked as a post is: counted against agent_post_limit,
// refused to a muted or killed agent. A release still goes through.
func TestBoardClaimsAreModeratedPosts(t *testing.T) {
	_, c := alphaAndBeta(t, func(c *node.Config) { c.AgentPostLimit = 6 })
	ctx := context.Background()

	claimed := 0
	for k := range 60 {
		_, err := c.Claim(ctx, "beta", localapi.ClaimRequest{Project: moderatedProject, Paths: []string{fmt.Sprintf("loop/%d.go", k)}, Note: "again", TTLSeconds: 60})
		if localapi.IsCode(err, localapi.CodeTooMany) {
			break
		}
		if err != nil {
			t.Fatalf("claim %d: %v", k, err)
		}
		claimed++
	}
	if claimed == 60 || claimed > 6 {
		t.Errorf("an agent allowed 6 posts a minute put %d claims on the board in a row", claimed)
	}
	if _, err := c.Release(ctx, "beta", localapi.ReleaseRequest{Project: moderatedProject}); err != nil {
		t.Errorf("beta, over its post limit, releases its claims: %v", err)
	}

	if _, err := c.Claim(ctx, "alpha", localapi.ClaimRequest{Project: moderatedProject, Paths: []string{"mine/**"}, Note: "mine", TTLSeconds: 60}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mute(ctx, localapi.ModerateRequest{Agent: "alpha", Seconds: 600}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Claim(ctx, "alpha", localapi.ClaimRequest{Project: moderatedProject, Paths: []string{"muted/**"}, Note: "muted", TTLSeconds: 8 * 3600}); !localapi.IsCode(err, localapi.CodeMuted) {
		t.Errorf("a muted agent's claim on muted/**: %v, want refused as muted", err)
	}
	if _, err := c.Release(ctx, "alpha", localapi.ReleaseRequest{Project: moderatedProject, Paths: []string{"mine/**"}}); err != nil {
		t.Errorf("a muted agent releases its claim: %v", err)
	}
	if _, err := c.Kill(ctx, localapi.ModerateRequest{Agent: "alpha"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Claim(ctx, "alpha", localapi.ClaimRequest{Project: moderatedProject, Paths: []string{"src/**"}, Note: "killed", TTLSeconds: 8 * 3600}); !localapi.IsCode(err, localapi.CodeKilled) {
		t.Errorf("a killed agent's claim on src/** for 8 h: %v, want refused as killed", err)
	}
	v, err := c.Board(ctx, "beta", localapi.BoardRequest{Project: moderatedProject})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range v.Claims {
		t.Errorf("on the board: %s held by %s until %s (%q)", h.Path, h.Holder, h.Expires, h.Note)
	}
}
