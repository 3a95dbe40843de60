package nodetest

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
)

// SocketProxy passes the connections made to its socket (Path) on to a
// node's local API socket, and cuts them when the test says: a client
// whose call fails on its side while the node had taken it.
type SocketProxy struct {
	Path string

	mu    sync.Mutex
	conns map[net.Conn]bool
	open  chan struct{} // closed while new connections go through
}

// Proxy starts a SocketProxy to socket; the test's end stops it.
func Proxy(t TB, socket string) *SocketProxy {
	t.Helper()
	// A short path: a unix socket's is at most 104 to 108 bytes.
	dir, err := os.MkdirTemp("", "px")
	if err != nil {
		t.Fatalf("nodetest: proxy: %v", err)
	}
	p := &SocketProxy{Path: filepath.Join(dir, "s"), conns: map[net.Conn]bool{}, open: make(chan struct{})}
	close(p.open)
	l, err := net.Listen("unix", p.Path)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatalf("nodetest: proxy: %v", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns[c] = true
			open := p.open
			p.mu.Unlock()
			wg.Go(func() { p.serve(c, socket, open) })
		}
	})
	t.Cleanup(func() {
		l.Close()
		p.Mend()
		p.Cut()
		wg.Wait()
		os.RemoveAll(dir)
	})
	return p
}

// serve passes c on to socket once open is closed.
func (p *SocketProxy) serve(c net.Conn, socket string, open chan struct{}) {
	defer func() {
		c.Close()
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	<-open
	up, err := net.Dial("unix", socket)
	if err != nil {
		return
	}
	p.mu.Lock()
	if !p.conns[c] { // cut while it dialled
		p.mu.Unlock()
		up.Close()
		return
	}
	p.conns[up] = true
	p.mu.Unlock()
	defer func() {
		up.Close()
		p.mu.Lock()
		delete(p.conns, up)
		p.mu.Unlock()
	}()
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); done <- struct{}{} }() //nolint:errcheck // ends with either side
	go func() { io.Copy(c, up); done <- struct{}{} }() //nolint:errcheck // ends with either side
	<-done
}

// Cut closes every connection through the proxy, both ends, and holds the
// new ones until Mend: each call under way fails on the client's side, and
// the node sees its client go.
func (p *SocketProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		p.open = make(chan struct{})
	default:
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// Mend lets the connections held since Cut, and new ones, through.
func (p *SocketProxy) Mend() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
}
