//go:build linux

package poller

import (
	"bytes"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// extraBackends adds io_uring to the backends every readiness test runs
// on, where the kernel has it.
func extraBackends() map[string]Poller {
	r, err := newUring(Options{})
	if err != nil {
		return nil
	}
	return map[string]Poller{"io_uring": r}
}

func newRing(t *testing.T) *uring {
	t.Helper()
	r, err := newUring(Options{})
	if err != nil {
		t.Skip("no io_uring here:", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func socketPair(t *testing.T) (a, b int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

// waitFor runs Wait until op has completed, or fails after a few seconds.
func waitFor(t *testing.T, r *uring, op *Op) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := r.Wait(100*time.Millisecond, nil); err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Completed() {
			if c.Op == op {
				return
			}
		}
	}
	t.Fatal("operation never completed")
}

func TestRingRecvCompletesWhenDataArrives(t *testing.T) {
	r := newRing(t)
	a, b := socketPair(t)
	buf := make([]byte, 64)
	op := new(Op)
	op.Recv(a, buf)
	r.Submit(op)
	// Nothing has arrived: a Wait that does not block finds nothing.
	r.Wait(0, nil)
	if len(r.Completed()) != 0 || !op.InFlight() {
		t.Fatal("a receive completed with nothing sent")
	}
	unix.Write(b, []byte("hello"))
	waitFor(t, r, op)
	if op.Res != 5 || string(buf[:5]) != "hello" || op.InFlight() {
		t.Fatalf("Res %d, %q, in flight %v", op.Res, buf[:max(op.Res, 0)], op.InFlight())
	}
}

func TestRingSendThenRecvInOneBatch(t *testing.T) {
	r := newRing(t)
	a, b := socketPair(t)
	send, recv := new(Op), new(Op)
	msg := bytes.Repeat([]byte("x"), 1000)
	send.Send(a, msg)
	in := make([]byte, 2000)
	recv.Recv(b, in)
	r.Submit(send)
	r.Submit(recv)
	waitFor(t, r, recv)
	if send.InFlight() {
		waitFor(t, r, send)
	}
	if send.Res != 1000 || recv.Res != 1000 || !bytes.Equal(in[:1000], msg) {
		t.Fatalf("send %d, recv %d", send.Res, recv.Res)
	}
}

func TestRingCancelledRecvReturnsECANCELED(t *testing.T) {
	r := newRing(t)
	a, _ := socketPair(t)
	op := new(Op)
	op.Recv(a, make([]byte, 8))
	r.Submit(op)
	r.Wait(0, nil) // submitted, waiting for data
	r.Cancel(op)
	waitFor(t, r, op)
	if op.Res != -int32(syscall.ECANCELED) && op.Res != -int32(syscall.EINTR) {
		t.Fatalf("cancelled receive: Res %d", op.Res)
	}
}

// A cancel that comes after the operation completed changes nothing: the
// result is the data (rule 10).
func TestRingCancelAfterCompletionKeepsTheData(t *testing.T) {
	r := newRing(t)
	a, b := socketPair(t)
	unix.Write(b, []byte("data"))
	op := new(Op)
	buf := make([]byte, 8)
	op.Recv(a, buf)
	r.Submit(op)
	r.Cancel(op) // in the same batch, after it: the receive finds data at once
	waitFor(t, r, op)
	if op.Res != 4 || string(buf[:4]) != "data" {
		t.Fatalf("Res %d, %q", op.Res, buf)
	}
}

func TestRingUnwatchCancelsEverythingOnTheFD(t *testing.T) {
	r := newRing(t)
	a, _ := socketPair(t)
	op1, op2 := new(Op), new(Op)
	op1.Recv(a, make([]byte, 8))
	op2.Recv(a, make([]byte, 8))
	r.Submit(op1)
	r.Submit(op2)
	r.Wait(0, nil)
	r.Unwatch(a)
	waitFor(t, r, op1)
	if op2.InFlight() {
		waitFor(t, r, op2)
	}
	for _, op := range []*Op{op1, op2} {
		if op.Res != -int32(syscall.ECANCELED) {
			t.Fatalf("Res %d after Unwatch", op.Res)
		}
	}
}

func TestRingAcceptAndConnect(t *testing.T) {
	r := newRing(t)
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	unix.Listen(ln, 8)
	sa, _ := unix.Getsockname(ln)
	port := sa.(*unix.SockaddrInet4).Port
	c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(c)
	acc := new(Op)
	peer := make([]byte, unix.SizeofSockaddrAny)
	acc.Accept(ln, peer)
	raw := make([]byte, unix.SizeofSockaddrInet4)
	raw[0] = unix.AF_INET // little-endian family
	raw[2], raw[3] = byte(port>>8), byte(port)
	raw[4], raw[7] = 127, 1
	conn := new(Op)
	conn.Connect(c, raw)
	r.Submit(acc)
	r.Submit(conn)
	waitFor(t, r, acc)
	if conn.InFlight() {
		waitFor(t, r, conn)
	}
	if conn.Res != 0 || acc.Res < 0 {
		t.Fatalf("connect %d, accept %d", conn.Res, acc.Res)
	}
	unix.Close(int(acc.Res))
	if acc.AddrLen() != unix.SizeofSockaddrInet4 {
		t.Fatalf("accepted peer address of %d bytes", acc.AddrLen())
	}
}

func TestRingCloseWithOperationsInFlight(t *testing.T) {
	r, err := newUring(Options{})
	if err != nil {
		t.Skip("no io_uring here:", err)
	}
	a, _ := socketPair(t)
	op := new(Op)
	op.Recv(a, make([]byte, 8))
	r.Submit(op)
	r.Wait(0, nil)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if op.InFlight() {
		t.Fatal("Close returned with the receive still the kernel's")
	}
}
