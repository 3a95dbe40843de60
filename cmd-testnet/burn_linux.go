//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// burnEnv names the CPU a burner child spins on.
const burnEnv = "PARLEY_TESTNET_BURN_CPU"

// burnChild spins forever on the CPU burnEnv names, if it is set: the
// process is then a burner started by startBurn, not a testnet.
func burnChild() {
	v, ok := os.LookupEnv(burnEnv)
	if !ok {
		return
	}
	cpu, err := strconv.Atoi(v)
	if err != nil {
		os.Exit(2)
	}
	runtime.GOMAXPROCS(1)
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		fmt.Fprintf(os.Stderr, "cmd-testnet burner: pin to CPU %d: %v\n", cpu, err)
	}
	parent := os.Getppid()
	x := uint64(1)
	for i := uint64(1); ; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		if x == 0 {
			fmt.Println(x) // never: keeps the loop from being optimized away
		}
		if i%(1<<24) == 0 && os.Getppid() != parent {
			os.Exit(0) // the testnet is gone
		}
	}
}

// startBurn starts n processes that each keep one CPU busy (CPU i mod the
// machine's CPUs), as other programs on a loaded machine would, and returns
// a function that stops them. They die with the testnet.
func startBurn(n int) (func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("burn: %w", err)
	}
	var cmds []*exec.Cmd
	stop := func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	for i := range n {
		c := exec.Command(self)
		c.Env = append(os.Environ(), fmt.Sprintf("%s=%d", burnEnv, i%runtime.NumCPU()))
		c.Stderr = os.Stderr
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("burn: start a burner: %w", err)
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}

// loadAvg returns the machine's load averages over 1, 5 and 15 minutes.
func loadAvg() []float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil
	}
	var a, b, c float64
	if _, err := fmt.Sscanf(string(raw), "%g %g %g", &a, &b, &c); err != nil {
		return nil
	}
	return []float64{a, b, c}
}
