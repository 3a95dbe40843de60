package usage

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestCountsAndBoundedLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	m := New(Config{Registry: reg, MaxLabels: 3, Interval: time.Second, Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	m.Posted("alice", "r1", 10, false)
	m.Posted("alice", "r1", 5, true)
	m.Answered("bob", "r1", 4*time.Second)
	m.Answered("bob", "r1", 2*time.Second)
	m.Spent("alice", 100, -1, -1)
	m.Cached("alice", 30, -1)
	for i := range 10 {
		m.Posted(fmt.Sprint("flood-", i), fmt.Sprint("room-", i), 1, false)
	}
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	m.Posted("alice", "r1", 1, false)

	s := m.Snapshot()
	if len(s.Agents) != 4 || len(s.Rooms) != 4 { // 3 names + other
		t.Fatalf("agents %+v rooms %+v", s.Agents, s.Rooms)
	}
	byName := map[string]Counts{}
	for _, c := range s.Agents {
		byName[c.Name] = c
	}
	a, b, o := byName["alice"], byName["bob"], byName[Other]
	if a.Messages != 3 || a.Bytes != 16 || a.AsksMade != 1 || a.TokensIn == nil || *a.TokensIn != 100 || a.TokensOut != nil || a.CostUSD != nil {
		t.Fatalf("alice %+v", a)
	}
	if a.CacheRead == nil || *a.CacheRead != 30 || a.CacheWrite != nil {
		t.Fatalf("alice's cache %+v", a)
	}
	if b.AsksAnswered != 2 || b.AnswerSecs != 3 || b.TokensIn != nil {
		t.Fatalf("bob %+v", b)
	}
	if o.Messages != 9 {
		t.Fatalf("other %+v", o)
	}
	if len(s.Recent) != History || s.Recent[History-1] != 1 || s.Recent[History-3] != 12 {
		t.Fatalf("recent %v", s.Recent)
	}
	if n := len(series(t, reg, "parley_agent_messages_total")); n != 3 { // alice, flood-0, other
		t.Fatalf("%d agent series, want 3 (bounded)", n)
	}
	if n := len(series(t, reg, "parley_room_messages_total")); n != 4 {
		t.Fatalf("%d room series, want 4 (bounded)", n)
	}
	if v := series(t, reg, "parley_agent_answers_total")["bob"]; v != 2 {
		t.Fatalf("bob answered %v, want 2", v)
	}
	// A second meter on the same registry (a restarted node) counts on.
	m2 := New(Config{Registry: reg})
	m2.Answered("bob", "r1", time.Second)
	if v := series(t, reg, "parley_agent_answers_total")["bob"]; v != 3 {
		t.Fatalf("after a restart: %v answers, want 3", v)
	}
	var nilMeter *Meter
	nilMeter.Posted("x", "y", 1, true)
	if s := nilMeter.Snapshot(); s.Agents == nil {
		t.Fatal("nil meter snapshot")
	}
}

// series returns the counter values of the family name by their first label.
func series(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	return out
}
