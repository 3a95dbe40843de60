package rooms

import (
	"time"

	"github.com/libp2p/go-libp2p/core/network"
)

// ReadAnswer reads a catch-up's answer from s as syncRound does, through a
// silenceReader of silence ending at end, frame after frame until the end
// frame or an error: the frames read, whether the reader holds the
// failure for silence (syncRound then wraps it in errSyncSilent), and the
// error.
func ReadAnswer(s network.Stream, silence time.Duration, end time.Time) (frames int, silent bool, err error) {
	rd := &silenceReader{s: s, silence: silence, end: end}
	for {
		b, err := ReadBatch(rd)
		if err != nil {
			return frames, rd.silent, err
		}
		frames++
		if b.End {
			return frames, rd.silent, nil
		}
	}
}

// SetSyncTimeout sets the limit of one catch-up exchange and returns a
// function that restores it.
func SetSyncTimeout(d time.Duration) func() {
	old := syncTimeoutNs.Swap(int64(d))
	return func() { syncTimeoutNs.Store(old) }
}
