package rooms

import (
	"bytes"
	"testing"
)

// FuzzReadInvite feeds arbitrary bytes to the invite notice reader, as a
// hostile peer on /parley/invite/1 would.
func FuzzReadInvite(f *testing.F) {
	var good bytes.Buffer
	_ = writeCBORFrame(&good, inviteNotice{Room: "aaaaaaaaaaaaaaaaaaaaaaaaaa", Name: "x", Event: []byte{0xa0}})
	f.Add(good.Bytes())
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{0x01, 0xa0})
	f.Fuzz(func(t *testing.T, raw []byte) {
		var n inviteNotice
		if err := readCBORFrame(bytes.NewReader(raw), maxInviteFrame, &n); err != nil {
			return
		}
		if len(n.Event) > 0 {
			_, _, _ = Decode(n.Event)
		}
	})
}
