package node_test

import (
	"os"
	"path/filepath"
	"strings"

	"context"
	"github.com/parley-mesh/parley/internal/audit"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A muted agent's session cannot take another name to post under while the
// mute holds: before, `Session{Name: "alice2"}` (the MCP register tool)
// unregistered alice, registered alice2 with no rule on it, and alice2's
// posts passed, so a mute lasted until the agent chose to rename itself.
// Once unmuted, the session renames as any other does.
func TestMutedSessionCannotRenameAroundItsMute(t *testing.T) {
	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	if _, err := c.Session(ctx, localapi.SessionRequest{Session: "s-alice", Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mute(ctx, localapi.ModerateRequest{Agent: "alice"}); err != nil {
		t.Fatal(err)
	}
	// The same name again (a reconnect) is fine: the agent may read.
	if _, err := c.Session(ctx, localapi.SessionRequest{Session: "s-alice", Fallback: "alice"}); err != nil {
		t.Fatalf("a muted agent's session reconnecting: %v", err)
	}
	_, err := c.Session(ctx, localapi.SessionRequest{Session: "s-alice", Name: "alice2"})
	if !localapi.IsCode(err, localapi.CodeMuted) {
		if r2, oerr := c.OpenRoom(ctx, "alice2", localapi.OpenRoomRequest{Name: "around the mute"}); oerr == nil {
			t.Fatalf("a muted agent's session renamed itself (%v) and opened room %s under the new name", err, r2.RoomID)
		}
		t.Fatalf("a muted agent's session renaming: %v (want code %s)", err, localapi.CodeMuted)
	}
	if _, err := c.Unmute(ctx, localapi.ModerateRequest{Agent: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Session(ctx, localapi.SessionRequest{Session: "s-alice", Name: "alice2"}); err != nil {
		t.Fatalf("an unmuted agent's session renaming: %v", err)
	}
}

// A damaged last line of the audit log (a crash that tore a line whose end
// reached the disk, a disk error, a hand that edited it) stops the node
// from recording anything more: Append parses the last line to chain the
// next entry to it and refuses with ErrDamaged, so every later decision
// (mutes, kills, contact approvals, invites) goes unrecorded, said only in
// node.log; there is no repair command, and the dashboard says the log is
// damaged but not that it has stopped growing.
func TestDamagedAuditLogKeepsRecording(t *testing.T) {

	nt := nodetest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	if _, err := c.Session(ctx, localapi.SessionRequest{Session: "s-alice", Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mute(ctx, localapi.ModerateRequest{Agent: "alice"}); err != nil {
		t.Fatal(err)
	}
	damageAuditLog(t, nt.Home(0))
	if _, err := c.Unmute(ctx, localapi.ModerateRequest{Agent: "alice"}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(nt.Home(0), audit.FileName))
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(raw), "this line is not an audit entry\n")
	if !strings.Contains(after, `"action":"agent.unmute"`) {
		t.Fatalf("the unmute after the damaged line is not in the audit log; after the damage it holds %q", after)
	}
}
