package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/parley-mesh/parley/node/nodetest"
)

// TestToolSchemasArePortable checks every tool's input and output schema as
// tools/list shows it: each "type" is one type name, never a list and never
// "null", so clients that map a schema to one type (Gemini function
// declarations) take them as they are.
func TestToolSchemasArePortable(t *testing.T) {
	nt := nodetest.Start(t, 1)
	cs := connect(t, nt, 0, "schemas")
	tl, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"parley_register", "parley_who", "parley_find", "parley_room_open", "parley_invite", "parley_say",
		"parley_read", "parley_ask", "parley_wait", "parley_reply", "parley_dismiss", "parley_leave",
		"parley_claim", "parley_release", "parley_board"}
	var names []string
	for _, tool := range tl.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("%s lacks a description or a schema", tool.Name)
			continue
		}
		for what, sc := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			raw, err := json.Marshal(sc)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			for _, bad := range badTypes(v, "") {
				t.Errorf("%s %s schema: %s", tool.Name, what, bad)
			}
		}
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("tools = %v, want %v", names, want)
	}
}

// badTypes lists the places in a JSON schema whose "type" is not one type
// name.
func badTypes(v any, path string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if k == "type" {
				s, ok := c.(string)
				if !ok || s == "null" {
					out = append(out, fmt.Sprintf("%s/type is %v", path, c))
				}
				continue
			}
			out = append(out, badTypes(c, path+"/"+k)...)
		}
	case []any:
		for i, c := range x {
			out = append(out, badTypes(c, fmt.Sprintf("%s/%d", path, i))...)
		}
	}
	return out
}

// TestReadOfMoreThanTenUnread: eleven and more unread messages are all
// read, the output validates, and nothing is consumed unseen.
func TestReadOfMoreThanTenUnread(t *testing.T) {
	_, a, b, room := twoAgents(t)
	call(t, b, "parley_read", map[string]any{"room": room})
	for k := range 15 {
		call(t, a, "parley_say", map[string]any{"room": room, "text": fmt.Sprintf("n%02d", k)})
	}
	seen := map[string]int{}
	nodetest.WaitFor(t, 30*time.Second, func() bool {
		out, _ := call(t, b, "parley_read", map[string]any{})
		for _, m := range out["messages"].([]any) {
			seen[m.(map[string]any)["text"].(string)]++
		}
		for _, p := range out["pending"].([]any) {
			seen[p.(map[string]any)["text"].(string)]++
		}
		return len(seen) >= 15
	}, "15 messages through parley_read")
	for k := range 15 {
		if n := seen[fmt.Sprintf("n%02d", k)]; n != 1 {
			t.Fatalf("message n%02d shown %d times (%v)", k, n, seen)
		}
	}
	out, _ := call(t, b, "parley_read", map[string]any{})
	if n := len(out["messages"].([]any)); n != 0 {
		t.Fatalf("a second read shows %d messages", n)
	}
	// The last events stay readable, read or not.
	out, _ = call(t, b, "parley_read", map[string]any{"room": room, "last": 3})
	if n := len(out["messages"].([]any)); n != 3 {
		t.Fatalf("last 3 = %d events", n)
	}
}

// Every tool answers bad input (here, none at all) with a tool error whose
// output still meets the tool's schema, not a protocol error; a name that
// is not a name, or that another live session holds, is such an error.
func TestToolErrorsMeetTheirSchema(t *testing.T) {
	nt := nodetest.Start(t, 1)
	a, b := connect(t, nt, 0, "a"), connect(t, nt, 0, "b")
	tools, err := a.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "parley_wait" {
			continue // with nothing to wait for, it waits
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := b.CallTool(ctx, &sdk.CallToolParams{Name: tool.Name, Arguments: map[string]any{}})
		cancel()
		if err != nil {
			t.Errorf("%s with no arguments: %v", tool.Name, err)
		}
	}
	if _, text, isErr := try(t, a, "parley_register", map[string]any{"name": "Bad Name!"}); !isErr || !strings.Contains(text, "bad name!") {
		t.Fatalf("a bad name: error=%v %q", isErr, text)
	}
	call(t, a, "parley_register", map[string]any{"name": "alpha"})
	if _, text, isErr := try(t, b, "parley_register", map[string]any{"name": "alpha"}); !isErr || !strings.Contains(text, "alpha") {
		t.Fatalf("a name another session holds: error=%v %q", isErr, text)
	}
}
