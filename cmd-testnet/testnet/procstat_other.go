//go:build !linux

package testnet

import (
	"errors"
	"time"
)

type procUsage struct {
	CPU     time.Duration
	RSS     int64
	RSSAnon int64
	Threads int
	FDs     int
}

func readProc(int) (procUsage, error) { return procUsage{}, errors.New("/proc: not on this system") }

func loadAverage() float64 { return -1 }

func fdLimit() int { return 0 }
