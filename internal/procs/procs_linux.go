package procs

import (
	"os"
	"strconv"
	"strings"
)

// parent reads pid's parent from /proc/PID/stat: "PID (COMM) STATE PPID
// …", where COMM may hold spaces and parentheses, so the fields are read
// after the last ')'.
func parent(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	return parseStat(string(b))
}

// parseStat reads the parent from a /proc/PID/stat line.
func parseStat(s string) (int, bool) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}
