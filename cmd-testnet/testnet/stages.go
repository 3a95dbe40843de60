package testnet

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/rooms"
)

// Stages is where a delivery's time goes: for each stage of an event's way
// from the sender's Say to an agent on the receiver, the time since the
// Say call and since the stage before, over every delivery that passed all
// of them. The stages are, on the sender, published (handed to GossipSub)
// and durable (the batch holding the event is fsynced: it runs beside the
// publishing, off the delivery's path, so its step is from published and
// the next stage's step is from published too); on the receiver,
// validated (passed the topic validator), stored (its batch written) and
// visible (handed to the room's subscribers). Timestamps come from the
// rooms' trace hook (rooms.Config.Trace), in-process nodes only.
type Stages struct {
	// Deliveries is the number of deliveries the figures cover.
	Deliveries int `json:"deliveries"`
	// BySync counts deliveries that reached the receiver by anti-entropy
	// (stored without passing the validator); they are not in the figures.
	BySync int `json:"by_sync,omitempty"`
	// Incomplete counts deliveries that lack another stage (their send was
	// not recorded, or a stage fell outside the measured window).
	Incomplete int `json:"incomplete,omitempty"`
	// Clamped counts deliveries with a stage stamped before the one before
	// it (a receiver can validate an event before the sender's Publish
	// returns): such a stamp is taken as equal to the one before.
	Clamped int          `json:"clamped,omitempty"`
	Stages  []StageTimes `json:"stages"`
}

// StageTimes is one stage's times, in milliseconds.
type StageTimes struct {
	Stage string `json:"stage"`
	// Node is where the stage happens: "sender" or "receiver".
	Node string `json:"node"`
	// SinceSend is the time from the Say call to this stage; Step the
	// time from the stage before (the Say call for the first).
	SinceSend *Latency `json:"since_send"`
	Step      *Latency `json:"step"`
}

// stageOrder is the stages in the order events pass them.
var stageOrder = [...]rooms.Stage{rooms.StagePublished, rooms.StageDurable, rooms.StageValidated, rooms.StageStored, rooms.StageVisible}

// offPath is the index in stageOrder of the stage beside the delivery's
// path (durable): the stage after it steps from the one before it.
const offPath = 1

// stageRec is one trace callback.
type stageRec struct {
	id    rooms.ID
	stage rooms.Stage
	at    time.Time
}

type sendRec struct {
	node int
	at   time.Time
}

// stageLog collects the rooms' trace callbacks of a cluster's nodes while
// it is on; it appends under a per-node lock and does the sums at the end.
type stageLog struct {
	on    atomic.Bool
	nodes []stageNode

	mu   sync.Mutex // protects sent
	sent map[rooms.ID]sendRec
}

type stageNode struct {
	mu   sync.Mutex // protects recs
	recs []stageRec
}

func newStageLog(n int) *stageLog {
	return &stageLog{nodes: make([]stageNode, n), sent: make(map[rooms.ID]sendRec)}
}

// trace is node i's rooms.TraceFunc.
func (l *stageLog) trace(i int) rooms.TraceFunc {
	return func(_ identity.RoomID, id rooms.ID, st rooms.Stage, at time.Time) {
		if !l.on.Load() {
			return
		}
		n := &l.nodes[i]
		n.mu.Lock()
		n.recs = append(n.recs, stageRec{id: id, stage: st, at: at})
		n.mu.Unlock()
	}
}

// said records that node i called Say for event id at t.
func (l *stageLog) said(i int, id rooms.ID, t time.Time) {
	if !l.on.Load() {
		return
	}
	l.mu.Lock()
	l.sent[id] = sendRec{node: i, at: t}
	l.mu.Unlock()
}

// start forgets what was collected and starts collecting.
func (l *stageLog) start() {
	l.on.Store(false)
	for i := range l.nodes {
		n := &l.nodes[i]
		n.mu.Lock()
		n.recs = nil
		n.mu.Unlock()
	}
	l.mu.Lock()
	l.sent = make(map[rooms.ID]sendRec)
	l.mu.Unlock()
	l.on.Store(true)
}

// stop stops collecting.
func (l *stageLog) stop() { l.on.Store(false) }

// breakdown sums up what was collected: one sample per delivery of an
// event whose Say was recorded, to each node but its sender.
func (l *stageLog) breakdown() *Stages {
	l.mu.Lock()
	sent := l.sent
	l.mu.Unlock()
	if len(sent) == 0 {
		return nil
	}
	// stamps[node][id][k] is the time of stageOrder[k] (zero: not seen).
	stamps := make([]map[rooms.ID]*[len(stageOrder)]time.Time, len(l.nodes))
	for i := range l.nodes {
		n := &l.nodes[i]
		n.mu.Lock()
		recs := n.recs
		n.mu.Unlock()
		m := make(map[rooms.ID]*[len(stageOrder)]time.Time)
		for _, r := range recs {
			if _, ok := sent[r.id]; !ok {
				continue
			}
			k := stageIndex(r.stage)
			if k < 0 {
				continue
			}
			s := m[r.id]
			if s == nil {
				s = new([len(stageOrder)]time.Time)
				m[r.id] = s
			}
			if s[k].IsZero() {
				s[k] = r.at
			}
		}
		stamps[i] = m
	}
	out := &Stages{}
	since := make([][]time.Duration, len(stageOrder))
	step := make([][]time.Duration, len(stageOrder))
	for id, snd := range sent {
		own := stamps[snd.node][id]
		for i := range l.nodes {
			if i == snd.node {
				continue
			}
			recv := stamps[i][id]
			if recv == nil || recv[4].IsZero() {
				continue // not delivered (while collecting)
			}
			if own == nil || own[0].IsZero() || own[1].IsZero() || recv[3].IsZero() {
				out.Incomplete++
				continue
			}
			if recv[2].IsZero() {
				out.BySync++
				continue
			}
			chain := [len(stageOrder)]time.Time{own[0], own[1], recv[2], recv[3], recv[4]}
			prev, clamped := snd.at, false
			for k, t := range chain {
				if t.Before(prev) {
					t, clamped = prev, true
				}
				since[k] = append(since[k], t.Sub(snd.at))
				step[k] = append(step[k], t.Sub(prev))
				if k != offPath {
					prev = t
				}
			}
			if clamped {
				out.Clamped++
			}
			out.Deliveries++
		}
	}
	if out.Deliveries == 0 && out.BySync == 0 && out.Incomplete == 0 {
		return nil
	}
	for k, st := range stageOrder {
		where := "receiver"
		if k < 2 {
			where = "sender"
		}
		out.Stages = append(out.Stages, StageTimes{Stage: st.String(), Node: where, SinceSend: summarize(since[k]), Step: summarize(step[k])})
	}
	return out
}

func stageIndex(st rooms.Stage) int {
	for k, s := range stageOrder {
		if s == st {
			return k
		}
	}
	return -1
}

// staged is a cluster whose nodes report their stages.
type staged interface {
	stageLog() *stageLog
}

// stagesOf returns c's stage log, nil if it has none.
func stagesOf(c cluster) *stageLog {
	if s, ok := c.(staged); ok {
		return s.stageLog()
	}
	return nil
}

// hopped is a cluster whose nodes report GossipSub's hops.
type hopped interface {
	hopLog() *hopLog
}

// hopsOf returns c's hop log, nil if it has none.
func hopsOf(c cluster) *hopLog {
	if h, ok := c.(hopped); ok {
		return h.hopLog()
	}
	return nil
}

// cpuMeter measures the process's CPU time over a phase.
type cpuMeter struct {
	start, end time.Duration // end: zero until stop
	ok         bool
}

func startCPU() cpuMeter {
	t, ok := processCPU()
	return cpuMeter{start: t, ok: ok}
}

// stop ends the phase: note, called later, counts the CPU time up to here.
func (m *cpuMeter) stop() {
	end, ok := processCPU()
	m.end, m.ok = end, m.ok && ok
}

// note records the CPU time since start (up to stop, if it was called) as
// cpu_s and, per delivery, as cpu_us_per_delivery (the whole process: every
// node of an in-process run, and the testnet's own bookkeeping).
func (m cpuMeter) note(res *ScenarioResult, deliveries int) {
	end, ok := m.end, true
	if end == 0 {
		end, ok = processCPU()
	}
	if !m.ok || !ok {
		return
	}
	used := end - m.start
	res.metric("cpu_s", used.Seconds())
	if deliveries > 0 {
		res.metric("cpu_us_per_delivery", float64(used.Microseconds())/float64(deliveries))
	}
}
