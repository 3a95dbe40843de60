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
	durationFlagIn(fs, p, name, value, time.Second, usage)
}

// durationFlagIn is durationFlag for a flag whose default is 0 (none) but
// whose values are counted in unit: the hint for a bare number uses it
// (`agent mute --for 10`: 10m, not 10s).
func durationFlagIn(fs *pflag.FlagSet, p *time.Duration, name string, value, unit time.Duration, usage string) {
	*p = value
	fs.Var(&durationValue{p: p, name: name, def: value, unit: unit}, name, usage)
}

// durationValue is a pflag.Value for durationFlag.
type durationValue struct {
	p    *time.Duration
	name string
	def  time.Duration // the default, whose unit a hint follows
	unit time.Duration // the unit of a hint when def is 0
}

// units are the units a hint may add to a bare number, largest first.
var units = []struct {
	d    time.Duration
	name string
}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}}

// hintUnit is the unit a bare number n of the flag most likely meant: that
// of its default as the help shows it (--ttl 30 with 30m by default:
// 30m), one smaller when that makes a value far past the default (--ttl
// 10 with 1h by default: 10m, not 10h); seconds for a default in none.
func (d *durationValue) hintUnit(n float64) string {
	i := len(units) - 1
	for j, u := range units {
		if d.def == 0 && u.d == d.unit || d.def > 0 && d.def%u.d == 0 {
			i = j
			break
		}
	}
	for d.def > 0 && i < len(units)-1 && n*float64(units[i].d) > 4*float64(d.def) {
		i++
	}
	return units[i].name
}

// example is a value the flag takes, to show: its default, else 30 of its
// unit.
func (d *durationValue) example() string {
	v := d.def
	if v <= 0 {
		v = 30 * d.unit
	}
	t := v.String() // 1h0m0s, 11h59m0s, 30s
	if strings.HasSuffix(t, "m0s") {
		t = strings.TrimSuffix(t, "0s")
	}
	if strings.HasSuffix(t, "h0m") {
		t = strings.TrimSuffix(t, "0m")
	}
	return t
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
	// The value with the flag's unit added, when that is a duration (not
	// inf, NaN, or past what a duration holds).
	if n, nerr := strconv.ParseFloat(strings.TrimSpace(s), 64); nerr == nil {
		fix := strconv.FormatFloat(n, 'f', -1, 64) + d.hintUnit(n)
		if _, perr := time.ParseDuration(fix); perr == nil {
			return fmt.Errorf("a duration needs a unit: --%s %s (units: ms, s, m, h; as in 500ms, 90s, 10m, 1h30m)", d.name, fix)
		}
	}
	return fmt.Errorf("not a duration: give a number with a unit, as in --%s %s (units: ms, s, m, h; as in 500ms, 90s, 10m, 1h30m)", d.name, d.example())
}
