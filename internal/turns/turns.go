// Package turns orders items in turns by their source, so that a source
// with many items (a node flooding asks) cannot push back another's.
package turns

import "strings"

// Order returns items in turns by source: each source's first item, then
// each one's second, and so on; the sources in the order of their first
// item, each source's items in the order given.
func Order[T any](items []T, source func(T) string) []T {
	var sources []string
	by := map[string][]T{}
	for _, it := range items {
		s := source(it)
		if _, ok := by[s]; !ok {
			sources = append(sources, s)
		}
		by[s] = append(by[s], it)
	}
	out := make([]T, 0, len(items))
	for k := 0; len(out) < len(items); k++ {
		for _, s := range sources {
			if k < len(by[s]) {
				out = append(out, by[s][k])
			}
		}
	}
	return out
}

// Node is the node of an address NAME@NODE, what follows its last '@'
// (the whole address when it has none).
func Node(addr string) string {
	return addr[strings.LastIndexByte(addr, '@')+1:]
}
