package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A duration flag refused with "a duration needs a unit" shows a value
// that works: the value it suggests must itself be taken. For a number
// ParseFloat takes but that is no duration count ("inf", "nan", "1e30"),
// it suggests "--wait +Infs", "--wait NaNs", "--wait 1000…0s", none of
// which is a duration.
func TestReviewDurationFlagSuggestsAValueThatWorks(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "h")
	suggested := regexp.MustCompile(`--wait (\S+) \(units`)
	for _, bad := range []string{"inf", "nan", "1e30"} {
		_, errs, code := run(t, "--home", home, "inbox", "--wait", bad)
		m := suggested.FindStringSubmatch(errs)
		if code == 0 || m == nil {
			t.Errorf("--wait %s: exit %d, stderr %q: no suggested value", bad, code, errs)
			continue
		}
		if _, err := time.ParseDuration(m[1]); err != nil {
			t.Errorf("--wait %s: the error suggests --wait %s, which is not a duration (%v): %s", bad, m[1], err, strings.TrimSpace(errs))
		}
	}
}
