package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// durationFlag defines a duration flag whose bad value is refused with a
// sentence that names the flag and shows a value that works ("--wait 3s"),
// rather than Go's "time: missing unit in duration". Every duration flag
// of the CLI is defined through it.
func durationFlag(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(&durationValue{p: p, name: name}, name, usage)
}

// durationValue is a pflag.Value for durationFlag.
type durationValue struct {
	p    *time.Duration
	name string
}

// String is the value as the help shows it; zero is "0", which the help
// leaves out as pflag's own duration flags do.
func (d *durationValue) String() string {
	if *d.p == 0 {
		return "0"
	}
	return d.p.String()
}

// Type is what the help shows after the flag, as for pflag's own.
func (d *durationValue) Type() string { return "duration" }

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(strings.TrimSpace(s))
	if err == nil {
		*d.p = v
		return nil
	}
	// pflag puts `invalid argument "3" for "--wait" flag:` before this.
	// The value with "s" added, when that is a duration (not inf, NaN,
	// or past what a duration holds).
	if n, nerr := strconv.ParseFloat(strings.TrimSpace(s), 64); nerr == nil {
		fix := strconv.FormatFloat(n, 'f', -1, 64) + "s"
		if _, perr := time.ParseDuration(fix); perr == nil {
			return fmt.Errorf("a duration needs a unit: --%s %s (units: ms, s, m, h; as in 500ms, 90s, 10m, 1h30m)", d.name, fix)
		}
	}
	return fmt.Errorf("not a duration: give a number with a unit, as in --%s 30s (units: ms, s, m, h; as in 500ms, 90s, 10m, 1h30m)", d.name)
}
