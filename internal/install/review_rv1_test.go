package install

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// Install writes the full path of the parley program that runs it, whatever
// its file is called (`go build -o ~/bin/parley-dev ./cmd/parley`), but an
// uninstall run with another home than the install's recognises Parley's
// entries by the program's name being "parley" alone. So with such a
// program, uninstall from the wrong home does not say which uninstall to
// run: it reports the file "holds nothing of Parley's", calls Parley's own
// server entry "not Parley's own", and exits 0 having done nothing.
func TestUninstallWithAnotherHomeFindsAProgramNotNamedParley(t *testing.T) {
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
