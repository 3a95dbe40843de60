package board

import (
	"reflect"
	"unsafe"
)

// retained returns the bytes v reaches beyond its own size: its strings'
// bytes, its slices' arrays, its maps' entries, what its pointers point to
// (each once).
func retained(v reflect.Value, seen map[uintptr]bool) int { return walk(v, seen, false) }

// retainedOnce is retained counting each string's bytes and each slice's
// array once, however many values share them (a claim's paths are shared
// by its entry, its record and the held claims).
func retainedOnce(v reflect.Value, seen map[uintptr]bool) int { return walk(v, seen, true) }

func walk(v reflect.Value, seen map[uintptr]bool, once bool) int {
	switch v.Kind() {
	case reflect.String:
		if !once {
			return v.Len()
		}
		if v.Len() == 0 {
			return 0
		}
		p := uintptr(unsafe.Pointer(unsafe.StringData(v.String())))
		if seen[p] {
			return 0
		}
		seen[p] = true
		return v.Len()
	case reflect.Slice:
		if v.IsNil() {
			return 0
		}
		if once {
			p := v.Pointer()
			if seen[p] && v.Len() > 0 {
				return 0
			}
			seen[p] = true
		}
		n := v.Cap() * int(v.Type().Elem().Size())
		for i := range v.Len() {
			n += walk(v.Index(i), seen, once)
		}
		return n
	case reflect.Array:
		n := 0
		for i := range v.Len() {
			n += walk(v.Index(i), seen, once)
		}
		return n
	case reflect.Struct:
		n := 0
		for i := range v.NumField() {
			n += walk(v.Field(i), seen, once)
		}
		return n
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return 0
		}
		seen[v.Pointer()] = true
		return int(v.Type().Elem().Size()) + walk(v.Elem(), seen, once)
	case reflect.Map:
		n := 0
		for it := v.MapRange(); it.Next(); {
			n += int(v.Type().Key().Size()+v.Type().Elem().Size()) + walk(it.Key(), seen, once) + walk(it.Value(), seen, once)
		}
		return n
	}
	return 0
}

// HeldAhead returns how many entries of project key's board are held back
// as dated ahead of the clock, and the bytes held in memory for them
// (strings and slices: what a member chooses the size of).
func HeldAhead(s *Service, key string) (n, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[key]
	if p == nil {
		return 0, 0
	}
	return len(p.later), retained(reflect.ValueOf(p.later), map[uintptr]bool{})
}

// Projects returns how many projects the service keeps in memory.
func Projects(s *Service) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.projects)
}

// FoldedBytes returns how many claim and release entries project key's
// fold keeps, and the
// bytes they hold in memory: the raw body if kept, what was decoded of it,
// or the reason it was refused, and the event's names.
func FoldedBytes(s *Service, key string) (n, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[key]
	if p == nil {
		return 0, 0
	}
	seen := map[uintptr]bool{}
	for _, e := range p.state.entries {
		bytes += retained(reflect.ValueOf(e), seen)
		if e.Kind == KindClaim || e.Kind == KindRelease { // not the rooms' removals and invites
			n++
		}
	}
	return n, bytes
}

// Told returns how many notices the service remembers handing out.
func Told(s *Service) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.told)
}

// FoldTrimmed reports whether project key's fold let go of entries.
func FoldTrimmed(s *Service, key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[key]
	return p != nil && p.state.Trimmed()
}

// AheadReads returns how many entries held back as dated ahead the
// claims' check of s read from the store.
func AheadReads(s *Service) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aheadReads
}

// MaxAheadChecked is how many entries held back the claims' check reads.
const MaxAheadChecked = maxAheadChecked

// FoldMemory is what project key's fold holds in memory, by part (bytes,
// each shared string or array counted once, in the first part that
// reaches it, in this order).
type FoldMemory struct {
	Entries, Records, Held, Index, Checkpoints, Rest int
	NEntries, NHeld, NCheckpoints                    int
}

// Total is the sum of the parts.
func (m FoldMemory) Total() int {
	return m.Entries + m.Records + m.Held + m.Index + m.Checkpoints + m.Rest
}

// FoldRetained measures project key's fold, caught up to its entries.
func FoldRetained(s *Service, key string) FoldMemory {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[key]
	if p == nil {
		return FoldMemory{}
	}
	st := p.state
	st.catchUp()
	seen := map[uintptr]bool{}
	m := FoldMemory{NEntries: len(st.entries), NHeld: len(st.held), NCheckpoints: len(st.cps) + len(st.ahead)}
	m.Entries = retainedOnce(reflect.ValueOf(st.entries), seen) + retainedOnce(reflect.ValueOf(st.ids), seen)
	m.Records = retainedOnce(reflect.ValueOf(st.records), seen)
	m.Held = retainedOnce(reflect.ValueOf(st.held), seen)
	m.Index = retainedOnce(reflect.ValueOf(&st.idx), seen)
	m.Checkpoints = retainedOnce(reflect.ValueOf(st.cps), seen) + retainedOnce(reflect.ValueOf(st.ahead), seen)
	m.Rest = retainedOnce(reflect.ValueOf(st), seen)
	return m
}
