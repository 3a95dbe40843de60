package install

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalid is returned (inside a *ConfigError) when a client's config
	// file is not valid in its format; nothing is changed.
	ErrInvalid = errors.New("install: invalid config file")
	// ErrConflict is returned when a config file holds something in the
	// place Parley's entry goes that Parley will not overwrite (a value of
	// another type, a server defined in another form); nothing is changed.
	ErrConflict = errors.New("install: conflicting entry")
	// ErrUnknownClient is returned for a client name Parley cannot install into.
	ErrUnknownClient = errors.New("install: unknown client")
	// ErrRaced is returned when a config file kept changing while Parley
	// tried to write it (the client rewrote it at the same moment).
	ErrRaced = errors.New("install: the file changed while it was being written")
	// ErrNotShell is returned (inside a *ConfigError) when an existing git
	// hook is a script in a language other than the shell's (the guard's
	// shell lines would break it), or one git cannot run (its #! line
	// ends in CRLF); nothing is changed.
	ErrNotShell = errors.New("install: the git hook is not a shell script")
	// ErrReadOnly is returned when a config file Parley would change is
	// read-only: someone made it so, and a rename would replace it anyway.
	ErrReadOnly = errors.New("install: read-only file")
	// ErrHardLinked is returned when a file Parley would change has other
	// names (hard links), which a replace would part from it.
	ErrHardLinked = errors.New("install: hard-linked file")
	// ErrNotRegular is returned when a config file Parley would read or
	// change is not a regular file (a device, such as a link to /dev/null;
	// a pipe): a rename would replace the device itself; nothing is changed.
	ErrNotRegular = errors.New("install: not a regular file")
	// ErrOtherHome is returned by an uninstall whose Parley home holds no
	// record of the install when Parley's entries name another home that
	// does: the uninstall belongs there; nothing is changed.
	ErrOtherHome = errors.New("install: the install was made with another Parley home")
	// ErrHomeProject is returned for the project scope when the project's
	// files would be the user's own config: the project folder is the
	// home folder (a new terminal's working folder), or a client's user
	// config folder is the project's (CODEX_HOME=PROJECT/.codex). Nothing
	// is changed; `parley doctor` checks no project there.
	ErrHomeProject = errors.New("install: no project here")
)

// ConfigError says which file, and where in it, a problem is. Line and
// Column count from 1; zero when unknown.
type ConfigError struct {
	Path   string
	Line   int
	Column int
	Msg    string
	Err    error // ErrInvalid or ErrConflict
}

func (e *ConfigError) Error() string {
	where := e.Path
	if where == "" {
		where = "config"
	}
	switch {
	case e.Line > 0 && e.Column > 0:
		where = fmt.Sprintf("%s: line %d, column %d", where, e.Line, e.Column)
	case e.Line > 0:
		where = fmt.Sprintf("%s: line %d", where, e.Line)
	}
	return where + ": " + e.Msg
}

func (e *ConfigError) Unwrap() error { return e.Err }

// withPath returns err with its Path set when it is a *ConfigError.
func withPath(err error, path string) error {
	var ce *ConfigError
	if errors.As(err, &ce) && ce.Path == "" {
		c := *ce
		c.Path = path
		return &c
	}
	return err
}
