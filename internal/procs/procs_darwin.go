package procs

import "golang.org/x/sys/unix"

// parent reads pid's parent through sysctl kern.proc.pid.
func parent(pid int) (int, bool) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || k == nil || int(k.Proc.P_pid) != pid {
		return 0, false
	}
	return int(k.Eproc.Ppid), true
}
