package ui

import (
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
)

// Listen holds the port on [::1] as well as 127.0.0.1 where the host has
// IPv6 loopback, accepts on both, and lets both go at Close; [::1] held by
// another program at the port is the port taken.
func TestListenHoldsIPv6Loopback(t *testing.T) {
	probe, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	probe.Close()
	ln, err := Listen(0)
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if !ln.Addr().(*net.TCPAddr).IP.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("Addr is %s, want 127.0.0.1's", ln.Addr())
	}
	for _, a := range []string{"127.0.0.1", "::1"} {
		c, err := net.Dial("tcp", net.JoinHostPort(a, strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("dial %s: %v", a, err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatalf("accept from %s: %v", a, err)
		}
		if got := s.LocalAddr().(*net.TCPAddr).IP; !got.Equal(net.ParseIP(a)) {
			t.Errorf("accepted on %s, dialled %s", got, a)
		}
		s.Close()
		c.Close()
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
	// Both let go: a program may bind them now, and Listen then finds the
	// port taken.
	v6, err := net.Listen("tcp6", "[::1]:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("[::1]:%d still held after Close: %v", port, err)
	}
	defer v6.Close()
	if ln, err := Listen(port); err == nil || !errors.Is(err, ErrPortTaken) || !errors.Is(err, syscall.EADDRINUSE) {
		if ln != nil {
			ln.Close()
		}
		t.Fatalf("Listen(%d) with [::1]:%d held: %v, want ErrPortTaken", port, port, err)
	}
	v4, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("127.0.0.1:%d held after a Listen that failed on [::1]: %v", port, err)
	}
	v4.Close()
}
