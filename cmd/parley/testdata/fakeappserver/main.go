// Command fakeappserver is a small stand-in for `codex app-server` in
// Parley's tests: one thread, turns that run until the process ends, and
// every turn/start and turn/steer input appended to $FAKE_LOG, one line
// each ("start TEXT" or "steer TURN TEXT", newlines as spaces).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

func main() {
	logf, err := os.OpenFile(os.Getenv("FAKE_LOG"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		raw, _ := json.Marshal(v)
		out.Write(append(raw, '\n'))
		out.Flush()
	}
	turn, n := "", 0
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ExpectedTurnID string                  `json:"expectedTurnId"`
				Input          []struct{ Text string } `json:"input"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		text := ""
		if len(m.Params.Input) > 0 {
			text = strings.ReplaceAll(m.Params.Input[0].Text, "\n", " ")
		}
		switch m.Method {
		case "initialize":
			send(map[string]any{"id": m.ID, "result": map[string]any{"userAgent": "fake/1"}})
		case "thread/start":
			send(map[string]any{"id": m.ID, "result": map[string]any{"thread": map[string]any{"id": "th-fake"}}})
		case "turn/start":
			n++
			turn = fmt.Sprintf("turn-%d", n)
			fmt.Fprintf(logf, "start %s\n", text)
			send(map[string]any{"method": "turn/started", "params": map[string]any{"threadId": "th-fake", "turn": map[string]any{"id": turn}}})
			send(map[string]any{"id": m.ID, "result": map[string]any{"turn": map[string]any{"id": turn}}})
		case "turn/steer":
			fmt.Fprintf(logf, "steer %s %s\n", m.Params.ExpectedTurnID, text)
			send(map[string]any{"id": m.ID, "result": map[string]any{"turnId": turn}})
		}
	}
}
