package atomicfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMain lets a test run this binary as a process that dies while it
// creates a file (PARLEY_TEST_DIE_CREATING names the file).
func TestMain(m *testing.M) {
	if path := os.Getenv("PARLEY_TEST_DIE_CREATING"); path != "" {
		beforeCommit = func() { os.Exit(3) }
		_ = CreateNew(path, []byte("a key"), 0o600)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestCreateNew(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "key.json")
	if err := CreateNew(path, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CreateNew(path, []byte("two"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a second create: %v, want fs.ErrExist", err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(b, []byte("one")) {
		t.Fatalf("the file holds %q (%v), want the first write", b, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Fatalf("%d files in the folder, want the key alone", len(es))
	}
}

// TestCreateNewKilled: a process killed after writing and before the file
// took its name leaves no file at the path (a partial key file was left,
// which no command would overwrite or could read), and the next create
// works.
func TestCreateNewKilled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key.json")
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), "PARLEY_TEST_DIE_CREATING="+path)
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("the process that dies while creating: %v, want exit status 3", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a file is at the path after the crash: %v", err)
	}
	if es, _ := os.ReadDir(filepath.Dir(path)); len(es) != 1 {
		t.Fatalf("%d files after the crash, want its temporary file alone", len(es))
	}
	if err := CreateNew(path, []byte("again"), 0o600); err != nil {
		t.Fatalf("create after the crash: %v", err)
	}
	// The temporary file the crash left (a copy of the key) is gone.
	if es, _ := os.ReadDir(filepath.Dir(path)); len(es) != 1 || es[0].Name() != "key.json" {
		t.Fatalf("files after the next create: %v, want key.json alone", es)
	}
}

func TestReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	for _, want := range []string{"first", "second"} {
		if err := Replace(path, []byte(want), 0o600); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Fatalf("the file holds %q (%v), want %q", b, err, want)
		}
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Fatalf("%d files in the folder, want the file alone", len(es))
	}
}
