package appserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// A notification longer than MaxLine (an item's whole output, a resumed
// thread's history) is one line the client cannot use: it must skip it and
// go on reading, not drop the connection and every call after it.
// Before, the scanner stopped at such a line and the client ended; now the
// line is read to its end, logged and skipped.
func TestWakeAppServerGoesOnAfterALineTooLong(t *testing.T) {
	toClient, serverOut := io.Pipe()
	serverIn, fromClient := io.Pipe()
	t.Cleanup(func() { serverOut.Close(); fromClient.Close() })
	go func() {
		sc := bufio.NewScanner(serverIn)
		for sc.Scan() {
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil || len(m.ID) == 0 {
				continue
			}
			huge := `{"method":"item/completed","params":{"threadId":"t","output":"` + strings.Repeat("x", MaxLine+1) + `"}}` + "\n"
			if _, err := io.WriteString(serverOut, huge); err != nil {
				return
			}
			if _, err := io.WriteString(serverOut, `{"id":`+string(m.ID)+`,"result":{}}`+"\n"); err != nil {
				return
			}
		}
	}()
	c := New(toClient, fromClient)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Call(ctx, "thread/resume", map[string]any{"threadId": "t"}, nil); err != nil {
		t.Fatalf("a call answered after a line too long: %v", err)
	}
}
