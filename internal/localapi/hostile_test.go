package localapi_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// call sends one request to the local API with the given headers, and
// returns its status and body.
func call(t *testing.T, socket, method, path string, hdr map[string]string, body []byte) (int, string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest(method, "http://parley"+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
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

// A session's call for an agent another session holds is refused
// (CodeNameTaken) however the path is spelt: the mux takes
// /v1/%61gents/bob/say and /v1/agents/b%6fb/say as bob's say, and so must
// the guard. Before, it looked at the escaped path, and a call that
// escaped a letter of "agents" or of the name went through as bob.
func TestSessionGuardHoldsForAnEscapedPath(t *testing.T) {
	nt := nodetest.Start(t, 1)
	socket := node.SocketPath(nt.Home(0))
	c := localapi.NewClient(socket)
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Session(ctx, localapi.SessionRequest{Session: "sess-bob", Name: "bob"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OpenRoom(localapi.WithSession(ctx, "sess-bob", ""), "bob", localapi.OpenRoomRequest{Name: "bobs"}); err != nil {
		t.Fatal(err)
	}
	other := map[string]string{localapi.SessionHeader: "sess-mallory"}
	say := []byte(`{"room":"bobs","text":"said by another session"}`)
	for _, p := range []string{
		"/v1/agents/bob/say",
		"/v1/%61gents/bob/say",
		"/v1/agents/b%6fb/say",
		"/v1/agents/%62%6f%62/say",
		"/v1/%61gents/bob/pending",
	} {
		method := "POST"
		if strings.HasSuffix(p, "/pending") {
			method = "GET"
		}
		status, body := call(t, socket, method, p, other, say)
		if status != http.StatusConflict || !strings.Contains(body, "name_taken") {
			t.Errorf("%s %s by another session: %d %s, want 409 name_taken", method, p, status, body)
		}
	}
	// A call that names no session is the socket's user's, trusted as
	// such (docs/ARCHITECTURE.md): the guard is no wall between programs
	// of the same user, only between sessions that keep to their names.
	if status, body := call(t, socket, "GET", "/v1/agents/bob/pending", nil, nil); status != http.StatusOK {
		t.Errorf("bob's pending without a session: %d %s", status, body)
	}
	log, err := c.Log(ctx, "bobs", 10, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range log {
		if strings.Contains(e.Text, "another session") {
			t.Fatalf("another session posted as bob: %+v", e)
		}
	}
}

// ?seconds= that is no number of seconds in range is a 400, NaN too:
// before, NaN passed both bounds (every comparison with it is false) and
// became a wait of a negative duration.
func TestWaitSecondsRefusesNaN(t *testing.T) {
	nt := nodetest.Start(t, 1)
	socket := node.SocketPath(nt.Home(0))
	for _, v := range []string{"NaN", "nan", "-1", "51", "Inf", "-Inf", "1e400", "x"} {
		for _, p := range []string{"/v1/agents/human/wait?seconds=", "/v1/agents/human/asks/abcdefgh/reply?seconds="} {
			status, body := call(t, socket, "GET", p+v, nil, nil)
			if status != http.StatusBadRequest || !strings.Contains(body, "seconds must be 0 to 50") {
				t.Errorf("GET %s%s: %d %s, want 400 seconds must be 0 to 50", p, v, status, body)
			}
		}
	}
}

// Hostile bodies (nesting past the decoder's depth, numbers past float64
// or int, a million keys, a body that never ends) each get a 400 or 413
// with a reason, in bounded time, and the node answers next.
func TestHostileBodiesAreRefusedPlainly(t *testing.T) {
	nt := nodetest.Start(t, 1)
	socket := node.SocketPath(nt.Home(0))
	c := localapi.NewClient(socket)
	defer c.Close()
	ctx := context.Background()
	if _, err := c.OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "r"}); err != nil {
		t.Fatal(err)
	}
	deep := func(n int) string {
		return `{"room":"r","text":"x","spent":` + strings.Repeat(`{"a":`, n) + `1` + strings.Repeat(`}`, n) + `}`
	}
	var keys strings.Builder
	keys.WriteString(`{"room":"r","text":"x","spent":{`)
	for i := 0; keys.Len() < localapi.MaxRequestBody-100; i++ {
		if i > 0 {
			keys.WriteByte(',')
		}
		keys.WriteString(`"k` + strings.Repeat("0", 1) + string(rune('a'+i%26)) + itoa(i) + `":1`)
	}
	keys.WriteString(`}}`)
	for _, tc := range []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"nested past the depth", "/v1/agents/human/say", deep(20000), 400, "exceeded max depth"},
		{"arrays nested past the depth", "/v1/agents/human/say", `{"room":"r","text":"x","mentions":` + strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + `}`, 400, "bad request body"},
		{"nested, unclosed, to the limit", "/v1/agents/human/say", strings.Repeat("[", localapi.MaxRequestBody), 400, "bad request body"},
		{"a number past float64", "/v1/agents/human/ask", `{"room":"r","text":"x","wait_seconds":1e400}`, 400, "bad request body"},
		{"a number past int", "/v1/agents/human/rooms", `{"name":"r2","ttl_hours":99999999999999999999999}`, 400, "bad request body"},
		{"a million keys", "/v1/agents/human/say", keys.String(), 400, "bad request body"},
		{"a string of the whole limit", "/v1/agents/human/say", `{"room":"r","text":"` + strings.Repeat(`\u0041`, localapi.MaxRequestBody/6) + `"}`, 413, "over the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			status, body := call(t, socket, "POST", tc.path, nil, []byte(tc.body))
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("%d %.300s, want %d and %q", status, body, tc.status, tc.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
			if _, err := c.Status(ctx); err != nil {
				t.Fatalf("the node does not answer after it: %v", err)
			}
		})
	}
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[n:])
		}
	}
}

// Another user of the machine reaches nothing of a running node: not its
// socket (mode 0600), though the user opened the home and the folders
// above it to others (mode 0755), nor its key, token, config or log.
func TestAnotherUserReachesNeitherSocketNorSecrets(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("acting as another user needs root; run the tests as root to cover it")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl to connect to the socket with")
	}
	nt := nodetest.Start(t, 1)
	home := nt.Home(0)
	for d := home; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()+"/"); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	socket := node.SocketPath(home)
	if st, err := os.Lstat(socket); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v %v", st, err)
	}
	as := func(name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := as(curl, "-sS", "--max-time", "5", "--unix-socket", socket, "http://parley/v1/status"); err == nil || !strings.Contains(out, "ermission denied") && !strings.Contains(out, "Couldn't connect") {
		t.Errorf("another user's curl to the socket: %v %s", err, out)
	}
	ents, err := os.ReadDir(home)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the home holds %d entries", len(ents))
	for _, e := range ents {
		t.Logf("  %s %v", e.Name(), e.Type())
		if !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(home, e.Name())
		if out, err := as("/bin/cat", p); err == nil {
			t.Errorf("another user read %s: %.80q", p, out)
		}
	}
	if out, err := as("/bin/ls", filepath.Join(home, node.DataDirName)); err == nil {
		t.Errorf("another user listed the database: %s", out)
	}
}

// A room named "." or ".." (a name like any other: a contact may invite to
// one) is reached by name: the client escapes such a path segment, which
// the server's mux would otherwise clean away. Before, `room log .` read
// GET /v1/rooms/log (the room named "log"), and `room log ..` no endpoint.
func TestDotNamesReachTheirRoom(t *testing.T) {
	nt := nodetest.Start(t, 1)
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	ctx := context.Background()
	for _, n := range []string{"log", ".", ".."} {
		if _, err := c.OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: n}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Say(ctx, "human", localapi.SayRequest{Room: n, Text: "in " + n}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{".", ".."} {
		info, err := c.Room(ctx, n)
		if err != nil || info.Name != n {
			t.Errorf("room %q: %+v %v", n, info, err)
		}
		evs, err := c.Log(ctx, n, 10, "")
		if err != nil {
			t.Errorf("log of %q: %v", n, err)
			continue
		}
		found := false
		for _, e := range evs {
			found = found || e.Text == "in "+n
		}
		if !found {
			t.Errorf("log of %q lacks its message: %+v", n, evs)
		}
	}
	// An agent named so is refused by the node as a bad name, not served
	// as another endpoint.
	if _, err := c.Take(ctx, ".."); err == nil || strings.Contains(err.Error(), "no such endpoint") {
		t.Errorf("take of agent \"..\": %v", err)
	}
}
