package ui

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
)

// ErrPortTaken is the dashboard's port held by another program, on
// 127.0.0.1 or on [::1].
var ErrPortTaken = errors.New("the port is taken")

// Listen opens the dashboard's port (0: any free port) on 127.0.0.1 and,
// where the host has IPv6 loopback, on [::1] too: the dashboard takes
// "localhost" as its Host, and a browser tries localhost's IPv6 address
// first, so another local user who bound [::1] at the port while the node
// held 127.0.0.1 alone got what a tab at localhost sent there (an address's
// one-time code, the page's token). The port taken on either address is
// ErrPortTaken; IPv6 absent, the node goes on with 127.0.0.1 alone. The
// listener accepts on both and its Addr is 127.0.0.1's.
func Listen(port int) (net.Listener, error) {
	if port < 0 || port > 65535 {
		return nil, fmt.Errorf("ui: port %d out of range", port)
	}
	// Any free port: one free on 127.0.0.1 may be held on [::1]; try a
	// few.
	tries := 1
	if port == 0 {
		tries = 8
	}
	var err error
	for range tries {
		var ln net.Listener
		if ln, err = listenLoopback(port); err == nil || !errors.Is(err, ErrPortTaken) {
			return ln, err
		}
	}
	return nil, err
}

func listenLoopback(port int) (net.Listener, error) {
	hint := "(choose another ui_port in the config, or 0 for any free port)"
	v4, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			err = fmt.Errorf("%w: %w", ErrPortTaken, err)
		}
		return nil, fmt.Errorf("ui: listen on 127.0.0.1:%d: %w %s", port, err, hint)
	}
	_, p, _ := net.SplitHostPort(v4.Addr().String())
	v6, err := net.Listen("tcp6", "[::1]:"+p)
	switch {
	case err == nil:
	case errors.Is(err, syscall.EADDRINUSE):
		v4.Close()
		return nil, fmt.Errorf("ui: listen on [::1]:%s, where a browser tries localhost first: %w: %w %s", p, ErrPortTaken, err, hint)
	default:
		// No IPv6 loopback here: localhost is 127.0.0.1 alone.
		return v4, nil
	}
	l := &loopback{v4: v4, v6: v6, conns: make(chan accepted), closed: make(chan struct{})}
	go l.accept(v4)
	go l.accept(v6)
	return l, nil
}

// loopback is the dashboard's listener on 127.0.0.1 and [::1] at one port.
type loopback struct {
	v4, v6 net.Listener
	conns  chan accepted
	closed chan struct{}
	once   sync.Once
	err    error
}

type accepted struct {
	c   net.Conn
	err error
}

// accept passes ln's connections (and errors: the server backs off on a
// temporary one) to Accept until the listener is closed.
func (l *loopback) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		select {
		case l.conns <- accepted{c, err}:
		case <-l.closed:
			if c != nil {
				c.Close()
			}
			return
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

func (l *loopback) Accept() (net.Conn, error) {
	select {
	case a := <-l.conns:
		return a.c, a.err
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close closes both addresses.
func (l *loopback) Close() error {
	l.once.Do(func() {
		close(l.closed)
		l.err = errors.Join(l.v4.Close(), l.v6.Close())
	})
	return l.err
}

// Addr is 127.0.0.1's address: the one the dashboard's addresses name.
func (l *loopback) Addr() net.Addr { return l.v4.Addr() }
