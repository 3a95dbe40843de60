package store

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// FlushBuckets are the upper bounds, in seconds, of the buckets of the
// database's flush and write timings: 0.2 ms to 11 s, 1.5 times apart.
var FlushBuckets = prometheus.ExponentialBuckets(0.0002, 1.5, 28)

// timings are how long a database's flushes, writes and new epochs take.
type timings struct {
	flush prometheus.Histogram // a flush round (Sync): what a durable write waits for
	write prometheus.Histogram // Apply's write, before any flush
	epoch prometheus.Histogram // a new epoch of the journal: the node's writes wait meanwhile
}

func newTimings() *timings {
	h := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: FlushBuckets})
	}
	return &timings{
		flush: h("parley_store_flush_seconds", "Flushes of the database to disk (an fdatasync of the write journal, or the database's own sync without one); every durable write waits for one."),
		write: h("parley_store_write_seconds", "Writes to the database (the journal's record and the database's transaction, or for a queued write its queueing, which waits for the write queued before it), not counting the flush."),
		epoch: h("parley_store_journal_epoch_seconds", "New epochs of the write journal (the database made durable and the journal emptied, every 4 MiB of writes); the node's writes wait meanwhile."),
	}
}

// since observes the time since start on h.
func since(h prometheus.Observer, start time.Time) { h.Observe(time.Since(start).Seconds()) }

// Collectors are the database's metrics, for a node's registry.
func (db *DB) Collectors() []prometheus.Collector {
	return []prometheus.Collector{db.t.flush, db.t.write, db.t.epoch,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "parley_store_refusing_writes",
			Help: "1 while the database refuses writes (a queued write failed: restart the node; or the disk is below the free-space floor), else 0.",
		}, func() float64 {
			if db.Problem() != nil {
				return 1
			}
			return 0
		}),
	}
}

// Timing is a histogram of durations so far: for each of FlushBuckets,
// how many took at most that long, and how many there were in all.
type Timing struct {
	Cumulative []uint64
	Count      uint64
}

// Timings are a database's timings so far.
type Timings struct {
	Flush, Write, Epoch Timing
}

// Timings returns the database's timings so far.
func (db *DB) Timings() Timings {
	return Timings{Flush: read(db.t.flush), Write: read(db.t.write), Epoch: read(db.t.epoch)}
}

func read(h prometheus.Histogram) Timing {
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		return Timing{}
	}
	var t Timing
	for _, b := range m.GetHistogram().GetBucket() {
		t.Cumulative = append(t.Cumulative, b.GetCumulativeCount())
	}
	t.Count = m.GetHistogram().GetSampleCount()
	return t
}
