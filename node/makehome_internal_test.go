package node

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/parley-mesh/parley/internal/audit"
)

// A home that does not exist when it is checked, made by another user (a
// folder others may write to, under /tmp say) before the node creates it,
// is refused before anything is written there: MkdirAll took a folder that
// was there, and the node wrote its key, lock and database into it. Both
// ways in that create a home (New, AuditHome) are covered.
func TestHomeMadeByAnotherBetweenCheckAndCreateIsRefused(t *testing.T) {
	old := afterHomeCheck
	t.Cleanup(func() { afterHomeCheck = old })
	afterHomeCheck = func(home string) {
		// Another user's folder, open to all, made in the window.
		if err := os.Mkdir(home, 0o777); err != nil {
			t.Error(err)
		}
		if err := os.Chmod(home, 0o777); err != nil {
			t.Error(err)
		}
	}
	for name, start := range map[string]func(home string) error{
		"New": func(home string) error {
			n, err := New(Config{Home: home, NoLocalAPI: true})
			if err == nil {
				n.Close()
			}
			return err
		},
		"AuditHome": func(home string) error {
			return AuditHome(home, audit.Record{Action: "install", Actor: "test", Subject: "x"})
		},
	} {
		t.Run(name, func(t *testing.T) {
			home := filepath.Join(t.TempDir(), "h")
			err := start(home)
			if !errors.Is(err, ErrHomeUnsafe) {
				t.Fatalf("a home others may write to, made after the check: %v, want ErrHomeUnsafe", err)
			}
			if ents, _ := os.ReadDir(home); len(ents) != 0 {
				t.Fatalf("written into it: %v", ents)
			}
		})
	}
}
