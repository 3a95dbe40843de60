package board

import (
	"slices"
	"strings"
)

// heldIndex finds, among the held claims, those a path may overlap: a
// claim whose literal prefix is a prefix of the path's, or begins with it
// (overlap needs one or the other). It keeps the order the claims were
// taken in, which is the order of State.held: conflict answers the first
// one that overlaps.
type heldIndex struct {
	by   map[string][]*Held // by literal prefix
	keys []string           // the prefixes in by, sorted
	lens map[int]int        // how many keys have each length
	ls   []int              // the lengths in lens, ascending
	pos  map[*Held]int      // the order each was taken in
	next int
}

// reset indexes held, in its order.
func (x *heldIndex) reset(held []*Held) {
	x.by, x.pos, x.next = make(map[string][]*Held, len(held)), make(map[*Held]int, len(held)), len(held)
	x.keys, x.lens, x.ls = x.keys[:0], map[int]int{}, x.ls[:0]
	for i, h := range held {
		if _, ok := x.by[h.prefix]; !ok {
			x.keys = append(x.keys, h.prefix)
			x.keyLen(len(h.prefix), 1)
		}
		x.by[h.prefix] = append(x.by[h.prefix], h)
		x.pos[h] = i
	}
	slices.Sort(x.keys)
}

// keyLen counts a key of length n in (d 1) or out (d -1).
func (x *heldIndex) keyLen(n, d int) {
	x.lens[n] += d
	switch i, found := slices.BinarySearch(x.ls, n); {
	case x.lens[n] == 0:
		delete(x.lens, n)
		x.ls = slices.Delete(x.ls, i, i+1)
	case !found:
		x.ls = slices.Insert(x.ls, i, n)
	}
}

func (x *heldIndex) add(h *Held) {
	hs, ok := x.by[h.prefix]
	if !ok {
		i, _ := slices.BinarySearch(x.keys, h.prefix)
		x.keys = slices.Insert(x.keys, i, h.prefix)
		x.keyLen(len(h.prefix), 1)
	}
	x.by[h.prefix] = append(hs, h)
	x.pos[h] = x.next
	x.next++
}

func (x *heldIndex) remove(h *Held) {
	hs := x.by[h.prefix]
	if i := slices.Index(hs, h); i >= 0 {
		hs = slices.Delete(hs, i, i+1)
	}
	if len(hs) > 0 {
		x.by[h.prefix] = hs
	} else {
		delete(x.by, h.prefix)
		if i, ok := slices.BinarySearch(x.keys, h.prefix); ok {
			x.keys = slices.Delete(x.keys, i, i+1)
			x.keyLen(len(h.prefix), -1)
		}
	}
	delete(x.pos, h)
}

// find returns the holder's own claim on the path of key k, if held: on
// the very same path once compared as overlaps are (key: in lower case
// and NFC), so that a claim of README.md renews one of readme.md.
func (x *heldIndex) find(holder, k string) *Held {
	for _, h := range x.by[literalPrefix(k)] {
		if h.Holder == holder && h.key == k {
			return h
		}
	}
	return nil
}

// first returns the first claim taken, among those of other agents than
// holder that expire after ms, that overlaps one of the paths of keys
// (their key forms).
func (x *heldIndex) first(holder string, keys []string, ms int64) *Held {
	var best *Held
	bestPos := 0
	consider := func(p, pp string, hs []*Held) {
		for _, h := range hs {
			if h.Expires <= ms || h.Holder == holder {
				continue
			}
			if pos := x.pos[h]; (best == nil || pos < bestPos) && overlap(p, pp, h.key, h.prefix) {
				best, bestPos = h, pos
			}
		}
	}
	for _, p := range keys {
		pp := literalPrefix(p)
		for _, l := range x.ls { // held prefixes that are prefixes of pp
			if l > len(pp) {
				break
			}
			if hs, ok := x.by[pp[:l]]; ok {
				consider(p, pp, hs)
			}
		}
		i, _ := slices.BinarySearch(x.keys, pp)
		for ; i < len(x.keys) && strings.HasPrefix(x.keys[i], pp); i++ { // and those that begin with it
			if len(x.keys[i]) > len(pp) {
				consider(p, pp, x.by[x.keys[i]])
			}
		}
	}
	return best
}
