//go:build unix

// Package polite is the polite client of the fairness tests and benchmarks:
// 64-byte round trips on a blocking socket, timed one by one, beside
// clients that keep a server busy.
package polite

import (
	"io"
	"net"
	"syscall"
	"time"
)

// Dial connects a blocking TCP socket to a (IPv4) and returns its
// descriptor, for RoundTrips. A blocking socket rather than a net.Conn: a
// goroutine that waits in Go's netpoller beside busy processors is seen
// only when Go's scheduler next polls, up to 10 ms later, which would
// measure Go's scheduler rather than the server's; one blocked in read(2)
// wakes with its thread.
func Dial(a *net.TCPAddr) (int, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		return -1, err
	}
	sa := &syscall.SockaddrInet4{Port: a.Port}
	copy(sa.Addr[:], a.IP.To4())
	if err := syscall.Connect(fd, sa); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

// RoundTrips makes n round trips of 64 bytes to an echo server on the
// blocking socket fd, 200 µs apart, and returns how long each took, in
// order.
func RoundTrips(fd, n int) ([]time.Duration, error) {
	msg := make([]byte, 64)
	rtts := make([]time.Duration, 0, n)
	for range n {
		time.Sleep(200 * time.Microsecond)
		start := time.Now()
		if _, err := syscall.Write(fd, msg); err != nil {
			return nil, err
		}
		for got := 0; got < len(msg); {
			m, err := syscall.Read(fd, msg[got:])
			if err != nil {
				return nil, err
			}
			if m == 0 {
				return nil, io.ErrUnexpectedEOF
			}
			got += m
		}
		rtts = append(rtts, time.Since(start))
	}
	return rtts, nil
}
