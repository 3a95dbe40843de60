package inbox_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
)

const reviewProject = "0123456789abcdef0123456789abcdef"

// TestBoardClaimsAreModeratedPosts: a claim is a signed room event every
// member node of the board stores for good, as a message is. A runaway
// agent that claims in a loop is held to no post limit (each claim goes to
// every member's disk), and one its user muted, or killed, still puts
// claims on the board, holding paths for up to 8 h against every other
// agent and blocking their commits through the git guard.
func TestBoardClaimsAreModeratedPosts(t *testing.T) {
	nt := start(t, 1, func(c *node.Config) { c.AgentPostLimit = 6 })
	ctx := context.Background()
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	register(t, nt, 0, "alpha")
	register(t, nt, 0, "beta")

	claimed := 0
	for k := range 60 {
		_, err := c.Claim(ctx, "beta", localapi.ClaimRequest{Project: reviewProject, Paths: []string{fmt.Sprintf("loop/%d.go", k)}, Note: "again", TTLSeconds: 60})
		if localapi.IsCode(err, localapi.CodeTooMany) {
			break
		}
		if err != nil {
			t.Fatalf("claim %d: %v", k, err)
		}
		claimed++
	}
	if claimed == 60 {
		t.Errorf("an agent allowed 6 posts a minute put %d claims on the board in a row, none refused", claimed)
	}

	if _, err := c.Mute(ctx, localapi.ModerateRequest{Agent: "alpha", Seconds: 600}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Claim(ctx, "alpha", localapi.ClaimRequest{Project: reviewProject, Paths: []string{"muted/**"}, Note: "muted", TTLSeconds: 8 * 3600}); !localapi.IsCode(err, localapi.CodeMuted) {
		t.Errorf("a muted agent's claim on muted/**: %v, want refused as muted", err)
	}
	if _, err := c.Kill(ctx, localapi.ModerateRequest{Agent: "alpha"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Claim(ctx, "alpha", localapi.ClaimRequest{Project: reviewProject, Paths: []string{"src/**"}, Note: "killed", TTLSeconds: 8 * 3600}); !localapi.IsCode(err, localapi.CodeKilled) {
		t.Errorf("a killed agent's claim on src/** for 8 h: %v, want refused as killed", err)
	}
	v, err := c.Board(ctx, "beta", localapi.BoardRequest{Project: reviewProject})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range v.Claims {
		if h.Note == "muted" || h.Note == "killed" {
			t.Logf("on the board: %s held by %s until %s (%q)", h.Path, h.Holder, h.Expires, h.Note)
		}
	}
}
