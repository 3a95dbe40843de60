package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/canon"
	"github.com/parley-mesh/parley/internal/frame"
	"github.com/parley-mesh/parley/node/nodetest"
	"github.com/parley-mesh/parley/rooms"
)

// forgeInvite sends target, from h (whose key is key), the notice of an
// invite into a fresh room that exists nowhere; it returns the answer's
// error text ("" when the invite was taken).
func forgeInvite(t *testing.T, h host.Host, key crypto.PrivKey, target peer.ID, n int) string {
	t.Helper()
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		t.Fatal(err)
	}
	room := rooms.DeriveRoomID(h.ID(), nonce)
	var parent rooms.ID
	copy(parent[:], nonce)
	wire, _, err := rooms.Seal(key, &rooms.Event{Room: room, Author: h.ID(), Agent: identity.HumanAgent, Seq: 2,
		Parents: []rooms.ID{parent}, Depth: 2, Time: time.Now().UnixMilli(), Kind: rooms.KindInvite, Body: []byte(target)})
	if err != nil {
		t.Error(err)
		return "seal"
	}
	b, err := canon.Enc.Marshal(struct {
		Room  string `cbor:"1,keyasint"`
		Name  string `cbor:"2,keyasint,omitempty"`
		Event []byte `cbor:"3,keyasint"`
	}{string(room), fmt.Sprintf("flood %d", n), wire})
	if err != nil {
		t.Error(err)
		return "marshal"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := h.NewStream(ctx, target, rooms.ProtocolInvite)
	if err != nil {
		t.Errorf("invite %d: %v", n, err)
		return "stream"
	}
	defer s.Close()
	if err := frame.Write(s, b); err != nil {
		t.Errorf("invite %d: %v", n, err)
		return "write"
	}
	_ = s.CloseWrite()
	raw, err := frame.Read(s, 4096)
	if err != nil {
		t.Errorf("invite %d: no answer: %v", n, err)
		return "read"
	}
	var a struct {
		OK    bool   `cbor:"1,keyasint,omitempty"`
		Error string `cbor:"2,keyasint,omitempty"`
	}
	if err := canon.StrictDec(16).Unmarshal(raw, &a); err != nil {
		t.Error(err)
		return "decode"
	}
	if a.OK {
		return ""
	}
	return a.Error
}

type cliInvite struct {
	ID       string `json:"id"`
	RoomName string `json:"room_name"`
	Inviter  string `json:"inviter"`
}

// TestCLIInviteFlood: S, a member of a room A is in but not A's contact,
// sends A 2,000 invites (with S's own key, as a modified node would).
// Eight wait for A's user, the rest are refused; no room opens, A's
// goroutines and memory stay bounded, and `parley room list` keeps working,
// also with an accepted room whose create event never comes.
func TestCLIInviteFlood(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeC, homeS := filepath.Join(base, "a"), filepath.Join(base, "c"), filepath.Join(base, "s")
	a := up(t, homeA, "--listen", loopback)
	up(t, homeC, "--listen", loopback, "--bootstrap", a.addr())
	s := up(t, homeS, "--listen", loopback, "--bootstrap", a.addr())
	idA, idS := peerID(t, homeA), peerID(t, homeS)
	befriend(t, homeC, homeA, idA)
	befriend(t, homeC, homeS, idS)
	var room struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &room, "--home", homeC, "room", "create", "shared")
	for _, id := range []string{idA, idS} {
		if _, errs, code := run(t, "--home", homeC, "room", "invite", room.RoomID, id); code != 0 {
			t.Fatal(errs)
		}
	}
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		var l []struct {
			Members []string `json:"members"`
		}
		runJSON(t, &l, "--home", homeA, "room", "list")
		return len(l) == 1 && len(l[0].Members) == 3
	}, "A to know S as a member of the shared room")

	// S's node stops; S's key speaks through a plain libp2p host.
	stop(t, homeS, s)
	key, err := identity.LoadOrCreate(filepath.Join(homeS, "identity.key"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := libp2p.New(libp2p.Identity(key), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableRelay())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	target, err := parsePeerAddr(a.addr())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Connect(context.Background(), target); err != nil {
		t.Fatal(err)
	}

	pid := a.cmd.Process.Pid
	rssBefore, gBefore := procStatus(t, pid, "VmRSS"), metric(t, homeA, "go_goroutines", "")
	n := floodSize(2000)
	var mu sync.Mutex
	held, refused := 0, 0
	var peakG float64
	work := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				e := forgeInvite(t, h, key, target.ID, i)
				mu.Lock()
				switch {
				case e == "":
					held++
				case strings.Contains(e, "wait for the user's answer"):
					refused++
				default:
					t.Errorf("invite %d: %s", i, e)
				}
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		work <- i
		if i%250 == 0 {
			peakG = max(peakG, metric(t, homeA, "go_goroutines", ""))
		}
	}
	close(work)
	wg.Wait()
	elapsed := time.Since(start)
	peakG = max(peakG, metric(t, homeA, "go_goroutines", ""))
	peak, rssAfter, gAfter := procStatus(t, pid, "VmHWM"), procStatus(t, pid, "VmRSS"), metric(t, homeA, "go_goroutines", "")
	t.Logf("invite flood: %d invites in %v: %d wait, %d refused; RSS %d → %d kB (peak %d kB); goroutines %v → %v (peak seen %v)",
		n, elapsed.Round(time.Millisecond), held, refused, rssBefore, rssAfter, peak, gBefore, gAfter, peakG)
	if held != rooms.MaxInvitesPerInviter || refused != n-held {
		t.Fatalf("%d invites wait and %d were refused, of %d", held, refused, n)
	}
	// Bounds: what waits is 8 small records; the rest is the streams'
	// garbage. Generous for a -race binary.
	if peakG > gBefore+64 || gAfter > gBefore+16 {
		t.Fatalf("goroutines %v → %v (peak %v)", gBefore, gAfter, peakG)
	}
	if growth := rssAfter - rssBefore; growth > 128<<10 {
		t.Fatalf("RSS grew by %d kB", growth)
	}

	var waiting []cliInvite
	runJSON(t, &waiting, "--home", homeA, "invites")
	if len(waiting) != rooms.MaxInvitesPerInviter || waiting[0].Inviter != idS {
		t.Fatalf("waiting invites: %+v", waiting)
	}
	out, errs, code := run(t, "--home", homeA, "room", "list")
	if code != 0 || !strings.Contains(out, "shared") || strings.Count(out, "\n") != 2 {
		t.Fatalf("room list after the flood: exit %d\n%s%s", code, out, errs)
	}
	// Accept one (its room will never get a create event: S's node is
	// gone and the room exists nowhere), decline another.
	if out, errs, code := run(t, "--home", homeA, "invites", "accept", waiting[0].ID); code != 0 || !strings.Contains(out, "accepted") {
		t.Fatalf("accept: exit %d: %s%s", code, out, errs)
	}
	if _, errs, code := run(t, "--home", homeA, "invites", "decline", waiting[1].ID[:10]); code != 0 {
		t.Fatalf("decline: %s", errs)
	}
	if _, errs, code := run(t, "--home", homeA, "invites", "accept", waiting[1].ID); code == 0 || !strings.Contains(errs, "parley invites") {
		t.Fatalf("accepting a declined invite: exit %d: %s", code, errs)
	}
	runJSON(t, &waiting, "--home", homeA, "invites")
	if len(waiting) != rooms.MaxInvitesPerInviter-2 {
		t.Fatalf("%d invites wait after one accept and one decline", len(waiting))
	}
	out, errs, code = run(t, "--home", homeA, "room", "list")
	if code != 0 || strings.Count(out, "\n") != 3 {
		t.Fatalf("room list with a room without its create event: exit %d\n%s%s", code, out, errs)
	}
	// A contact's invite opens the room at once.
	var second struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &second, "--home", homeC, "room", "create", "second")
	if _, errs, code := run(t, "--home", homeC, "room", "invite", second.RoomID, idA); code != 0 {
		t.Fatal(errs)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, _, code := run(t, "--home", homeA, "room", "list")
		return code == 0 && strings.Contains(out, "second")
	}, "A to join the contact's room")
}

// TestCLICoMemberNotInvited: S, a stock node, may not invite A, a member of
// a room they share but not S's contact: `room invite` fails, says why and
// how to get consent, and nothing waits in A's `parley invites`.
func TestCLICoMemberNotInvited(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeC, homeS := filepath.Join(base, "a"), filepath.Join(base, "c"), filepath.Join(base, "s")
	a := up(t, homeA, "--listen", loopback)
	up(t, homeC, "--listen", loopback, "--bootstrap", a.addr())
	up(t, homeS, "--listen", loopback, "--bootstrap", a.addr())
	idA, idS := peerID(t, homeA), peerID(t, homeS)
	befriend(t, homeC, homeA, idA)
	befriend(t, homeC, homeS, idS)
	var room struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &room, "--home", homeC, "room", "create", "shared")
	for _, id := range []string{idA, idS} {
		if _, errs, code := run(t, "--home", homeC, "room", "invite", room.RoomID, id); code != 0 {
			t.Fatal(errs)
		}
	}
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		var l []struct {
			Members []string `json:"members"`
		}
		runJSON(t, &l, "--home", homeS, "room", "list")
		return len(l) == 1 && len(l[0].Members) == 3
	}, "S to know A as a member of the shared room")

	var own struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &own, "--home", homeS, "room", "create", "carolsroom")
	out, errs, code := run(t, "--home", homeS, "room", "invite", own.RoomID, idA)
	if code == 0 || !strings.Contains(errs, "not a contact") || !strings.Contains(errs, "parley contact request") {
		t.Fatalf("invite of a co-member: exit %d\n%s%s", code, out, errs)
	}
	var waiting []cliInvite
	runJSON(t, &waiting, "--home", homeA, "invites")
	if len(waiting) != 0 {
		t.Fatalf("waiting invites: %+v", waiting)
	}
	// A contact's invite still opens at once, and says nothing of waiting.
	var second struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &second, "--home", homeC, "room", "create", "second")
	if out, errs, code := run(t, "--home", homeC, "room", "invite", second.RoomID, idA); code != 0 || strings.Contains(out, "waits") {
		t.Fatalf("a contact's invite: exit %d\n%s%s", code, out, errs)
	}
}
