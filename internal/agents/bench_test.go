package agents_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/agents"
)

// BenchmarkLookup50 measures agent lookups in a 50-node in-process testnet
// on loopback: ten nodes hold an agent each, and every other node looks
// them up in turn. It reports the p50 and p99 latency of one lookup in
// milliseconds:
//
//	card-get      the DHT get of a card under /parley-agent/<peer>/<agent>
//	find-by-name  Find("agent:NAME"): provider lookup, then the DHT get
//	find-by-cap   Find("cap:CAP"): provider lookup, then /parley/cards/1
//
// Run: go test -run '^$' -bench Lookup50 -benchtime 300x ./internal/agents/
func BenchmarkLookup50(b *testing.B) {
	const nodes, owners = 50, 10
	nt := startNet(b, nodes)
	ctx := context.Background()
	for o := range owners {
		_, err := svc(nt, o*5).Register(ctx, agents.RegisterRequest{
			Name: fmt.Sprintf("agent-%d", o), Capabilities: []string{fmt.Sprintf("cap-%d", o)}, TTLSeconds: 3600,
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for o := range owners {
		nt.WaitFor(60*time.Second, func() bool {
			return hasCard(find(b, nt, (o*5+1)%nodes, fmt.Sprintf("cap-%d", o)), nt.ID(o*5), fmt.Sprintf("agent-%d", o))
		}, "agent-%d to be found", o)
	}

	run := func(b *testing.B, lookup func(searcher, owner int) bool) {
		var lat []time.Duration
		i := 0
		for b.Loop() {
			owner := i % owners
			searcher := (i/owners*7 + owner*5 + 1) % nodes
			if searcher == owner*5 {
				searcher = (searcher + 1) % nodes
			}
			i++
			start := time.Now()
			ok := lookup(searcher, owner)
			lat = append(lat, time.Since(start))
			if !ok {
				b.Fatalf("node %d did not find agent-%d", searcher, owner)
			}
		}
		slices.Sort(lat)
		ms := func(q float64) float64 {
			return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))]) / float64(time.Millisecond)
		}
		b.ReportMetric(ms(0.50), "p50-ms")
		b.ReportMetric(ms(0.99), "p99-ms")
	}
	b.Run("card-get", func(b *testing.B) {
		run(b, func(s, o int) bool {
			c, err := svc(nt, s).FindCard(ctx, nt.ID(o*5), identity.AgentName(fmt.Sprintf("agent-%d", o)))
			return err == nil && c != nil
		})
	})
	b.Run("find-by-name", func(b *testing.B) {
		run(b, func(s, o int) bool {
			cs, err := svc(nt, s).Find(ctx, fmt.Sprintf("agent:agent-%d", o))
			return err == nil && len(cs) == 1
		})
	})
	b.Run("find-by-cap", func(b *testing.B) {
		run(b, func(s, o int) bool {
			cs, err := svc(nt, s).Find(ctx, fmt.Sprintf("cap:cap-%d", o))
			return err == nil && len(cs) == 1
		})
	})
}
