// Package store is Parley's Badger database: laptop-sized options and the
// whole key schema (keys.go). Everything a node persists lives in one Badger
// folder under the node's home.
package store
