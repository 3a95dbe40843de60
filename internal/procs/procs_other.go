//go:build !linux && !darwin

package procs

// parent is not known here: the chain is empty.
func parent(int) (int, bool) { return 0, false }
