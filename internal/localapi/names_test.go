package localapi

import "testing"

// Text writes agent addresses with the node's name where that name can be
// copied back as an address; a name with a space or '@', or one that reads
// as a peer ID, leaves the peer ID.
func TestNameBookText(t *testing.T) {
	var a = "12D3KooWAbCdEfGhJkLmNpQrStUvWxYz1234567891234567891234"[:52]
	var b = "12D3KooWZyXwVuTsRqPnMkJhGfEdCbA98765432198765432198765"[:52]
	var c = "12D3KooWQqQqQqQqQqQqQqQqQqQqQqQqQqQqQqQqQqQqQqQqQqQqQq"[:52]
	var d = "12D3KooWRrRrRrRrRrRrRrRrRrRrRrRrRrRrRrRrRrRrRrRrRrRrRr"[:52]
	book := NameBook{a: "alice", b: "12D3KooWfake", c: "bob smith", d: "eve@x"}
	in := "from bot@" + a + ", to x@" + b + ", y@" + c + " and z@" + d + "; event " + a
	want := "from bot@alice, to x@" + b + ", y@" + c + " and z@" + d + "; event " + a
	if got := book.Text(in); got != want {
		t.Fatalf("Text:\n got %q\nwant %q", got, want)
	}
	if got := (NameBook{}).Text(in); got != in {
		t.Fatalf("an empty book changed the text: %q", got)
	}
}
