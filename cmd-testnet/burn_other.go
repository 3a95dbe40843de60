//go:build !linux

package main

import "errors"

func burnChild() {}

func startBurn(n int) (func(), error) {
	return nil, errors.New("burn: -burn needs Linux")
}

func loadAvg() []float64 { return nil }
