package turns

import (
	"slices"
	"testing"
)

func TestOrder(t *testing.T) {
	items := []string{"a1@x", "a2@x", "a3@x", "b1@y", "a4@x", "c1@z", "b2@y"}
	got := Order(items, func(s string) string { return Node(s) })
	want := []string{"a1@x", "b1@y", "c1@z", "a2@x", "b2@y", "a3@x", "a4@x"}
	if !slices.Equal(got, want) {
		t.Fatalf("Order = %v, want %v", got, want)
	}
	if got := Order([]string(nil), Node); len(got) != 0 {
		t.Fatalf("Order(nil) = %v", got)
	}
	for in, want := range map[string]string{"bob@12D3": "12D3", "a@b@c": "c", "plain": "plain", "": ""} {
		if got := Node(in); got != want {
			t.Errorf("Node(%q) = %q, want %q", in, got, want)
		}
	}
}
