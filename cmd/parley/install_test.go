package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/parley-mesh/parley/internal/install"
	"github.com/parley-mesh/parley/node/nodetest"
)

// userDirs is a fake user: a home folder (with no Parley home in it yet)
// and a project folder.
type userDirs struct {
	home, project string
	env           []string // more of the environment, NAME=VALUE
}

func newUser(t *testing.T) userDirs {
	t.Helper()
	root := t.TempDir()
	u := userDirs{home: filepath.Join(root, "home"), project: filepath.Join(root, "project")}
	for _, d := range []string{u.home, u.project, filepath.Join(u.project, ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// put copies a file from internal/install/testdata into the fake home.
func (u userDirs) put(t *testing.T, rel, testdata string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "internal", "install", "testdata", testdata))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(u.home, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs parley as this user, in a subfolder of the project.
func (u userDirs) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	sub := filepath.Join(u.project, "src")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(parleyBin, args...)
	cmd.Dir = sub
	// GORACE carries TestMain's atexit_sleep_ms=0 (each call slept a second
	// at its exit without it).
	cmd.Env = append([]string{"HOME=" + u.home, "PATH=" + os.Getenv("PATH"), "GORACE=" + os.Getenv("GORACE")}, u.env...)
	return runPrepared(t, cmd)
}

func readAll(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCLIInstallDryRunTwiceDoctorUninstall(t *testing.T) {
	t.Parallel()
	u := newUser(t)
	settings := u.put(t, ".gemini/settings.json", "gemini-settings.json")
	orig := readAll(t, settings)

	out, errs, code := u.run(t, "install", "gemini", "--dry-run")
	if code != 0 || !strings.Contains(out, "+\t\t\"parley\": {") || !strings.Contains(out, "--- a"+settings) {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errs)
	}
	if readAll(t, settings) != orig {
		t.Fatal("--dry-run changed the file")
	}
	if _, err := os.Stat(filepath.Join(u.home, ".parley")); !os.IsNotExist(err) {
		t.Fatalf("--dry-run wrote into the Parley home: %v", err)
	}

	out, errs, code = u.run(t, "install", "gemini")
	if code != 0 || !strings.Contains(out, "updated "+settings) {
		t.Fatalf("install: exit %d\n%s\n%s", code, out, errs)
	}
	after := readAll(t, settings)
	if !strings.Contains(after, `"command": "`+parleyBin+`"`) || !strings.Contains(after, "// I like vim") {
		t.Fatalf("after install:\n%s", after)
	}
	out, _, code = u.run(t, "install", "gemini")
	if code != 0 || !strings.Contains(out, "already holds Parley's entries") || readAll(t, settings) != after {
		t.Fatalf("second install: exit %d\n%s", code, out)
	}

	var plan struct {
		Client    string   `json:"client"`
		Unchanged []string `json:"unchanged"`
		DryRun    bool     `json:"dry_run"`
	}
	jout, _, _ := u.run(t, "install", "gemini", "--dry-run", "--json")
	if err := json.Unmarshal([]byte(jout), &plan); err != nil || plan.Client != "gemini" || !plan.DryRun || len(plan.Unchanged) != 1 {
		t.Fatalf("--json: %v %+v\n%s", err, plan, jout)
	}

	out, errs, code = u.run(t, "doctor")
	if code != 0 || !strings.Contains(out, "ok   gemini (user): Parley's entries are intact") || !strings.Contains(out, "node: ") {
		t.Fatalf("doctor: exit %d\n%s\n%s", code, out, errs)
	}

	// A broken file: doctor says where, and exits 1.
	if err := os.WriteFile(settings, []byte(strings.Replace(after, `"ui": {`, `"ui": `, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = u.run(t, "doctor")
	if code != 1 || !strings.Contains(out, "FAIL gemini (user): "+settings+": line 7") {
		t.Fatalf("doctor on a broken file: exit %d\n%s", code, out)
	}
	var rep struct {
		OK       bool `json:"ok"`
		Findings []struct {
			Level string `json:"level"`
		} `json:"findings"`
	}
	jout, _, code = u.run(t, "doctor", "--json")
	if err := json.Unmarshal([]byte(jout), &rep); err != nil || rep.OK || code != 1 {
		t.Fatalf("doctor --json: %v %+v exit %d", err, rep, code)
	}
	if err := os.WriteFile(settings, []byte(after), 0o644); err != nil {
		t.Fatal(err)
	}

	out, _, code = u.run(t, "uninstall", "gemini", "--dry-run")
	if code != 0 || !strings.Contains(out, "-\t\t\"parley\": {") || readAll(t, settings) != after {
		t.Fatalf("uninstall --dry-run: exit %d\n%s", code, out)
	}
	out, errs, code = u.run(t, "uninstall", "gemini")
	if code != 0 || !strings.Contains(out, "restored "+settings) {
		t.Fatalf("uninstall: exit %d\n%s\n%s", code, out, errs)
	}
	if readAll(t, settings) != orig {
		t.Fatalf("after uninstall:\n%s", readAll(t, settings))
	}
	out, _, code = u.run(t, "uninstall", "gemini")
	if code != 0 || !strings.Contains(out, "holds nothing of Parley's") {
		t.Fatalf("second uninstall: exit %d\n%s", code, out)
	}
	// Both changes are in the home's audit log (the second runs changed
	// nothing and are not), and it verifies.
	out, _, code = u.run(t, "audit")
	if code != 0 || strings.Count(out, " install ") != 1 || strings.Count(out, " uninstall ") != 1 || !strings.Contains(out, "gemini") {
		t.Fatalf("audit after install and uninstall: exit %d\n%s", code, out)
	}
	out, errs, code = u.run(t, "audit", "verify")
	if code != 0 {
		t.Fatalf("audit verify: exit %d\n%s\n%s", code, out, errs)
	}
	// export: one JSON entry a line, with its hash and signature.
	out, _, code = u.run(t, "audit", "export")
	if ls := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(ls) != 2 || !strings.Contains(ls[0], `"n":1`) || !strings.Contains(ls[0], `"sig"`) {
		t.Fatalf("audit export: exit %d\n%s", code, out)
	}
	// An entry edited by hand is named by verify.
	logPath := filepath.Join(u.home, ".parley", "audit.log")
	raw, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	ls := strings.SplitAfter(string(raw), "\n")
	if len(ls) < 2 || !strings.Contains(ls[1], "gemini") {
		t.Fatalf("audit.log:\n%s", raw)
	}
	ls[1] = strings.Replace(ls[1], "gemini", "gemjni", 1)
	if err := os.WriteFile(logPath, []byte(strings.Join(ls, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code = u.run(t, "audit", "verify")
	if code != 1 || !strings.Contains(out, "BAD at entry 2") {
		t.Fatalf("audit verify of an edited entry: exit %d\n%s", code, out)
	}
}

func TestCLIInstallProjectAndRefusal(t *testing.T) {
	t.Parallel()
	u := newUser(t)
	// --project goes to the repository's top folder and writes "parley".
	out, errs, code := u.run(t, "install", "claude", "--project")
	mcp := filepath.Join(u.project, ".mcp.json")
	if code != 0 || !strings.Contains(out, "created "+mcp) || !strings.Contains(out, "approve") {
		t.Fatalf("install --project: exit %d\n%s\n%s", code, out, errs)
	}
	if s := readAll(t, mcp); !strings.Contains(s, `"command": "parley"`) {
		t.Fatalf(".mcp.json:\n%s", s)
	}
	// parley is not on this PATH: doctor says so.
	out, _, code = u.run(t, "doctor")
	if code != 1 || !strings.Contains(out, "not on PATH") {
		t.Fatalf("doctor: exit %d\n%s", code, out)
	}
	out, _, code = u.run(t, "uninstall", "claude", "--project")
	if _, err := os.Stat(mcp); code != 0 || !os.IsNotExist(err) {
		t.Fatalf("uninstall --project: exit %d %v\n%s", code, err, out)
	}

	// A home of one's own is not written into the project's shared files
	// (a path of this machine's is wrong on every other), and the output
	// says so, and that parley is not on PATH.
	mine := filepath.Join(t.TempDir(), "my-parley")
	out, errs, code = u.run(t, "--home", mine, "install", "claude", "--project")
	if code != 0 || !strings.Contains(out, "PARLEY_HOME="+mine) || !strings.Contains(out, "not on your PATH") {
		t.Fatalf("install --project --home: exit %d\n%s\n%s", code, out, errs)
	}
	for _, f := range []string{mcp, filepath.Join(u.project, ".claude", "settings.json")} {
		if s := readAll(t, f); strings.Contains(s, mine) || strings.Contains(s, "--home") {
			t.Fatalf("%s names a home:\n%s", f, s)
		}
	}
	if out, errs, code = u.run(t, "--home", mine, "--json", "uninstall", "claude", "--project"); code != 0 {
		t.Fatalf("uninstall --project --home: exit %d\n%s\n%s", code, out, errs)
	}
	// Nothing left to take out: "changes" is an empty list, not null.
	out, errs, code = u.run(t, "--home", mine, "--json", "uninstall", "claude", "--project")
	var plan map[string]any
	if err := json.Unmarshal([]byte(out), &plan); code != 0 || err != nil {
		t.Fatalf("uninstall --json: exit %d %v\n%s\n%s", code, err, out, errs)
	}
	if ch, ok := plan["changes"].([]any); !ok || len(ch) != 0 {
		t.Fatalf(`uninstall --json: "changes" = %#v, want []`, plan["changes"])
	}

	// --dir names a project: refused without --project, and a folder that
	// is not there is not made.
	if _, errs, code = u.run(t, "install", "claude", "--dir", u.project); code == 0 || !strings.Contains(errs, "use it with --project") {
		t.Fatalf("install --dir without --project: exit %d\n%s", code, errs)
	}
	gone := filepath.Join(t.TempDir(), "no-such-project")
	if _, errs, code = u.run(t, "install", "claude", "--project", "--dir", gone); code == 0 || !strings.Contains(errs, gone) {
		t.Fatalf("install --project --dir MISSING: exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Fatalf("the missing project folder was made: %v", err)
	}

	// An invalid config.toml is refused with its line, and kept.
	bad := "model = \"o3\"\n\n[mcp_servers.docs\ncommand = \"x\"\n"
	p := filepath.Join(u.home, ".codex", "config.toml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, code = u.run(t, "install", "codex")
	if code == 0 || !strings.Contains(errs, p+": line 3") {
		t.Fatalf("install into a bad config.toml: exit %d\n%s", code, errs)
	}
	if readAll(t, p) != bad {
		t.Fatal("the bad file changed")
	}
	_, errs, code = u.run(t, "install", "vim")
	if code == 0 || !strings.Contains(errs, "unknown client") {
		t.Fatalf("install vim: exit %d %s", code, errs)
	}
}

// An uninstall that does not find the files an install wrote (it ran with
// CLAUDE_CONFIG_DIR) says so and keeps the record, so that the uninstall
// that finds them puts back the user's own entry.
func TestCLIUninstallKeepsTheRecordOfFilesElsewhere(t *testing.T) {
	t.Parallel()
	u := newUser(t)
	cc := filepath.Join(u.home, "cc")
	p := filepath.Join(cc, ".claude.json")
	orig := "{\n  \"mcpServers\": {\n    \"parley\": {\"command\": \"parley\", \"args\": [\"mcp\"]}\n  }\n}\n"
	if err := os.MkdirAll(cc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	withDir := u
	withDir.env = []string{"CLAUDE_CONFIG_DIR=" + cc}
	if out, errs, code := withDir.run(t, "install", "claude"); code != 0 || !strings.Contains(out, "updated "+p) {
		t.Fatalf("install: exit %d\n%s\n%s", code, out, errs)
	}
	out, errs, code := u.run(t, "uninstall", "claude")
	if code != 0 || strings.Contains(out, "not installed") || !strings.Contains(out, p) || !strings.Contains(out, "CLAUDE_CONFIG_DIR") {
		t.Fatalf("uninstall without CLAUDE_CONFIG_DIR: exit %d\n%s\n%s", code, out, errs)
	}
	if out, errs, code := withDir.run(t, "uninstall", "claude"); code != 0 || !strings.Contains(out, p) {
		t.Fatalf("uninstall: exit %d\n%s\n%s", code, out, errs)
	}
	if got := readAll(t, p); got != orig {
		t.Fatalf("after uninstall:\n%s", got)
	}
}

func TestCLIDoctorNode(t *testing.T) {
	t.Parallel()
	u := newUser(t)
	home := filepath.Join(u.home, "ph")
	up(t, home, "--listen", loopback)
	out, errs, code := u.run(t, "--home", home, "doctor")
	if code != 0 || !strings.Contains(out, "ok   node: running") {
		t.Fatalf("doctor with a node: exit %d\n%s\n%s", code, out, errs)
	}
	// A config the running node read at start, edited since into one the
	// next start refuses.
	cfg := filepath.Join(home, "config")
	good, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(good, "ui_port = x\nwat = 1\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code = u.run(t, "--home", home, "doctor")
	if code != 1 || !strings.Contains(out, "FAIL node: "+cfg) || !strings.Contains(out, "ui_port must be a port number") {
		t.Fatalf("doctor with a broken config: exit %d\n%s", code, out)
	}
	// Every fault, each on a line of its own (it gave the first only).
	if !strings.Contains(out, `unknown key "wat"`) || strings.Count(out, "FAIL node: "+cfg) != 2 {
		t.Fatalf("doctor with two faults in the config:\n%s", out)
	}
	if err := os.WriteFile(cfg, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o777); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(home, 0o700)
	out, _, code = u.run(t, "--home", home, "doctor")
	if code != 1 || !strings.Contains(out, "writable by others") {
		t.Fatalf("doctor with an open home: exit %d\n%s", code, out)
	}
}

// Codex, end to end: install into real-looking files (comments, other
// servers, other hooks) writes notify and the hooks; the commands as
// written, run the way Codex runs them (notify with the notification as
// its last argument, hooks through the shell with JSON on stdin), reach the
// node: the idle thread's ask is told to the human at once, and the
// PostToolUse hook carries it into the agent's next tool result. Uninstall
// puts both files back byte for byte.
func TestCLIInstallCodexRunsWhatItWrote(t *testing.T) {
	t.Parallel()
	u := newUser(t)
	config := u.put(t, ".codex/config.toml", "codex-config.toml")
	hooks := u.put(t, ".codex/hooks.json", "codex-hooks.json")
	origConfig, origHooks := readAll(t, config), readAll(t, hooks)
	home := filepath.Join(u.home, "parley")
	up(t, home, "--listen", loopback)
	if out, errs, code := u.run(t, "--home", home, "install", "codex"); code != 0 {
		t.Fatalf("install: exit %d\n%s\n%s", code, out, errs)
	}
	var cfg struct {
		Notify []string `toml:"notify"`
	}
	if err := toml.Unmarshal([]byte(readAll(t, config)), &cfg); err != nil {
		t.Fatal(err)
	}
	want := []string{parleyBin, "--home", home, "hook", "codex", "notify"}
	if strings.Join(cfg.Notify, " ") != strings.Join(want, " ") {
		t.Fatalf("notify = %q, want %q", cfg.Notify, want)
	}
	var hk struct {
		Hooks map[string][]struct {
			Hooks []struct{ Command string } `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(readAll(t, hooks)), &hk); err != nil {
		t.Fatal(err)
	}
	command := func(event string) string {
		for _, g := range hk.Hooks[event] {
			for _, h := range g.Hooks {
				if strings.Contains(h.Command, " hook codex "+event) {
					return h.Command
				}
			}
		}
		t.Fatalf("no Parley %s hook in %+v", event, hk)
		return ""
	}
	post := command("PostToolUse")

	// Codex finishes a turn: notify runs with the notification appended.
	note := `{"type":"agent-turn-complete","thread-id":"th-1","turn-id":"1","cwd":"` + u.project + `","client":"codex-tui","input-messages":["hi"],"last-assistant-message":"hello"}`
	if out, err := exec.Command(cfg.Notify[0], append(cfg.Notify[1:], note)...).CombinedOutput(); err != nil {
		t.Fatalf("notify: %v\n%s", err, out)
	}
	var room struct {
		RoomID string `json:"room_id"`
	}
	runJSON(t, &room, "--home", home, "room", "create", "ci", "--member", "codex-project")
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		out, _, _ := run(t, "--home", home, "who")
		return strings.Contains(out, "codex-project") && strings.Contains(out, "NOT REACHED: 1")
	}, "the idle thread's invitation to be told to the human")

	// The next turn's first tool result carries it.
	sh := exec.Command("sh", "-c", post)
	sh.Stdin = strings.NewReader(`{"session_id":"th-1","turn_id":"2","cwd":"` + u.project + `","hook_event_name":"PostToolUse","model":"gpt-5","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":"a","tool_use_id":"c1"}`)
	out, err := sh.Output()
	if v := decodeHook(t, string(out)); err != nil || !strings.Contains(v.HookSpecificOutput.AdditionalContext, room.RoomID) {
		t.Fatalf("PostToolUse as written (%s): %v %+v", post, err, v)
	}

	if out, errs, code := u.run(t, "--home", home, "uninstall", "codex"); code != 0 {
		t.Fatalf("uninstall: exit %d\n%s\n%s", code, out, errs)
	}
	if readAll(t, config) != origConfig || readAll(t, hooks) != origHooks {
		t.Fatalf("after uninstall:\n%s\n%s", readAll(t, config), readAll(t, hooks))
	}
}

// Installs run one at a time: six at once leave one record that says which
// files Parley created, so an uninstall removes them (it left a "{}"
// settings.json when each install recorded the file the others had made).
func TestCLIInstallsAtOnce(t *testing.T) {
	t.Parallel()
	u := newUser(t)
	before := snapshotFiles(t, u.home)
	var wg sync.WaitGroup
	errs := make([]string, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, e, code := u.run(t, "install", "claude"); code != 0 {
				errs[i] = fmt.Sprintf("exit %d\n%s\n%s", code, out, e)
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Fatalf("install: %s", e)
		}
	}
	if out, e, code := u.run(t, "uninstall", "claude"); code != 0 {
		t.Fatalf("uninstall: exit %d\n%s\n%s", code, out, e)
	}
	after := snapshotFiles(t, u.home)
	for p, b := range after {
		if strings.HasPrefix(p, filepath.Join(u.home, ".parley")) {
			continue // the home Parley made, with its record and backups
		}
		if before[p] != b {
			t.Errorf("%s after install ×6 and uninstall: %q (before: %q)", p, b, before[p])
		}
	}
}

// snapshotFiles reads every file under dir.
func snapshotFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Install and uninstall say where the copies of the files are only when
// they made one: a file Parley creates has none.
func TestCLIInstallNamesCopiesOnlyWhenItMadeThem(t *testing.T) {
	t.Parallel()
	u := newUser(t)
	backups := filepath.Join(u.home, ".parley", "install", "backup")
	settings := filepath.Join(u.home, ".gemini", "settings.json")
	out, errs, code := u.run(t, "install", "gemini")
	if code != 0 || !strings.Contains(out, "created "+settings) || strings.Contains(out, "copies") {
		t.Fatalf("install into an empty home: exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(backups); !os.IsNotExist(err) {
		t.Fatalf("a backup folder with nothing to keep: %v", err)
	}
	// Regression: the uninstall that removes a file Parley created, as it
	// wrote it, said "copies of the files as they were are in …" of a copy
	// of Parley's own text. It keeps no copy of it now, and says none.
	out, errs, code = u.run(t, "uninstall", "gemini")
	if code != 0 || !strings.Contains(out, "removed "+settings) || strings.Contains(out, "copies") {
		t.Fatalf("uninstall of a file Parley created: exit %d\n%s\n%s", code, out, errs)
	}
	if ents, err := os.ReadDir(filepath.Join(backups, "gemini-user")); len(ents) != 0 {
		t.Fatalf("copies of a file that held Parley's text alone: %v %v", ents, err)
	}
	// A file that was there is copied before the install changes it.
	u2 := newUser(t)
	u2.put(t, ".gemini/settings.json", "gemini-settings.json")
	out, errs, code = u2.run(t, "install", "gemini")
	want := filepath.Join(u2.home, ".parley", "install", "backup", "gemini-user")
	if code != 0 || !strings.Contains(out, "copies of the files as they were are in "+want) {
		t.Fatalf("install into a file of the user's: exit %d\n%s\n%s", code, out, errs)
	}
	if ents, err := os.ReadDir(want); err != nil || len(ents) == 0 {
		t.Fatalf("the copies named are not there: %v %v", ents, err)
	}
	// The uninstall that puts the user's file back copies it first.
	out, errs, code = u2.run(t, "uninstall", "gemini")
	if code != 0 || !strings.Contains(out, "restored") || !strings.Contains(out, "copies of the files as they were are in "+want) {
		t.Fatalf("uninstall from a file of the user's: exit %d\n%s\n%s", code, out, errs)
	}
}

// An uninstall with another home than the install's changes nothing and
// names the uninstall that puts the files back as they were (before, it
// took Parley's entries out of a settings.json Parley had created and left
// "{}" behind, and the install's record still said installed).
func TestCLIUninstallWithAnotherHome(t *testing.T) {
	t.Parallel()
	u := newUser(t)
	x := filepath.Join(t.TempDir(), "x")
	settings := filepath.Join(u.home, ".gemini", "settings.json")
	if out, errs, code := u.run(t, "--home", x, "install", "gemini"); code != 0 || !strings.Contains(out, "created "+settings) {
		t.Fatalf("install --home: exit %d\n%s\n%s", code, out, errs)
	}
	installed := readAll(t, settings)
	_, errs, code := u.run(t, "uninstall", "gemini")
	if code == 0 || !strings.Contains(errs, "parley --home "+x+" uninstall gemini") || !strings.Contains(errs, "nothing was changed") {
		t.Fatalf("uninstall with another home: exit %d\n%s", code, errs)
	}
	if readAll(t, settings) != installed {
		t.Fatalf("the refused uninstall changed %s", settings)
	}
	if out, errs, code := u.run(t, "--home", x, "uninstall", "gemini"); code != 0 || !strings.Contains(out, "removed "+settings) {
		t.Fatalf("uninstall --home: exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(u.home, ".gemini")); !os.IsNotExist(err) {
		t.Fatalf("after the uninstall with the install's home: %v", err)
	}
}

// The hard-link refusal says to apply the changes of --dry-run by hand:
// --dry-run prints them, with a note that applying them is refused, and
// only the install that writes is refused.
func TestCLIDryRunShowsTheChangesToAHardLinkedFile(t *testing.T) {
	t.Parallel()
	u := newUser(t)
	settings := u.put(t, ".gemini/settings.json", "gemini-settings.json")
	orig := readAll(t, settings)
	if err := os.Link(settings, filepath.Join(u.home, "dotfiles-gemini.json")); err != nil {
		t.Fatal(err)
	}
	_, errs, code := u.run(t, "install", "gemini")
	if code == 0 || !strings.Contains(errs, "hard links") || !strings.Contains(errs, "--dry-run") {
		t.Fatalf("install into a hard-linked file: exit %d\n%s", code, errs)
	}
	out, errs, code := u.run(t, "install", "gemini", "--dry-run")
	if code != 0 || !strings.Contains(out, "+\t\t\"parley\": {") || !strings.Contains(out, "note: applying this is refused") {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errs)
	}
	if readAll(t, settings) != orig {
		t.Fatal("the file changed")
	}
}

// doctor checks the git guard's hooks as it checks the clients' files:
// each hook is there, holds the guard as install wrote it, and is one git
// runs; each fault is a FAIL saying what to do.
func TestCLIDoctorChecksTheGitGuard(t *testing.T) {
	t.Parallel()
	repo, _ := twoClones(t)
	home := filepath.Join(t.TempDir(), "h")
	env := []string{"GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + t.TempDir()}
	if out, errs, code := runEnv(t, repo, env, "--home", home, "install", "git-guard"); code != 0 {
		t.Fatalf("install git-guard: exit %d\n%s\n%s", code, out, errs)
	}
	hooks := filepath.Join(repo, ".git", "hooks")
	pre, merge := filepath.Join(hooks, "pre-commit"), filepath.Join(hooks, "pre-merge-commit")
	good, goodMerge := readAll(t, pre), readAll(t, merge)
	write := func(path, text string) {
		t.Helper()
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	doctor := func(when string, wantCode int, want string) {
		t.Helper()
		out, errs, code := runEnv(t, repo, env, "--home", home, "doctor")
		if code != wantCode || !strings.Contains(out, want) {
			t.Fatalf("doctor, %s: exit %d (want %d), no %q in\n%s\n%s", when, code, wantCode, want, out, errs)
		}
	}
	doctor("after install", 0, "ok   git-guard (project): the guard is intact in "+pre+", "+merge)

	const fail = "FAIL git-guard (project): "
	for _, c := range []struct {
		name  string
		spoil func()
		want  string
	}{
		{"not executable", func() {
			if err := os.Chmod(pre, 0o644); err != nil {
				t.Fatal(err)
			}
		}, fail + pre + " is not executable (mode 0644), so git does not run it and commits go unguarded: chmod +x " + pre},
		{"a CRLF #! line", func() { write(pre, strings.ReplaceAll(good, "\n", "\r\n")) }, fail + pre + ": the hook's #! line ends in CRLF"},
		{"not a shell script", func() { write(pre, "#!/usr/bin/env python3\n"+strings.TrimPrefix(good, "#!/bin/sh\n")) }, fail + pre + " is a python3 script"},
		{"the guard taken out", func() { write(merge, "#!/bin/sh\n") }, fail + merge + " no longer holds the guard's lines, so merges that commit by themselves go unguarded: run `parley install git-guard` again"},
		{"the guard edited", func() { write(pre, strings.Replace(good, " || exit 1", "", 1)) }, fail + pre + ": the guard's lines were changed by hand"},
		{"the program gone", func() { write(pre, strings.ReplaceAll(good, parleyBin, "/nonexistent/parley")) }, fail + pre + ": the guard points at /nonexistent/parley, which does not exist"},
		{"missing", func() {
			if err := os.Remove(pre); err != nil {
				t.Fatal(err)
			}
		}, fail + pre + " is missing, so commits go unguarded: run `parley install git-guard` again"},
		{"a link to nothing", func() {
			if err := os.Remove(pre); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(t.TempDir(), "gone"), pre); err != nil {
				t.Fatal(err)
			}
		}, fail + pre + " is a symbolic link to "},
	} {
		c.spoil()
		doctor(c.name, 1, c.want)
		write(pre, good)
		write(merge, goodMerge)
	}
	doctor("with the hooks put back", 0, "ok   git-guard (project): the guard is intact")

	// A hooks folder moved since the install (core.hooksPath): the guard
	// is missing where git looks, and the old hooks are named.
	gitIn(t, repo, "config", "core.hooksPath", "hooks2")
	doctor("with core.hooksPath moved", 1, fail+filepath.Join(repo, "hooks2", "pre-commit")+" is missing")
	doctor("with core.hooksPath moved", 1, "note git-guard (project): "+pre+", "+merge+" hold the guard too, but git runs the hooks of "+filepath.Join(repo, "hooks2")+" now")
	gitIn(t, repo, "config", "--unset", "core.hooksPath")

	// No guard installed: doctor says nothing of it.
	if out, errs, code := runEnv(t, repo, env, "--home", home, "uninstall", "git-guard"); code != 0 {
		t.Fatalf("uninstall git-guard: exit %d\n%s\n%s", code, out, errs)
	}
	if out, _, _ := runEnv(t, repo, env, "--home", home, "doctor"); strings.Contains(out, "git-guard") {
		t.Fatalf("doctor after uninstall git-guard:\n%s", out)
	}
}

// doctor gives git the time it gives the node check: a git that hangs (a
// stale network mount) does not hold it, and a repository git does not
// answer for (one it refuses: safe.directory) is said to be unchecked
// rather than passed over. A stand-in git on PATH plays both.
func TestCLIDoctorDoesNotWaitForGit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, script, want string
	}{
		// Not exec: the sleep, a process git started, holds its output.
		{"hangs", "#!/bin/sh\nsleep 10\n", "git did not answer within 1s"},
		{"refuses", "#!/bin/sh\necho \"fatal: detected dubious ownership in repository at '$PWD'\" >&2\nexit 128\n", "dubious ownership"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			bin := t.TempDir()
			if err := os.WriteFile(filepath.Join(bin, "git"), []byte(c.script), 0o755); err != nil {
				t.Fatal(err)
			}
			repo := t.TempDir()
			if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			env := []string{"PATH=" + bin + string(filepath.ListSeparator) + os.Getenv("PATH"), "HOME=" + t.TempDir()}
			start := time.Now()
			out, errs, _ := runEnv(t, repo, env, "--home", filepath.Join(t.TempDir(), "h"), "--timeout", "1s", "doctor")
			took := time.Since(start)
			if took > 6*time.Second {
				t.Fatalf("doctor took %s with a git that hangs", took)
			}
			if !strings.Contains(out, "note git-guard (project): the git guard of "+repo+" is not checked: ") || !strings.Contains(out, c.want) {
				t.Fatalf("doctor:\n%s\n%s", out, errs)
			}
		})
	}
}

// TestCLIDoctorChecksTheInstallsHome: `parley --home X install CLIENT`
// writes `parley --home X mcp` (and hooks with --home X) into the client's
// files. `parley --home X doctor` checks those entries and X's node; a plain
// `parley doctor` (~/.parley) says the entries run with X and how to check
// them, where it said they were intact and checked ~/.parley's node, which
// the clients do not use. And the other way round: entries of a plain
// install, checked by a doctor given another home.
func TestCLIDoctorChecksTheInstallsHome(t *testing.T) {
	t.Parallel()
	u := newUser(t)
	x := filepath.Join(t.TempDir(), "x")
	up(t, x, "--listen", loopback)
	clients := []string{"claude", "codex", "gemini"}
	for _, c := range clients {
		if out, errs, code := u.run(t, "--home", x, "install", c); code != 0 {
			t.Fatalf("install %s --home: exit %d\n%s\n%s", c, code, out, errs)
		}
	}

	out, errs, code := u.run(t, "--home", x, "doctor")
	if code != 0 || !strings.Contains(out, "ok   node: running") || strings.Contains(out, "doctor checks") {
		t.Fatalf("doctor --home X: exit %d\n%s\n%s", code, out, errs)
	}
	for _, c := range clients {
		if !strings.Contains(out, "ok   "+c+" (user): Parley's entries are intact") {
			t.Errorf("doctor --home X does not find %s's entries intact:\n%s", c, out)
		}
	}
	var rep struct {
		Findings []install.Finding `json:"findings"`
	}
	jout, _, _ := u.run(t, "--home", x, "doctor", "--json")
	if err := json.Unmarshal([]byte(jout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, jout)
	}
	for _, f := range rep.Findings {
		if strings.HasPrefix(f.Msg, "node: ") && f.Path != x {
			t.Errorf("doctor --home X checked the node of %s: %+v", f.Path, f)
		}
	}

	out, errs, code = u.run(t, "doctor")
	if code != 0 || strings.Contains(out, "entries are intact") || strings.Contains(out, "not installed in any client") {
		t.Fatalf("plain doctor of installs made with --home X: exit %d\n%s\n%s", code, out, errs)
	}
	for _, c := range clients {
		want := "warn " + c + " (user): "
		i := strings.Index(out, want)
		if i < 0 || !strings.Contains(out[i:], "run parley with the home "+x) || !strings.Contains(out[i:], "parley --home "+x+" doctor") {
			t.Errorf("plain doctor does not say %s's entries run with %s, and how to check them:\n%s", c, x, out)
		}
	}

	// A plain install (~/.parley), and a doctor given another home, that
	// records no install.
	v := newUser(t)
	if out, errs, code := v.run(t, "install", "gemini"); code != 0 {
		t.Fatalf("install gemini: exit %d\n%s\n%s", code, out, errs)
	}
	y := filepath.Join(t.TempDir(), "y")
	out, _, _ = v.run(t, "--home", y, "doctor")
	def := filepath.Join(v.home, ".parley")
	if strings.Contains(out, "entries are intact") || !strings.Contains(out, "with the home "+def) || !strings.Contains(out, "parley --home "+def+" doctor") {
		t.Errorf("doctor --home Y of an install made with ~/.parley:\n%s", out)
	}
}

// doctor's hints to start the node name the home it checked, and the
// --loopback a home last ran with: a plain `parley up` would start the
// default home's node (on every interface), not this one.
func TestCLIDoctorStartHintNamesTheHome(t *testing.T) {
	t.Parallel()
	u := newUser(t)
	home := filepath.Join(u.home, "ph")
	out, errs, code := u.run(t, "--home", home, "doctor")
	if want := "(`parley --home " + home + " up`, or the first parley mcp"; code != 0 || !strings.Contains(out, want) {
		t.Fatalf("doctor of a home not made yet: exit %d, want %q\n%s\n%s", code, want, out, errs)
	}
	if out, errs, code := u.run(t, "--home", home, "up", "-d", "--loopback"); code != 0 {
		t.Fatalf("up -d --loopback: exit %d\n%s\n%s", code, out, errs)
	}
	if out, errs, code := u.run(t, "--home", home, "down"); code != 0 {
		t.Fatalf("down: exit %d\n%s\n%s", code, out, errs)
	}
	out, errs, code = u.run(t, "--home", home, "doctor")
	if want := "or run `parley --home " + home + " up -d --loopback`)"; code != 0 || !strings.Contains(out, want) {
		t.Fatalf("doctor of a stopped --loopback home: exit %d, want %q\n%s\n%s", code, want, out, errs)
	}
}
