package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every tool argument that names an agent says how to write one of your
// own node's, NAME alone, as parley_ask's "to" does. parley_say's "to"
// said "NAME@PEER_ID" alone, and an agent addressing a teammate on its
// own node went looking for a peer ID.
func TestMCPAgentArgumentsNameTheLocalForm(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "a")
	up(t, home, "--listen", loopback)
	cs := mcpClient(t, home, "desc")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, tool := range tools.Tools {
		raw, _ := json.Marshal(tool.InputSchema)
		var schema struct {
			Properties map[string]struct {
				Description string `json:"description"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatal(err)
		}
		for name, p := range schema.Properties {
			if !strings.Contains(p.Description, "NAME@PEER_ID") {
				continue
			}
			seen++
			if !strings.Contains(p.Description, "NAME on your node") && !strings.Contains(p.Description, "NAME for an agent of your node") {
				t.Errorf("%s's %q: %q does not say that NAME alone names an agent of your node", tool.Name, name, p.Description)
			}
		}
	}
	if seen < 4 {
		t.Fatalf("%d arguments name NAME@PEER_ID: the scan is broken", seen)
	}
}
