package testnet

import "errors"

var (
	// ErrUsage is returned when a Config asks for something impossible.
	ErrUsage = errors.New("testnet: bad parameters")
	// ErrNodeStart is returned when a node fails to start; the message says
	// which node and why.
	ErrNodeStart = errors.New("testnet: node failed to start")
	// ErrEnvironment is returned when the machine lacks what a mode needs
	// (root, the ip tool, netem, a Go toolchain to build parley).
	ErrEnvironment = errors.New("testnet: environment")
	// ErrUnsupported is returned when a scenario cannot run in a mode.
	ErrUnsupported = errors.New("testnet: not supported in this mode")
)
