package install

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// Regression: Parley's entries were told by their program being named
// parley, but an install writes the full path of the program that runs it
// whatever its name (`go build -o ~/bin/parley-dev`): an uninstall from
// another home than the install's then did nothing and exited 0. Entries
// shaped as Parley's whose home's record names their program now count,
// and the uninstall names the install's home.
func TestUninstallFromAnotherHomeTellsAProgramNotNamedParley(t *testing.T) {
	for _, c := range Clients {
		t.Run(string(c), func(t *testing.T) {
			env := testEnv(t)
			o := opts(c, User)
			o.Command = "/opt/parley/bin/parley-dev"
			o.Args = []string{"--home", env.ParleyHome}
			mustInstall(t, env, o)
			installed := snapshot(t, env.Home)

			other := env
			other.ParleyHome = filepath.Join(t.TempDir(), "other-home")
			p, err := Uninstall(other, c, User)
			if err == nil {
				err = p.Apply()
			}
			if !errors.Is(err, ErrOtherHome) || !strings.Contains(err.Error(), "parley --home "+env.ParleyHome+" uninstall "+string(c)) {
				notes := ""
				if p != nil {
					notes = strings.Join(p.Notes, "; ")
				}
				t.Errorf("uninstall with another home than the install's: err %v, notes %q; want ErrOtherHome naming the install's home", err, notes)
			}
			sameSnapshot(t, installed, snapshot(t, env.Home))
		})
	}
}
