package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoopbackHomeRestartHint: the hint that tells a person to start the
// node of a home that last ran with --loopback (`up -d --loopback`, or the
// node parley mcp starts) keeps --loopback: a plain `up` would listen on
// every interface the config names (0.0.0.0 and ::), announce itself over
// mDNS and ask the router for a port mapping. A plain up of such a home
// says so before it starts, and from then on the hint is the plain one.
func TestLoopbackHomeRestartHint(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	if _, errs, code := run(t, "--home", home, "up", "-d", "--loopback"); code != 0 {
		t.Fatalf("up -d --loopback: %s", errs)
	}
	if _, errs, code := run(t, "--home", home, "down"); code != 0 {
		t.Fatalf("down: %s", errs)
	}
	_, errs, code := run(t, "--home", home, "status")
	if code == 0 {
		t.Fatalf("status with the node down: exit 0")
	}
	if want := "`parley --home " + home + " up -d --loopback`"; !strings.Contains(errs, want) {
		t.Errorf("the hint for a home that ran with --loopback: %q, want it to say %s", errs, want)
	}

	// A start without --loopback (here still on 127.0.0.1 alone, as tests
	// must) is warned of, and is then how the node last ran.
	_, errs, code = run(t, "--home", home, "up", "-d", "--listen", loopback, "--no-mdns")
	if code != 0 {
		t.Fatalf("up -d --listen: %s", errs)
	}
	if !strings.Contains(errs, "last ran with --loopback") || !strings.Contains(errs, "up -d --loopback`") {
		t.Errorf("a start without --loopback of a home that last ran with it does not say so: %q", errs)
	}
	if _, err := os.Stat(filepath.Join(home, "loopback.ports")); !os.IsNotExist(err) {
		t.Errorf("loopback.ports after a start without --loopback: %v, want it gone", err)
	}
	if _, errs, code := run(t, "--home", home, "down"); code != 0 {
		t.Fatalf("down: %s", errs)
	}
	_, errs, _ = run(t, "--home", home, "status")
	if want := "(start one with `parley --home " + home + " up`)"; !strings.Contains(errs, want) {
		t.Errorf("the hint after a start without --loopback: %q, want %s", errs, want)
	}
}

// TestUpRefusedLeavesNoHome: an up refused for its flags creates nothing:
// no home folder, no config, no log.
func TestUpRefusedLeavesNoHome(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--log-level", "bogus"},
		{"--min-free-disk", "lots"},
		{"--recover", "--new-identity"},
		{"--loopback", "--listen", loopback},
		{"--listen", "not-an-address"},
		{"--bootstrap", "/ip4/127.0.0.1/tcp/1"},
		{"--handle", "bad handle\x07"},
	} {
		for _, detach := range []bool{false, true} {
			home := filepath.Join(t.TempDir(), "new")
			a := append([]string{"--home", home, "up"}, args...)
			if detach {
				a = append(a, "-d")
			}
			_, errs, code := run(t, a...)
			if code == 0 {
				run(t, "--home", home, "down")
				t.Errorf("parley %q: exit 0, want a refusal", a)
				continue
			}
			if _, err := os.Stat(home); !os.IsNotExist(err) {
				t.Errorf("parley %q (refused: %q) left the home behind (%v)", a, strings.TrimSpace(errs), err)
			}
		}
	}
}

// TestUpOfARunningLoopbackHomeSaysNoStart: an `up` without --loopback of
// a home that last ran with it, while the home's node runs, is refused; it
// does not say first that "this start without it listens on …" (before, it
// warned before it found the home in use), in the foreground or with -d.
func TestUpOfARunningLoopbackHomeSaysNoStart(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	if _, errs, code := run(t, "--home", home, "up", "-d", "--loopback"); code != 0 {
		t.Fatalf("up -d --loopback: %s", errs)
	}
	t.Cleanup(func() { run(t, "--home", home, "down") })
	for _, detach := range []bool{true, false} {
		args := []string{"--home", home, "up", "--listen", loopback, "--no-mdns"}
		if detach {
			args = append(args, "-d")
		}
		_, errs, code := run(t, args...)
		if code == 0 {
			t.Fatalf("parley %q with the home's node running: exit 0", args)
		}
		if strings.Contains(errs, "this start without it listens on") {
			t.Errorf("parley %q, refused (the node runs), says it starts and where it will listen:\n%s", args, errs)
		}
	}
}
