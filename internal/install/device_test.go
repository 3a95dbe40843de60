package install

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestInstallRefusesAConfigThatIsADevice: a config file linked to a null
// device (ln -s /dev/null ~/.claude.json: the client's writes go nowhere)
// is no file Parley can edit. Before, install read it as empty and
// replaced the device itself with a regular file by its rename: run as
// root (a container's user, or after the refusal's advice to "run the
// install as its owner"), `parley install claude` replaced the system's
// /dev/null. Install refuses it, and the device stays.
func TestInstallRefusesAConfigThatIsADevice(t *testing.T) {
	env := testEnv(t)
	dev := filepath.Join(t.TempDir(), "null")
	if err := unix.Mknod(dev, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("cannot make a device node here (needs root): %v", err)
	}
	if err := os.Symlink(dev, filepath.Join(env.Home, ".claude.json")); err != nil {
		t.Fatal(err)
	}
	p, err := Install(env, opts(Claude, User))
	if err == nil {
		err = p.Apply()
	}
	fi, serr := os.Stat(dev)
	if serr != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("the device %s was replaced (mode %v, %v); install: %v", dev, fi.Mode(), serr, err)
	}
	if err == nil || !errors.Is(err, ErrNotRegular) {
		t.Fatalf("install through a link to a device: %v, want ErrNotRegular", err)
	}
	if _, err := Uninstall(env, Claude, User); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("uninstall through a link to a device: %v, want ErrNotRegular", err)
	}
}
