package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
)

// noRooms is a Feed with no rooms: these tests are of the page's access.
type noRooms struct{}

func (noRooms) List(context.Context) []localapi.RoomInfo { return nil }
func (noRooms) Get(context.Context, string) (localapi.RoomInfo, error) {
	return localapi.RoomInfo{}, nil
}
func (noRooms) Changes() (<-chan struct{}, func())           { return nil, func() {} }
func (noRooms) ChangedSince(after uint64) ([]string, uint64) { return nil, after }
func (noRooms) Since(string, uint64, int) ([]localapi.Event, uint64, error) {
	return nil, 0, nil
}

// clock is a clock the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

const testAddr = "127.0.0.1:4242"

func ticketServer(t *testing.T) (*Server, *clock, string) {
	t.Helper()
	c := &clock{now: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
	tok := strings.Repeat("ab", 32)
	s, err := New(Config{Token: tok, Feed: noRooms{}, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	s.addr = testAddr
	return s, c, tok
}

// code returns the one-time code of an address TicketURL gave.
func code(t *testing.T, s *Server) string {
	t.Helper()
	u, err := s.TicketURL(testAddr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := url.Parse(u)
	if err != nil || p.Host != testAddr || p.Path != "/" || len(p.Query().Get("c")) != 32 || p.Query().Has("t") {
		t.Fatalf("the address %q (%v): want http://%s/?c=CODE", u, err, testAddr)
	}
	return p.Query().Get("c")
}

func serve(s *Server, method, target, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "http://"+testAddr+target, strings.NewReader(body))
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

func exchange(s *Server, code string) *httptest.ResponseRecorder {
	b, _ := json.Marshal(map[string]string{"code": code})
	return serve(s, http.MethodPost, TicketPath, string(b))
}

// The address `parley ui` prints carries a one-time code, not the token:
// it opens the page, the page changes the code for the token once, and
// after that (or past TicketTTL, or past MaxTickets newer ones) the
// address opens nothing and says to get a new one.
func TestTicketOpensThePageOnce(t *testing.T) {
	s, clk, tok := ticketServer(t)
	c := code(t, s)
	if w := serve(s, http.MethodGet, "/?c="+c, ""); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "<script>") {
		t.Fatalf("the page at its address: %d", w.Code)
	}
	w := exchange(s, c)
	var got struct{ Token string }
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &got) != nil || got.Token != tok {
		t.Fatalf("the code changed for the token: %d %q", w.Code, w.Body.String())
	}
	if w := exchange(s, c); w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "parley ui") {
		t.Fatalf("the code changed again: %d %q", w.Code, w.Body.String())
	}
	if w := serve(s, http.MethodGet, "/?c="+c, ""); w.Code != http.StatusUnauthorized || w.Body.String() != TicketSpent {
		t.Fatalf("the used address opened again: %d %q", w.Code, w.Body.String())
	}

	// Past its time.
	old := code(t, s)
	clk.add(TicketTTL - time.Second)
	fresh := code(t, s)
	clk.add(2 * time.Second)
	if w := serve(s, http.MethodGet, "/?c="+old, ""); w.Code != http.StatusUnauthorized {
		t.Fatalf("an address past its time opened the page: %d", w.Code)
	}
	if w := exchange(s, old); w.Code != http.StatusUnauthorized {
		t.Fatalf("a code past its time changed for the token: %d", w.Code)
	}
	if w := exchange(s, fresh); w.Code != http.StatusOK {
		t.Fatalf("a code within its time: %d %q", w.Code, w.Body.String())
	}

	// Only the newest MaxTickets are outstanding.
	codes := make([]string, MaxTickets+3)
	for i := range codes {
		codes[i] = code(t, s)
	}
	if n := len(s.tickets); n != MaxTickets {
		t.Fatalf("%d codes outstanding, want %d", n, MaxTickets)
	}
	for i, c := range codes {
		want := http.StatusOK
		if i < 3 {
			want = http.StatusUnauthorized
		}
		if w := exchange(s, c); w.Code != want {
			t.Fatalf("code %d of %d: %d, want %d", i, len(codes), w.Code, want)
		}
	}

	// A wrong or malformed exchange, or one from another origin.
	for _, tc := range []struct {
		method, body, origin string
		want                 int
	}{
		{http.MethodPost, `{"code":"` + strings.Repeat("0", 32) + `"}`, "", http.StatusUnauthorized},
		{http.MethodPost, `{"code":`, "", http.StatusBadRequest},
		{http.MethodPost, `{}`, "", http.StatusBadRequest},
		{http.MethodPost, `{"code":"` + strings.Repeat("a", 4096) + `"}`, "", http.StatusBadRequest},
		{http.MethodGet, "", "", http.StatusMethodNotAllowed},
		{http.MethodPost, `{"code":"x"}`, "http://evil.example", http.StatusForbidden},
	} {
		r := httptest.NewRequest(tc.method, "http://"+testAddr+TicketPath, strings.NewReader(tc.body))
		r.Header.Set("Content-Type", "application/json")
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != tc.want || strings.Contains(w.Body.String(), tok) {
			t.Errorf("%s %s from %q: %d %q, want %d", tc.method, tc.body, tc.origin, w.Code, w.Body.String(), tc.want)
		}
	}
}
