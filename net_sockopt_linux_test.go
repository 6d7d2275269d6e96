//go:build linux

package weft_test

import (
	"net"
	"syscall"
	"testing"

	"github.com/weft-go/weft"
	"golang.org/x/sys/unix"
)

// tcpDefaults are the socket options the net package's defaults give a TCP
// connection: keep-alive (15 s idle, 15 s between probes, 9 probes) and
// TCP_NODELAY.
var tcpDefaults = []struct {
	name       string
	level, opt int
}{
	{"SO_KEEPALIVE", unix.SOL_SOCKET, unix.SO_KEEPALIVE},
	{"TCP_KEEPIDLE", unix.IPPROTO_TCP, unix.TCP_KEEPIDLE},
	{"TCP_KEEPINTVL", unix.IPPROTO_TCP, unix.TCP_KEEPINTVL},
	{"TCP_KEEPCNT", unix.IPPROTO_TCP, unix.TCP_KEEPCNT},
	{"TCP_NODELAY", unix.IPPROTO_TCP, unix.TCP_NODELAY},
}

// netSockopts reads tcpDefaults' options of a net package connection.
func netSockopts(t *testing.T, c net.Conn) map[string]int {
	t.Helper()
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	rc.Control(func(fd uintptr) {
		for _, o := range tcpDefaults {
			v, err := unix.GetsockoptInt(int(fd), o.level, o.opt)
			if err != nil {
				t.Fatal(o.name, err)
			}
			got[o.name] = v
		}
	})
	return got
}

// netDefaults returns the options of a connection that net.Dial made and
// of the one net.Listen's listener accepted.
func netDefaults(t *testing.T) (dialled, accepted map[string]int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return netSockopts(t, c), netSockopts(t, s)
}

// Listen's accepted connections and Dial's connections get the net
// package's defaults: keep-alive probes (15 s) and TCP_NODELAY, so that
// a server moved from net keeps finding its dead peers. (Listen gave
// accepted connections no keep-alive on the fd backends.)
func TestListenAndDialHaveNetsTCPDefaults(t *testing.T) {
	netDialled, netAccepted := netDefaults(t)
	if netAccepted["SO_KEEPALIVE"] == 0 || netAccepted["TCP_KEEPIDLE"] != 15 || netAccepted["TCP_NODELAY"] == 0 {
		t.Fatalf("net's accepted connection: %v; this test's reference changed", netAccepted)
	}
	backends(t, func(t *testing.T, opts ...weft.Option) {
		run(t, func(wt *weft.Task) {
			ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
			defer ln.Close()
			c := mustDial(t, wt, "tcp", ln.Addr().String())
			defer c.Close()
			s, err := ln.Accept(wt)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, side := range []struct {
				name string
				c    *weft.Conn
				want map[string]int
			}{{"Dial", c, netDialled}, {"accepted", s, netAccepted}} {
				for _, o := range tcpDefaults {
					v, err := weft.ConnSockopt(side.c, o.level, o.opt)
					if err != nil {
						t.Fatal(side.name, o.name, err)
					}
					if (v != 0) != (side.want[o.name] != 0) || (o.opt != unix.SO_KEEPALIVE && o.opt != unix.TCP_NODELAY && v != side.want[o.name]) {
						t.Errorf("%s connection: %s = %d, net's is %d", side.name, o.name, v, side.want[o.name])
					}
				}
			}
		}, opts...)
	})
}
