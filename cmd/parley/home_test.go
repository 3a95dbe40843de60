package main

import (
	"fmt"
	"os"
	"os/exec"
	osuser "os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/node/nodetest"
)

// refusedUp runs `parley up` where it must refuse to start, and returns
// the one line it printed.
func refusedUp(t *testing.T, home string, args ...string) string {
	t.Helper()
	cmd := exec.Command(parleyBin, append([]string{"--home", home, "up", "--no-mdns", "--listen", loopback}, args...)...)
	done := make(chan struct{})
	timer := time.AfterFunc(30*time.Second, func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
		}
	})
	defer timer.Stop()
	out, err := cmd.CombinedOutput()
	close(done)
	if err == nil {
		t.Fatalf("parley up started where it must refuse:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "parley: ") {
		t.Fatalf("parley up did not end with its error line:\n%s", out)
	}
	return last
}

// files lists dir's files (recursively, relative) with their sizes and
// times, but for the lock file.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "node.lock" { // holds the pid of each run
			return nil
		}
		out = append(out, fmt.Sprintf("%s:%d:%d", rel, fi.Size(), fi.ModTime().UnixNano()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// usedHome runs a node once in a new home, with a room and a message, and
// stops it: a home that ran a node.
func usedHome(t *testing.T) (home, room string) {
	t.Helper()
	home = filepath.Join(t.TempDir(), "h")
	d := up(t, home, "--listen", loopback)
	var r struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &r, "--home", home, "room", "create", "notes")
	if _, errs, code := run(t, "--home", home, "room", "say", r.RoomID, "remember this"); code != 0 {
		t.Fatalf("say: %s", errs)
	}
	stop(t, home, d)
	return home, r.RoomID
}

func stop(t *testing.T, home string, d *daemon) {
	t.Helper()
	if _, errs, code := run(t, "--home", home, "down"); code != 0 {
		t.Fatalf("down: %s", errs)
	}
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatalf("node exited with %v\n%s", err, d.stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("node did not stop")
	}
}

// A node never starts silently on an empty database or a new identity: a
// lost or damaged database, or a lost key, stops `parley up` with one line
// naming what is missing and the flag that chooses what to do, and Badger
// deletes nothing.
func TestCLIResetsRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		damage func(t *testing.T, home string)
		want   []string
	}{
		{"MANIFEST deleted", func(t *testing.T, home string) {
			must(t, os.Remove(filepath.Join(home, "data", "MANIFEST")))
		}, []string{"MANIFEST is missing", "--recover"}},
		{"MANIFEST cut to 8 bytes", func(t *testing.T, home string) {
			must(t, os.Truncate(filepath.Join(home, "data", "MANIFEST"), 8))
		}, []string{"MANIFEST lists no tables", "--recover"}},
		{"data deleted", func(t *testing.T, home string) {
			must(t, os.RemoveAll(filepath.Join(home, "data")))
		}, []string{"data is gone", "--recover"}},
		{"identity.key deleted", func(t *testing.T, home string) {
			must(t, os.Remove(filepath.Join(home, "identity.key")))
		}, []string{"identity.key is missing", "--new-identity"}},
		{"identity.key of another node", func(t *testing.T, home string) {
			key := filepath.Join(home, "identity.key")
			must(t, os.Remove(key))
			if _, err := identity.LoadOrCreate(key); err != nil {
				t.Fatal(err)
			}
		}, []string{"holds the database of node", "--recover"}},
		{"a database of a newer Parley", func(t *testing.T, home string) {
			must(t, os.WriteFile(filepath.Join(home, "data", "parley.schema"), []byte("parley schema 3\n"), 0o600))
		}, []string{"newer Parley", "schema 3", "nothing in the folder was changed"}},
		{"a table cut short", func(t *testing.T, home string) {
			ssts, _ := filepath.Glob(filepath.Join(home, "data", "*.sst"))
			if len(ssts) == 0 {
				t.Fatal("no table")
			}
			must(t, os.Truncate(ssts[0], 100))
		}, []string{"damaged", ".sst", "--recover"}},
	}
	template, _ := usedHome(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "h")
			if out, err := exec.Command("cp", "-a", template, home).CombinedOutput(); err != nil {
				t.Fatalf("copy the home: %v %s", err, out)
			}
			tc.damage(t, home)
			before := files(t, home)
			line := refusedUp(t, home)
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Fatalf("refusal does not name %q: %s", w, line)
				}
			}
			if after := files(t, home); !slices.Equal(before, after) {
				t.Fatalf("the refused start changed the home:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// --new-identity makes a new node on a home whose key is lost, keeping the
// old database aside.
func TestCLINewIdentityKeepsOldDataAside(t *testing.T) {
	t.Parallel()
	home, _ := usedHome(t)
	old := idOfStopped(t, home)
	must(t, os.Remove(filepath.Join(home, "identity.key")))
	if line := refusedUp(t, home, "--recover"); !strings.Contains(line, "--new-identity") {
		t.Fatalf("--recover without a key: %s", line)
	}
	d := up(t, home, "--listen", loopback, "--new-identity")
	if id := peerID(t, home); id == old || id == "" {
		t.Fatalf("new identity %q, old %q", id, old)
	}
	aside, _ := filepath.Glob(filepath.Join(home, "data.old-*", "*.sst"))
	if len(aside) == 0 {
		t.Fatal("the old database was not kept aside")
	}
	var rooms []map[string]any
	runJSON(t, &rooms, "--home", home, "room", "list")
	if len(rooms) != 0 {
		t.Fatalf("the new identity carries rooms over: %v", rooms)
	}
	stop(t, home, d)
	if line := refusedUp(t, home, "--new-identity"); !strings.Contains(line, "identity.key is present") {
		t.Fatalf("--new-identity with a key: %s", line)
	}
}

// idOfStopped starts a stopped home once to read its peer ID.
func idOfStopped(t *testing.T, home string) string {
	t.Helper()
	d := up(t, home, "--listen", loopback)
	id := peerID(t, home)
	stop(t, home, d)
	return id
}

// --recover on a lost database: the node keeps its identity, gets its room
// list, contacts and their addresses back from recovery.json, dials them
// with no bootstrap peer given, and refetches the room's events — its own
// included — from the other member before it posts.
func TestCLIRecoverRefetchesRooms(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	homeA, homeB := filepath.Join(base, "a"), filepath.Join(base, "b")
	a := up(t, homeA, "--listen", loopback)
	b := up(t, homeB, "--listen", loopback, "--bootstrap", a.addr())
	idA, idB := peerID(t, homeA), peerID(t, homeB)
	nodetest.WaitFor(t, 15*time.Second, func() bool {
		var peers []map[string]any
		runJSON(t, &peers, "--home", homeA, "peers")
		return len(peers) == 1
	}, "B to connect to A")
	befriend(t, homeA, homeB, idB)
	var room struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &room, "--home", homeA, "room", "create", "pair")
	if _, errs, code := run(t, "--home", homeA, "room", "invite", room.RoomID, idB); code != 0 {
		t.Fatalf("invite: %s", errs)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		_, _, code := run(t, "--home", homeB, "room", "say", room.RoomID, "from b")
		return code == 0
	}, "B to join and speak")
	run(t, "--home", homeA, "room", "say", room.RoomID, "from a")
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		return logHas(t, homeB, room.RoomID, "from a") && logHas(t, homeA, room.RoomID, "from b")
	}, "both messages on both nodes")
	stop(t, homeB, b)

	must(t, os.RemoveAll(filepath.Join(homeB, "data")))
	if line := refusedUp(t, homeB, "--bootstrap", a.addr()); !strings.Contains(line, "--recover") {
		t.Fatalf("lost database: %s", line)
	}
	up(t, homeB, "--listen", loopback, "--recover") // no bootstrap: A's address comes from recovery.json
	if peerID(t, homeB) != idB {
		t.Fatal("--recover changed the identity")
	}
	if stateOf(t, homeB, idA) != "active" {
		t.Fatalf("contact with A not restored: %+v", contactsOf(t, homeB))
	}
	// The refetch runs on the connection to A or, when that first sync comes
	// too early, on the next anti-entropy round (every 30 s): allow a few
	// rounds on a loaded machine.
	nodetest.WaitFor(t, 150*time.Second, func() bool {
		return logHas(t, homeB, room.RoomID, "from b") && logHas(t, homeB, room.RoomID, "from a")
	}, "B to refetch the room, its own message included")
	if _, errs, code := run(t, "--home", homeB, "room", "say", room.RoomID, "back again"); code != 0 {
		t.Fatalf("say after recovery: %s", errs)
	}
	nodetest.WaitFor(t, 20*time.Second, func() bool { return logHas(t, homeA, room.RoomID, "back again") },
		"A to take B's message after the recovery")
	asideRec, _ := filepath.Glob(filepath.Join(homeB, "recovery.json.before-recover-*"))
	if len(asideRec) != 1 {
		t.Fatalf("recovery file used not kept: %v", asideRec)
	}
}

// A home another user may write to (or owns) is refused by every command,
// before anything reads it or connects to its socket.
func TestCLIUnsafeHomeRefused(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	d := up(t, home, "--listen", loopback)
	must(t, os.Chmod(home, 0o777))
	for _, args := range [][]string{{"status"}, {"room", "list"}, {"down"}} {
		_, errs, code := run(t, append([]string{"--home", home}, args...)...)
		if code == 0 || !strings.Contains(errs, "can be written by other users") || !strings.Contains(errs, "chmod go-w") ||
			strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Fatalf("%v on a world-writable home: exit %d: %q", args, code, errs)
		}
	}
	must(t, os.Chmod(home, 0o700))
	stop(t, home, d)
	must(t, os.Chmod(home, 0o770))
	if line := refusedUp(t, home); !strings.Contains(line, "can be written by other users") {
		t.Fatalf("up on a group-writable home: %s", line)
	}
	must(t, os.Chmod(home, 0o755))
	d = up(t, home, "--listen", loopback) // readable by others is fine: the socket is 0600
	st, err := os.Stat(filepath.Join(home, "parley.sock"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v %v", st, err)
	}
	stop(t, home, d)

	if os.Geteuid() != 0 {
		t.Skip("a home owned by another user needs root to chown; run the tests as root to cover it")
	}
	must(t, os.Chown(home, 65534, 65534))
	if line := refusedUp(t, home); !strings.Contains(line, "belongs to user 65534") {
		t.Fatalf("up on another user's home: %s", line)
	}
	if _, errs, code := run(t, "--home", home, "status"); code == 0 || !strings.Contains(errs, "belongs to user 65534") {
		t.Fatalf("status on another user's home: %s", errs)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A home whose config an earlier Parley wrote with a handle holding a
// character that shows nothing (a Hangul filler, accepted then) still
// starts: up warns, saying what to do, and the node goes by the handle
// without it; `up --handle NEW` replaces it.
func TestCLIStartsWithAnOlderHandle(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	must(t, os.MkdirAll(home, 0o700))
	must(t, os.WriteFile(filepath.Join(home, "config"), []byte("handle = bob\u3164\nmdns = false\n"), 0o600))
	d := up(t, home, "--listen", loopback)
	// up warns on stderr before its ready line on stdout, but the test
	// reads the two pipes on goroutines of their own: wait for the warning.
	warned := func() bool {
		errs := d.stderr.String()
		return strings.Contains(errs, "line 1: handle \"bob\\u3164\" holds U+3164") && strings.Contains(errs, `goes by "bob"`) &&
			strings.Contains(errs, "parley up --handle NEW")
	}
	if !nodetest.Poll(10*time.Second, warned) {
		t.Fatalf("up printed no warning that says what to do:\n%s", d.stderr)
	}
	var info struct {
		Handle string `json:"handle"`
	}
	runJSON(t, &info, "--home", home, "id")
	if info.Handle != "bob" {
		t.Fatalf("the node goes by %+q, want bob", info.Handle)
	}
	stop(t, home, d)
	d = up(t, home, "--listen", loopback, "--handle", "bob2")
	runJSON(t, &info, "--home", home, "id")
	raw, err := os.ReadFile(filepath.Join(home, "config"))
	if err != nil || info.Handle != "bob2" || !strings.Contains(string(raw), "handle = bob2\n") || strings.ContainsRune(string(raw), '\u3164') {
		t.Fatalf("after up --handle bob2: %+q, config %q, %v", info.Handle, raw, err)
	}
	stop(t, home, d)
	if d = up(t, home, "--listen", loopback); strings.Contains(d.stderr.String(), "shows nothing") {
		t.Fatalf("the warning stays once the handle is replaced:\n%s", d.stderr)
	}
}

// A file of the home that is not the user's (a config a root shell
// provisioned) and that others can only read does not stop the start: up
// warns, naming the chown that lets the next start make it private (a
// chmod cannot). One that others can write stops the start, naming that
// chown. The node runs as another user than the file's.
func TestCLIHomeFileOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("files of another user need root to make; run the tests as root to cover it")
	}
	t.Parallel()
	const uid = 65534
	dir := t.TempDir()
	for d := dir; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()+"/"); d = filepath.Dir(d) {
		must(t, os.Chmod(d, 0o755)) // the other user reaches the binary and the home
	}
	bin := filepath.Join(dir, "parley")
	raw, err := os.ReadFile(parleyBin)
	must(t, err)
	must(t, os.WriteFile(bin, raw, 0o755))
	home := filepath.Join(dir, "h")
	must(t, os.Mkdir(home, 0o700))
	must(t, os.Chown(home, uid, uid))
	cfg := filepath.Join(home, "config")
	must(t, os.WriteFile(cfg, []byte("handle = nobody\nmdns = false\n"), 0o644)) // root's
	as := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, append([]string{"--home", home}, args...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		cmd.Env = append(os.Environ(), "HOME="+dir)
		return cmd
	}
	who := strconv.Itoa(uid)
	if u, err := osuser.LookupId(who); err == nil {
		who = u.Username
	}
	chown := "sudo chown " + who + " " + cfg
	d := upPrepared(t, as("up", "--no-mdns", "--listen", loopback))
	// Logged before the ready line, read on another goroutine: wait for it.
	if !nodetest.Poll(10*time.Second, func() bool {
		errs := d.stderr.String()
		return strings.Contains(errs, "cannot be made private") && strings.Contains(errs, chown)
	}) {
		t.Fatalf("up did not warn about root's config with a chown that works:\n%s", d.stderr)
	}
	if _, errs, code := runPrepared(t, as("down")); code != 0 {
		t.Fatalf("down: %s", errs)
	}
	<-d.done

	must(t, os.Chmod(cfg, 0o666))
	_, errs, code := runPrepared(t, as("up", "--no-mdns", "--listen", loopback))
	if code == 0 || !strings.Contains(errs, "other users can write it") || !strings.Contains(errs, chown) {
		t.Fatalf("up with a config of root's that others can write: exit %d: %s", code, errs)
	}
}

// `up -d` says what the node warned of at start, not only its log: a
// config another user could read (a group mode the user set), made private.
func TestCLIUpDetachedSaysWhatTheNodeWarned(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	must(t, os.MkdirAll(home, 0o700))
	cfg := filepath.Join(home, "config")
	must(t, os.WriteFile(cfg, []byte("handle = alice\nmdns = false\n"), 0o640))
	_, errs, code := run(t, "--home", home, "up", "-d", "--loopback")
	t.Cleanup(func() { run(t, "--home", home, "down") })
	if code != 0 || !strings.Contains(errs, "parley: the node warned:") || !strings.Contains(errs, "made private") || !strings.Contains(errs, cfg) {
		t.Fatalf("up -d: exit %d, %q; want the node's warning that the config was made private", code, errs)
	}
	if st, err := os.Stat(cfg); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("config after up -d: %v %v", st, err)
	}
}
