package node

import (
	"os"
	"path/filepath"
	"time"

	"github.com/dustin/go-humanize"
)

// Value-log collection: how often by default, and at most how many
// value-log files one round rewrites (each up to 64 MiB, of which half or
// more is garbage), so a round's writes stay bounded.
const (
	defaultStoreGCInterval = 10 * time.Minute
	storeGCMaxFiles        = 2
)

// startStoreGC reclaims, every StoreGCInterval, the disk space of
// overwritten and deleted values in the database's value log, until the
// node stops.
func (n *Node) startStoreGC() {
	every := n.cfg.StoreGCInterval
	if every < 0 {
		return
	}
	if every == 0 {
		every = defaultStoreGCInterval
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-n.ctx.Done():
				return
			case <-t.C:
				n.collectStoreGarbage()
			}
		}
	}()
}

// collectStoreGarbage runs one round of the value-log collection and logs
// what it reclaimed.
func (n *Node) collectStoreGarbage() {
	before := valueLogBytes(n.db.Dir())
	files, err := n.db.CollectGarbage(storeGCMaxFiles)
	if err != nil {
		n.log.Warn("value-log collection failed", "files_rewritten", files, "err", err)
		return
	}
	if files == 0 {
		return
	}
	after := valueLogBytes(n.db.Dir())
	n.log.Info("value log collected", "files_rewritten", files,
		"reclaimed", humanize.IBytes(uint64(max(before-after, 0))), "value_log", humanize.IBytes(uint64(after)))
}

// valueLogBytes is the size of the value-log files in the database folder
// dir (0 if it cannot be read).
func valueLogBytes(dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".vlog" {
			continue
		}
		if info, err := e.Info(); err == nil {
			n += info.Size()
		}
	}
	return n
}
