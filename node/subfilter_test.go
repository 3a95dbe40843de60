package node

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func subOpt(topic string, subscribe bool) *pb.RPC_SubOpts {
	return &pb.RPC_SubOpts{Topicid: &topic, Subscribe: &subscribe}
}

func topicsOf(subs []*pb.RPC_SubOpts) []string {
	out := make([]string, len(subs))
	for i, s := range subs {
		out[i] = s.GetTopicid()
		if !s.GetSubscribe() {
			out[i] = "-" + out[i]
		}
	}
	return out
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestSubFilter: own topics and unsubscriptions always pass; a peer keeps
// at most MaxForeignTopics other topics, counted as a set; a long topic
// is dropped; the count goes with the peer's last connection, and none
// starts for a peer with no connection. The filter never fails an RPC.
func TestSubFilter(t *testing.T) {
	const ownTopic = "/parley/room/own"
	var mu sync.Mutex
	conns := map[peer.ID]bool{"a": true, "b": true}
	f := newSubFilter(func(s string) bool { return s == ownTopic },
		func(p peer.ID) bool { mu.Lock(); defer mu.Unlock(); return conns[p] },
		slog.New(slog.DiscardHandler))
	filter := func(p peer.ID, subs ...*pb.RPC_SubOpts) []string {
		t.Helper()
		out, err := f.FilterIncomingSubscriptions(p, subs)
		if err != nil {
			t.Fatalf("the filter failed an RPC: %v", err)
		}
		return topicsOf(out)
	}
	junk := func(k int) string { return fmt.Sprintf("/junk/%d", k) }

	var subs []*pb.RPC_SubOpts
	for k := range MaxForeignTopics + 10 {
		subs = append(subs, subOpt(junk(k), true))
	}
	subs = append(subs, subOpt(ownTopic, true), subOpt(junk(0), true), subOpt(strings.Repeat("x", maxTopicLen+1), true))
	got := filter("a", subs...)
	if len(got) != MaxForeignTopics+2 || got[MaxForeignTopics-1] != junk(MaxForeignTopics-1) ||
		got[MaxForeignTopics] != ownTopic || got[MaxForeignTopics+1] != junk(0) {
		t.Fatalf("kept %d topics (…%v); want the first %d, the own topic and a repeat", len(got), got[max(0, len(got)-3):], MaxForeignTopics)
	}
	if c := f.counted("a"); c != MaxForeignTopics {
		t.Fatalf("counted %d topics for a, want %d", c, MaxForeignTopics)
	}
	if v := counterValue(t, f.overCap); v != 10 {
		t.Fatalf("over_cap %v, want 10", v)
	}
	if v := counterValue(t, f.tooLong); v != 1 {
		t.Fatalf("too_long %v, want 1", v)
	}

	// Full: a new topic is dropped, the own topic and a repeat pass; an
	// unsubscription passes and frees a place.
	if got := filter("a", subOpt("/junk/new", true), subOpt(ownTopic, true), subOpt(junk(5), true)); strings.Join(got, " ") != ownTopic+" "+junk(5) {
		t.Fatalf("full peer kept %v", got)
	}
	if got := filter("a", subOpt(junk(5), false), subOpt("/never/announced", false), subOpt("/junk/new", true)); strings.Join(got, " ") != "-"+junk(5)+" -/never/announced /junk/new" {
		t.Fatalf("after an unsubscription the peer kept %v", got)
	}
	// Another peer has its own count.
	if got := filter("b", subOpt(junk(MaxForeignTopics+1), true)); len(got) != 1 {
		t.Fatalf("another peer kept %v", got)
	}

	// A closed connection with another still open keeps the count.
	f.forget("a")
	if c := f.counted("a"); c != MaxForeignTopics {
		t.Fatalf("counted %d topics for a while still connected, want %d", c, MaxForeignTopics)
	}
	mu.Lock()
	conns["a"] = false
	mu.Unlock()
	f.forget("a")
	if c := f.counted("a"); c != 0 {
		t.Fatalf("counted %d topics for a after its last connection closed", c)
	}
	// A late RPC of a peer gone: own topics only, and no count starts.
	if got := filter("a", subOpt(junk(1), true), subOpt(ownTopic, true)); strings.Join(got, " ") != ownTopic {
		t.Fatalf("a peer with no connection kept %v", got)
	}
	if c := f.counted("a"); c != 0 {
		t.Fatalf("a count started for a peer with no connection: %d", c)
	}
	if v := counterValue(t, f.disconnected); v != 1 {
		t.Fatalf("disconnected %v, want 1", v)
	}
	// Nothing dropped: the RPC's own slice comes back.
	in := []*pb.RPC_SubOpts{subOpt(ownTopic, true)}
	if out, _ := f.FilterIncomingSubscriptions("a", in); &out[0] != &in[0] {
		t.Fatal("an RPC with nothing dropped was copied")
	}
}
