package rooms

import (
	"time"

	"github.com/parley-mesh/parley/identity"
)

// Stage is a point on an event's way through a node, reported to
// Config.Trace.
type Stage uint8

// Stages, in the order an event passes them. The author's node reports
// StageDurable and StagePublished for its own events; a receiving node
// reports StageValidated (gossip only: events that come by sync skip it),
// StageStored and StageVisible for others' events. StageVisible is reported
// for own events too.
const (
	// StageDurable: an own event's batch is written (and fsynced) to the
	// store.
	StageDurable Stage = iota + 1
	// StagePublished: an own event was handed to GossipSub (Publish
	// returned).
	StagePublished
	// StageValidated: another node's event passed the topic's validator.
	StageValidated
	// StageStored: another node's event's batch is written to the store
	// (to its journal, and queued to the database: see store.ApplyQueued).
	StageStored
	// StageVisible: the event was handed to the room's subscribers
	// (Manager.Subscribe), which is what agents see.
	StageVisible
)

var stageNames = [...]string{"", "durable", "published", "validated", "stored", "visible"}

func (s Stage) String() string {
	if int(s) < len(stageNames) && s != 0 {
		return stageNames[s]
	}
	return "stage?"
}

// TraceFunc receives the stages events pass on a node (Config.Trace): the
// room, the event, the stage and when it was passed. It is called on
// whichever goroutine processes or finishes a batch (the room's, a Say's,
// the subscription reader's; StageValidated on GossipSub's validators), so
// it must be quick and safe for concurrent use; it must not call the Manager.
type TraceFunc func(room identity.RoomID, id ID, stage Stage, at time.Time)

// traceBatch reports stage for the views of a batch: own (authored here)
// or others', as own says.
func (r *room) traceBatch(tr TraceFunc, vs []View, own bool, stage Stage, at time.Time) {
	for i := range vs {
		if (vs[i].Author == r.m.self) == own {
			tr(r.id, vs[i].ID, stage, at)
		}
	}
}

// tracePublished reports StagePublished for the k-th own event of tx.
func (r *room) tracePublished(tr TraceFunc, tx *txn, k int) {
	tr(r.id, tx.own[k].ID, StagePublished, time.Now())
}
