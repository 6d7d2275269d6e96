//go:build linux

package weft

// Sockets on the io_uring backend: completion-based operations.
//
// A stream's Read and Write, a listener's Accept and a Dial's connect
// each submit one operation to the ring of the fd's home loop and suspend
// the task until it completes (awaitOp, fd.go); the loop submits
// everything its tasks queued with one io_uring_enter when it would
// otherwise poll, and resumes the tasks from the completions. The buffer
// is the caller's own: the kernel receives into it or sends from it
// directly, and owns it until the completion, for which the task waits
// even when it is cancelled (the operation is cancelled, and what it did
// before the cancel took is delivered: poller.go, rule 10).
//
// Pipes, datagram sockets and Readable/Writable keep the readiness path
// (try the system call, wait on a one-shot poll after EAGAIN).

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"github.com/weft-go/weft/internal/poller"
	"golang.org/x/sys/unix"
)

// useRing reports whether fd's stream I/O goes through its home loop's
// ring.
func (fd *netFD) useRing() bool { return fd.loop.ring != nil && fd.kind == fdStream }

// ringOps is the net layer's state per Run on io_uring (layerState): the
// free operations of each loop's ring, indexed by the loop's id. Each
// list is owned by its loop; an fd homed on a loop with a ring holds that
// loop's list (netFD.ops), so taking an operation costs no lock.
type ringOps struct {
	loops []freeOps
}

// ringOpsKey is ringOps's key for layerState.
type ringOpsKey struct{}

// freeOps is one loop's free operations (loop-owned), padded to a cache
// line, so that the loops do not write to one line.
type freeOps struct {
	home *loop
	ops  []*poller.Op
	_    [64 - 4*unsafe.Sizeof(uintptr(0))]byte
}

// maxFreeOps bounds the free operations a loop keeps.
const maxFreeOps = 256

// freeOpsOf returns the free operations of loop l's ring, making its
// Run's ringOps on first use.
func freeOpsOf(l *loop) *freeOps {
	r := layerState(l, ringOpsKey{}, func() (*ringOps, func()) {
		r := &ringOps{loops: make([]freeOps, len(l.rs.loops))}
		for i, hl := range l.rs.loops {
			r.loops[i].home = hl
		}
		return r, nil
	})
	return &r.loops[l.id]
}

// get returns a free operation; only the list's loop calls it (an fd's
// operations start on its home loop).
func (f *freeOps) get() *poller.Op {
	if n := len(f.ops); n > 0 {
		op := f.ops[n-1]
		f.ops[n-1] = nil
		f.ops = f.ops[:n-1]
		return op
	}
	return new(poller.Op)
}

// put gives back an operation whose completion was consumed; l is the
// caller's loop. One the kernel still owns (its task was unwound
// mid-wait) is left to it, and one whose task was handed to another loop
// since it was woken is left to the collector: the list is its home
// loop's alone.
func (f *freeOps) put(l *loop, op *poller.Op) {
	if op.InFlight() {
		return
	}
	op.Release()
	if l == f.home && len(f.ops) < maxFreeOps {
		f.ops = append(f.ops, op)
	}
}

// opStart readies t for an operation on fd in direction m: a
// cancellation point; a task on another loop moves to fd's home first
// (moved: the caller starts over there); a deadline that has passed ends
// it.
func (fd *netFD) opStart(t *Task, m poller.Mode) (moved bool, err error) {
	if err := t.cancelPoint(); err != nil {
		return false, err
	}
	if t.loop.aborted {
		return false, errAborted
	}
	if fd.loop != t.loop {
		return true, t.migrate(fd.loop, "a Conn, Listener or File")
	}
	if fd.dl != nil {
		if err := fd.dl.expired(t.loop, m); err != nil {
			return false, err
		}
	}
	return false, nil
}

// retryable reports the results after which an operation is simply
// submitted again (a close in progress is found by the caller's check).
func retryable(res int32) bool {
	switch syscall.Errno(-res) {
	case unix.EINTR, unix.EAGAIN, unix.ECANCELED:
		return true
	}
	return false
}

// recvOp is read on the ring.
func (fd *netFD) recvOp(t *Task, b []byte) (int, error) {
	if p := fd.loop.ring.Provided(); p != nil && multishotRecv {
		return fd.recvMultishot(t, b, p)
	}
	return fd.recvSingle(t, b)
}

// recvSingle is a read as one receive operation into b.
func (fd *netFD) recvSingle(t *Task, b []byte) (int, error) {
	for {
		if fd.closing.Load() {
			return 0, fd.opErr("read", net.ErrClosed)
		}
		if moved, err := fd.opStart(t, poller.Read); err != nil {
			return 0, fd.opErr("read", err)
		} else if moved {
			continue
		}
		op := fd.ops.get()
		op.Recv(fd.fd, b)
		if fd.drained {
			op.PollFirst()
		}
		err := t.awaitOp(op, fd.fd, poller.Read)
		res := op.Res
		fd.ops.put(t.loop, op) // t may have been handed to another loop since it was woken
		if res > 0 {
			fd.drained = int(res) < len(b) // t is still pinned to fd's loop: Conn.Read
			// Delivered even if the task was interrupted meanwhile: the
			// data is read (the cancellation shows at the next wait).
			t.spendBudget()
			return int(res), nil
		}
		if fd.closing.Load() {
			return 0, fd.opErr("read", net.ErrClosed)
		}
		if err != nil {
			return 0, fd.opErr("read", err)
		}
		if res == 0 {
			t.spendBudget()
			return 0, io.EOF
		}
		if retryable(res) {
			continue
		}
		return 0, fd.opErr("read", os.NewSyscallError("recv", syscall.Errno(-res)))
	}
}

// sendOp is write on the ring: it loops until b is all sent.
func (fd *netFD) sendOp(t *Task, b []byte) (int, error) {
	written := 0
	for written < len(b) {
		if fd.closing.Load() {
			return written, fd.opErr("write", net.ErrClosed)
		}
		if moved, err := fd.opStart(t, poller.Write); err != nil {
			return written, fd.opErr("write", err)
		} else if moved {
			continue
		}
		op := fd.ops.get()
		op.Send(fd.fd, b[written:])
		err := t.awaitOp(op, fd.fd, poller.Write)
		res := op.Res
		fd.ops.put(t.loop, op) // t may have been handed to another loop since it was woken
		if res > 0 {
			written += int(res) // sent, whatever interrupted the wait
		}
		if res < 0 && fd.closing.Load() {
			// Close shut the socket down under the send, which then
			// failed (EPIPE): the Close is the cause, as on epoll.
			return written, fd.opErr("write", net.ErrClosed)
		}
		if err != nil {
			return written, fd.opErr("write", err)
		}
		if res >= 0 || retryable(res) {
			continue
		}
		return written, fd.opErr("write", os.NewSyscallError("send", syscall.Errno(-res)))
	}
	t.spendBudget()
	return written, nil
}

// acceptOp is accept on the ring.
func (ln *fdListener) acceptOp(t *Task) (connImpl, error) {
	fd := ln.fd
	for {
		if fd.closing.Load() {
			return nil, fd.opErr("accept", net.ErrClosed)
		}
		if moved, err := fd.opStart(t, poller.Read); err != nil {
			return nil, fd.opErr("accept", err)
		} else if moved {
			continue
		}
		op := fd.ops.get()
		sa := new(unix.RawSockaddrAny)
		op.Accept(fd.fd, (*[unix.SizeofSockaddrAny]byte)(unsafe.Pointer(sa))[:])
		err := t.awaitOp(op, fd.fd, poller.Read)
		res, alen := op.Res, op.AddrLen()
		fd.ops.put(t.loop, op) // t may have been handed to another loop since it was woken
		if res >= 0 {
			// A connection accepted as the task was interrupted is
			// delivered, not dropped: its client is connected.
			t.spendBudget()
			if ln.keepAlive > 0 {
				setKeepAlive(int(res), ln.keepAlive) // a ListenConfig's
			}
			return newStreamConn(t, int(res), ln.k, sockaddrOfRaw(sa, alen))
		}
		if fd.closing.Load() {
			return nil, fd.opErr("accept", net.ErrClosed)
		}
		if err != nil {
			return nil, fd.opErr("accept", err)
		}
		switch e := syscall.Errno(-res); e {
		case unix.ECONNABORTED:
			continue
		default:
			if retryable(res) {
				continue
			}
			return nil, fd.opErr("accept", os.NewSyscallError("accept4", e))
		}
	}
}

// connectOp connects fd to sa on the ring. A cancelled connect fails
// (the caller closes the socket) even if it had completed.
func (fd *netFD) connectOp(t *Task, sa unix.Sockaddr) error {
	raw, err := rawSockaddr(sa)
	if err != nil {
		return err
	}
	for {
		if _, err := fd.opStart(t, poller.Write); err != nil {
			return err
		}
		op := fd.ops.get()
		op.Connect(fd.fd, raw)
		err := t.awaitOp(op, fd.fd, poller.Write)
		res := op.Res
		fd.ops.put(t.loop, op) // t may have been handed to another loop since it was woken
		if err != nil {
			return err
		}
		switch e := syscall.Errno(-res); {
		case res == 0, e == unix.EISCONN:
			return nil
		case e == unix.EINTR || e == unix.EALREADY || e == unix.EINPROGRESS:
			continue
		default:
			return os.NewSyscallError("connect", e)
		}
	}
}

// rawSockaddr encodes sa as the kernel's struct sockaddr_*.
func rawSockaddr(sa unix.Sockaddr) ([]byte, error) {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		var r unix.RawSockaddrInet4
		r.Family = unix.AF_INET
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&r.Port))[:], uint16(sa.Port))
		r.Addr = sa.Addr
		return append([]byte(nil), (*[unix.SizeofSockaddrInet4]byte)(unsafe.Pointer(&r))[:]...), nil
	case *unix.SockaddrInet6:
		var r unix.RawSockaddrInet6
		r.Family = unix.AF_INET6
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&r.Port))[:], uint16(sa.Port))
		r.Addr = sa.Addr
		r.Scope_id = sa.ZoneId
		return append([]byte(nil), (*[unix.SizeofSockaddrInet6]byte)(unsafe.Pointer(&r))[:]...), nil
	case *unix.SockaddrUnix:
		name := sa.Name
		n := len(name)
		var r unix.RawSockaddrUnix
		if n > len(r.Path) {
			return nil, unix.EINVAL
		}
		if n == len(r.Path) && name[0] != '@' {
			return nil, unix.EINVAL
		}
		r.Family = unix.AF_UNIX
		for i := range n {
			r.Path[i] = int8(name[i])
		}
		sl := 2
		if n > 0 {
			sl += n + 1
		}
		if r.Path[0] == '@' || (r.Path[0] == 0 && n > 0) {
			r.Path[0] = 0 // abstract: no trailing NUL
			sl--
		}
		return append([]byte(nil), (*[unix.SizeofSockaddrUnix]byte)(unsafe.Pointer(&r))[:sl]...), nil
	}
	return nil, unix.EAFNOSUPPORT
}

// sockaddrOfRaw decodes the address accept filled in (nil if it is of no
// family we know).
func sockaddrOfRaw(sa *unix.RawSockaddrAny, n int) unix.Sockaddr {
	switch sa.Addr.Family {
	case unix.AF_INET:
		r := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		p := (*[2]byte)(unsafe.Pointer(&r.Port))
		return &unix.SockaddrInet4{Port: int(binary.BigEndian.Uint16(p[:])), Addr: r.Addr}
	case unix.AF_INET6:
		r := (*unix.RawSockaddrInet6)(unsafe.Pointer(sa))
		p := (*[2]byte)(unsafe.Pointer(&r.Port))
		return &unix.SockaddrInet6{Port: int(binary.BigEndian.Uint16(p[:])), Addr: r.Addr, ZoneId: r.Scope_id}
	case unix.AF_UNIX:
		r := (*unix.RawSockaddrUnix)(unsafe.Pointer(sa))
		n -= 2 // the family
		if n <= 0 {
			// An unnamed peer: "@", as accept4's decoding (x/sys, the
			// net package) gives for a path that starts with a NUL.
			return &unix.SockaddrUnix{Name: "@"}
		}
		n = min(n, len(r.Path))
		b := make([]byte, 0, n)
		for i := range n {
			if r.Path[i] == 0 && i > 0 {
				break
			}
			b = append(b, byte(r.Path[i]))
		}
		if len(b) > 0 && b[0] == 0 {
			b[0] = '@' // abstract
		}
		return &unix.SockaddrUnix{Name: string(b)}
	}
	return nil
}

// Multishot receives. A stream's first Read arms one receive that stays
// armed: the kernel fills a buffer of the loop's provided ring each time
// data arrives and posts a completion, which complete queues on the fd;
// Read copies from the queue. So a request costs no submission for its
// receive, and an idle connection holds no buffer (only a queue with data
// holds one). A cancelled Read takes nothing from the queue: nothing is
// lost. A connection whose reader falls behind stops its receive once it
// holds maxQueued buffers, so that it cannot take the whole ring; when the
// ring is empty anyway (ENOBUFS), the next Read is a single receive into
// the caller's buffer.

// multishotRecv turns multishot receives on (WEFT_URING_MULTISHOT=0 turns
// them off, for measurements).
var multishotRecv = os.Getenv("WEFT_URING_MULTISHOT") != "0"

// maxQueued bounds the provided buffers one connection holds unread.
const maxQueued = 8

// recvd is a provided buffer that holds received bytes not yet read.
type recvd struct {
	bid    uint16
	off, n int
}

func (fd *netFD) recvMultishot(t *Task, b []byte, p *poller.Provided) (int, error) {
	for {
		if fd.closing.Load() {
			return 0, fd.opErr("read", net.ErrClosed)
		}
		if len(fd.rq) > 0 {
			// Data already here: a Read that waits for nothing (t is on
			// fd's loop: Conn.Read moved and pinned it).
			if t.loop == fd.loop {
				n := fd.copyOut(p, b)
				t.spendBudget()
				return n, nil
			}
		}
		if moved, err := fd.opStart(t, poller.Read); err != nil {
			return 0, fd.opErr("read", err)
		} else if moved {
			continue
		}
		switch {
		case len(fd.rq) > 0:
			continue
		case fd.rErr != nil:
			err := fd.rErr
			fd.rErr = nil
			return 0, fd.opErr("read", os.NewSyscallError("recv", err))
		case fd.rEOF:
			t.spendBudget()
			return 0, io.EOF
		case fd.noBufs && fd.ms == nil:
			fd.noBufs = false
			return fd.recvSingle(t, b)
		}
		l := t.loop
		if fd.ms == nil {
			op := fd.ops.get()
			op.RecvMultishot(fd.fd, p)
			op.Owner = fd
			fd.ms = op
			l.ring.Submit(op)
		}
		// Wait for complete to queue something (or the close, or the
		// end of the receive): as a reader of the fd.
		if err := t.waitWatched(fd.fd, poller.Read); err != nil {
			return 0, fd.opErr("read", err)
		}
	}
}

// copyOut moves queued bytes into b and gives emptied buffers back.
func (fd *netFD) copyOut(p *poller.Provided, b []byte) int {
	n, i := 0, 0
	for n < len(b) && i < len(fd.rq) {
		r := &fd.rq[i]
		k := copy(b[n:], p.Buf(r.bid, r.off+r.n)[r.off:])
		r.off += k
		r.n -= k
		n += k
		if r.n == 0 {
			p.Recycle(r.bid)
			i++
		}
	}
	fd.rq = fd.rq[:copy(fd.rq, fd.rq[i:])]
	return n
}

// complete takes a completion of fd's multishot receive (on fd's loop).
func (fd *netFD) complete(l *loop, c poller.Completion) {
	p := l.ring.Provided()
	if !c.More() {
		fd.ms = nil
		fd.ops.put(l, c.Op)
	}
	bid, hasBuf := c.Buffer()
	if fd.closing.Load() {
		if hasBuf {
			p.Recycle(bid)
		}
		fd.dropReceived(l)
		return
	}
	switch e := syscall.Errno(-c.Res); {
	case c.Res > 0 && hasBuf:
		fd.rq = append(fd.rq, recvd{bid: bid, n: int(c.Res)})
	case c.Res == 0:
		if hasBuf {
			p.Recycle(bid)
		}
		fd.rEOF = true
	case e == unix.ENOBUFS:
		fd.noBufs = true
	case e == unix.ECANCELED, e == unix.EINTR, e == unix.EAGAIN:
	default:
		fd.rErr = e
	}
	if len(fd.rq) >= maxQueued && fd.ms != nil {
		l.ring.Cancel(fd.ms) // the reader is behind: stop receiving for now
	}
	l.fds.wake(l, fd.fd, poller.Read)
}

// dropReceived gives back the buffers of a closing fd (on its loop).
func (fd *netFD) dropReceived(l *loop) {
	if len(fd.rq) == 0 || l.ring == nil {
		return
	}
	p := l.ring.Provided()
	for _, r := range fd.rq {
		p.Recycle(r.bid)
	}
	fd.rq = nil
}
