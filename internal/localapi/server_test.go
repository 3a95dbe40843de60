package localapi_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// post sends raw bytes to the local API, to check what the wire refuses.
func post(t *testing.T, socket, path string, body []byte) (int, string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}}
	resp, err := hc.Post("http://parley"+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(raw)
}

func TestRequestBodies(t *testing.T) {
	nt := nodetest.Start(t, 1)
	socket := node.SocketPath(nt.Home(0))
	c := localapi.NewClient(socket)
	defer c.Close()
	ctx := context.Background()
	if _, err := c.OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "r"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		body   string
		status int
		want   string
	}{
		{"over the limit", `{"room":"r","text":"` + strings.Repeat("x", localapi.MaxRequestBody) + `"}`, 413, "limit of 1048576 bytes"},
		{"trailing data", `{"room":"r","text":"x"} {"room":"r"}`, 400, "trailing data"},
		{"trailing garbage", `{"room":"r","text":"x"}x`, 400, "trailing data"},
		{"unknown field", `{"room":"r","text":"x","bogus":1}`, 400, "unknown field"},
		{"empty text", `{"room":"r","text":"   "}`, 400, "text is empty"},
		{"no room", `{"room":"","text":"x"}`, 400, "room is empty"},
		{"unknown room", `{"room":"nope","text":"x"}`, 404, `no room named \"nope\"`},
		{"fine", `{"room":"r","text":"x"}` + "\n", 200, `"id"`},
		// What encoding/json takes without a word: bytes that are not
		// UTF-8 (read as U+FFFD), half a surrogate pair (likewise), a key
		// given twice (the last wins), whatever its case.
		{"not UTF-8", "{\"room\":\"r\",\"text\":\"\xff\xfe\"}", 400, "not UTF-8 (byte 0xff at offset 20)"},
		{"half a surrogate pair", `{"room":"r","text":"a\ud800b"}`, 400, `\\ud800 at offset 21 is half of a UTF-16 surrogate pair`},
		{"low half alone", `{"room":"r","text":"\udc00"}`, 400, "half of a UTF-16 surrogate pair"},
		{"a key twice", `{"room":"r","text":"dup1","text":"dup2"}`, 400, `the key \"text\" is given twice`},
		{"a key twice, in another case", `{"room":"r","text":"dup1","Text":"dup2"}`, 400, `the key \"Text\" is given twice`},
		{"a key twice, nested", `{"room":"r","text":"x","spent":{"tokens_in":1,"tokens_in":2}}`, 400, `the key \"tokens_in\" is given twice`},
		{"a surrogate pair and U+FFFD", `{"room":"r","text":"\ud83d\ude00 \ufffd \\ud800"}`, 200, `"id"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, socket, "/v1/agents/human/say", []byte(tc.body))
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("%d %s, want %d and %q", status, body, tc.status, tc.want)
			}
		})
	}
	// A malformed address is called one, not looked up as a handle.
	for _, member := range []string{"@@@", "@bob", "x@"} {
		status, body := post(t, socket, "/v1/agents/human/invite", []byte(`{"room":"r","member":"`+member+`"}`))
		if status != 400 || !strings.Contains(body, "is a malformed address") || strings.Contains(body, "handle") && !strings.Contains(body, "NAME@HANDLE") {
			t.Fatalf("invite %q: %d %s", member, status, body)
		}
	}
	// The client refuses an empty path segment instead of calling another
	// endpoint.
	if _, err := c.Log(ctx, "", 10, ""); err == nil || !strings.Contains(err.Error(), "the room is empty") {
		t.Fatalf("log of an empty room name: %v", err)
	}
	if _, err := c.Take(ctx, ""); err == nil || !strings.Contains(err.Error(), "the agent name is empty") {
		t.Fatalf("take of an empty agent: %v", err)
	}
}

// The socket is never at its path with a mode other than 0600, even under
// umask 000 and for the moment between bind and chmod: another user who
// connected then would keep a connection with every right of the local API.
// A watcher looks at the path while sockets are made there again and again.
func TestSocketNeverOpenToOthers(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "parley.sock")
	stop := make(chan struct{})
	seen := make(chan os.FileMode, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if st, err := os.Lstat(path); err == nil && st.Mode().Perm() != 0o600 {
				select {
				case seen <- st.Mode().Perm():
				default:
				}
				return
			}
		}
	}()
	for range 500 {
		ln, err := localapi.Listen(path)
		if err != nil {
			t.Fatal(err)
		}
		ln.Close()
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		select {
		case m := <-seen:
			close(stop)
			wg.Wait()
			t.Fatalf("the socket was at %s with mode %04o", path, m)
		default:
		}
	}
	close(stop)
	wg.Wait()
	if es, err := os.ReadDir(filepath.Dir(path)); err != nil || len(es) != 0 {
		t.Fatalf("the private folders were left behind: %v %v", es, err)
	}
}
