package testnet

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is the kernel's USER_HZ, the unit of CPU times in
// /proc/PID/stat: 100 on every Linux architecture Go supports.
const clockTicks = 100

// procUsage is what /proc says a process uses.
type procUsage struct {
	CPU     time.Duration // user + system, so far
	RSS     int64         // resident bytes
	RSSAnon int64         // resident anonymous bytes (heap, stacks), without mapped files
	Threads int
	FDs     int // open files (sockets included)
}

// readProc reads /proc/PID/stat and /proc/PID/status (pid 0: this
// process).
func readProc(pid int) (procUsage, error) {
	dir := "/proc/self"
	if pid > 0 {
		dir = "/proc/" + strconv.Itoa(pid)
	}
	var u procUsage
	raw, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return u, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return u, fmt.Errorf("%s/stat: no command name", dir)
	}
	f := strings.Fields(string(raw[end+1:]))
	// f[0] is field 3 (state): utime is field 14, stime 15, num_threads 20.
	if len(f) < 18 {
		return u, fmt.Errorf("%s/stat: %d fields", dir, len(f)+2)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	th, err3 := strconv.Atoi(f[17])
	if err1 != nil || err2 != nil || err3 != nil {
		return u, fmt.Errorf("%s/stat: unreadable times", dir)
	}
	u.CPU = time.Duration(ut+st) * time.Second / clockTicks
	u.Threads = th
	if fds, err := os.ReadDir(dir + "/fd"); err == nil {
		u.FDs = len(fds)
	}
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return u, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &u.RSS
		case "RssAnon":
			dst = &u.RSSAnon
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return u, fmt.Errorf("%s/status: %s: %v", dir, k, err)
		}
		*dst = kb << 10
	}
	return u, nil
}

// loadAverage is the one-minute load average, -1 if unknown.
func loadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// fdLimit is how many files this process may open, 0 if unknown.
func fdLimit() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	return int(l.Cur)
}
