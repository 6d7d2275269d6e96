//go:build linux

package poller

// The io_uring backend: completion-based I/O (see "The completion side" in
// poller.go) and readiness through one-shot IORING_OP_POLL_ADD.
//
// Some facts about io_uring that this backend relies on:
//
//   - The submission queue (SQ) and completion queue (CQ) are shared with
//     the kernel through mmap. We write an SQE, publish it by storing the
//     SQ tail with release semantics, and the kernel consumes it at the
//     next io_uring_enter. The kernel publishes a CQE by storing the CQ
//     tail; we consume it by storing the CQ head. Both sides are plain
//     memory: no system call unless we enter.
//   - A socket operation is tried at once, without blocking, when it is
//     submitted; if it would block, the kernel arms an internal poll and
//     completes it when the socket is ready (FAST_POLL). So a send with
//     room in the socket buffer completes during the enter that submitted
//     it, and its CQE is there when enter returns.
//   - IORING_SETUP_SINGLE_ISSUER|DEFER_TASKRUN (6.1) defers the kernel's
//     completion work to the issuing thread's next enter with GETEVENTS:
//     no interrupt of a busy loop, completions gathered in batches. It
//     requires that one thread submits: a Go goroutine moves between
//     threads, so the loop locks its goroutine to its thread for the
//     ring's life (Options.SingleIssuer). The ring is created disabled
//     and enabled by Start on that thread.
//   - IORING_ASYNC_CANCEL cancels an operation in flight; the operation
//     still posts its own CQE: -ECANCELED if it was cancelled, or its
//     result if it had completed first. The cancel posts a CQE of its own.
//   - An operation holds a reference to its file, so closing the fd number
//     while it is in flight neither frees the socket nor lets the number's
//     reuse reach the operation.
//   - With IORING_FEAT_NODROP, a full CQ keeps completions in an overflow
//     list; an enter with GETEVENTS flushes them.

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// io_uring ABI (include/uapi/linux/io_uring.h).
const (
	iouOpNop         = 0
	iouOpPollAdd     = 6
	iouOpPollRemove  = 7
	iouOpSendmsg     = 9
	iouOpRecvmsg     = 10
	iouOpAccept      = 13
	iouOpAsyncCancel = 14
	iouOpConnect     = 16
	iouOpRead        = 22
	iouOpWrite       = 23
	iouOpSend        = 26
	iouOpRecv        = 27

	iouSetupCQSize       = 1 << 3
	iouSetupClamp        = 1 << 4
	iouSetupRDisabled    = 1 << 6
	iouSetupSubmitAll    = 1 << 7
	iouSetupCoopTaskrun  = 1 << 8
	iouSetupTaskrunFlag  = 1 << 9
	iouSetupSingleIssuer = 1 << 12
	iouSetupDeferTaskrun = 1 << 13

	iouEnterGetevents = 1 << 0
	iouEnterExtArg    = 1 << 3

	iouFeatNodrop = 1 << 1
	iouFeatExtArg = 1 << 8

	iouSQNeedWakeup = 1 << 0
	iouSQCQOverflow = 1 << 1
	iouSQTaskrun    = 1 << 2

	iouCQEFBuffer = 1 << 0
	iouCQEFMore   = 1 << 1

	iouSQEBufferSelect  = 1 << 5
	iouRecvMultishot    = 1 << 1
	iouRegisterPbufRing = 22
	iouOpFixedFile      = 0

	iouAcceptMultishot   = 1 << 0
	iouRecvsendPollFirst = 1 << 0

	iouCancelAll = 1 << 0
	iouCancelFd  = 1 << 1
	iouCancelAny = 1 << 2

	iouRegisterEnableRings = 12
	iouRegisterRingFds     = 20

	iouOffSQRing = 0
	iouOffCQRing = 0x8000000
	iouOffSQEs   = 0x10000000
)

type iouSQOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type iouCQOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type iouParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  iouSQOffsets
	cqOff                                                                  iouCQOffsets
}

type iouSQE struct {
	opcode   uint8
	flags    uint8
	ioprio   uint16
	fd       int32
	off      uint64
	addr     uint64
	len      uint32
	opFlags  uint32
	userData uint64
	bufIndex uint16
	personal uint16
	spliceFd int32
	addr3    uint64
	pad      uint64
}

type iouCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

type iouGeteventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	minWait   uint32
	ts        uint64
}

// Op is one completion-based operation (see "The completion side" in
// poller.go). Prepare it with one of its methods, give it to Submit, and
// read Res once Completed lists it.
type Op struct {
	code    uint8
	ioprio  uint16
	fd      int32
	buf     []byte // the kernel reads or writes it until the completion
	off     uint64
	opFlags uint32
	mode    Mode // a readiness poll of Arm: the direction it reports

	// Res is the completion's result: a count (bytes, an fd) or a negated
	// errno. Flags are the CQE's flags.
	Res   int32
	Flags uint32
	// Owner is the submitter's: the backend never reads it.
	Owner any

	alen      uint32 // accept: the address's room, then its length (the kernel writes it)
	sqeFlags  uint8  // IOSQE_* flags
	bgid      uint16 // the provided buffers' group (multishot receive)
	slot      uint32 // index+1 in the in-flight table; 0 when not in flight
	cancelled bool   // a cancel was submitted for it
	quiet     bool   // an Arm poll that was disarmed: its completion reports nothing
}

// Recv prepares a receive into b from the socket fd.
func (op *Op) Recv(fd int, b []byte) { op.prep(iouOpRecv, fd, b, 0) }

// PollFirst makes a prepared receive wait for readiness before it tries
// (IORING_RECVSEND_POLL_FIRST): for a socket known to be drained, it
// saves the kernel a receive that would find nothing. Nothing is lost:
// the poll finds data already there.
func (op *Op) PollFirst() { op.ioprio |= iouRecvsendPollFirst }

// RecvMultishot prepares a multishot receive from the socket fd into the
// buffers of p: each completion carries one buffer (Buffer), and the
// receive stays armed while completions have More.
func (op *Op) RecvMultishot(fd int, p *Provided) {
	op.prep(iouOpRecv, fd, nil, 0)
	op.ioprio = iouRecvMultishot
	op.sqeFlags = iouSQEBufferSelect
	op.bgid = p.group
}

// More reports whether a completion of a multishot operation is followed
// by others (the operation is still armed).
func (c Completion) More() bool { return c.Flags&iouCQEFMore != 0 }

// Buffer returns the provided buffer a multishot receive's completion
// filled (ok false if it carries none).
func (c Completion) Buffer() (bid uint16, ok bool) {
	return uint16(c.Flags >> 16), c.Flags&iouCQEFBuffer != 0
}

// Send prepares a send of b on the socket fd (MSG_NOSIGNAL: a reset peer
// is an error, never a signal).
func (op *Op) Send(fd int, b []byte) { op.prep(iouOpSend, fd, b, unix.MSG_NOSIGNAL) }

// Accept prepares an accept on the listening socket fd; the new socket is
// non-blocking and close-on-exec, and Res is its fd. The peer's address
// goes into sa (a struct sockaddr_storage's room), AddrLen its length.
func (op *Op) Accept(fd int, sa []byte) {
	op.prep(iouOpAccept, fd, sa, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
	op.alen = uint32(len(sa))
}

// AddrLen is the length of the address an accept filled in.
func (op *Op) AddrLen() int { return int(op.alen) }

// Connect prepares a connect of the socket fd to the raw socket address
// sa (a struct sockaddr_*, whose length is len(sa)).
func (op *Op) Connect(fd int, sa []byte) { op.prep(iouOpConnect, fd, sa, 0) }

// Read prepares a read(2) of fd into b; Write a write(2) of b.
func (op *Op) Read(fd int, b []byte)  { op.prep(iouOpRead, fd, b, 0) }
func (op *Op) Write(fd int, b []byte) { op.prep(iouOpWrite, fd, b, 0) }

func (op *Op) prep(code uint8, fd int, b []byte, flags uint32) {
	if op.slot != 0 {
		panic("weft: internal error: an io_uring operation prepared while in flight")
	}
	op.code, op.fd, op.buf, op.opFlags, op.ioprio, op.off = code, int32(fd), b, flags, 0, 0
	if code == iouOpRead || code == iouOpWrite {
		op.off = ^uint64(0) // the file's position (pipes have none)
	}
	op.Res, op.Flags, op.cancelled, op.quiet, op.mode, op.sqeFlags, op.bgid = 0, 0, false, false, 0, 0, 0
}

// InFlight reports whether op was submitted and has not yet completed.
func (op *Op) InFlight() bool { return op.slot != 0 }

// Release drops op's buffer and owner, once the caller is done with its
// result, so that a pooled Op keeps nothing alive.
func (op *Op) Release() { op.buf, op.Owner = nil, nil }

// Err returns the error of a negative Res, nil otherwise.
func (op *Op) Err() error {
	if op.Res >= 0 {
		return nil
	}
	return syscall.Errno(-op.Res)
}

// wakeSlot is the user_data of the eventfd read that carries Wake; 0 is
// the user_data of cancels and removals, whose completions say nothing.
const wakeSlot = ^uint64(0)

type uring struct {
	fd       int
	setup    uint32 // the setup flags in effect
	features uint32
	started  bool

	sqMem, cqMem, sqeMem []byte
	sqHead, sqTail       *uint32
	sqFlags              *uint32
	sqMask, sqEntries    uint32
	sqArray              unsafe.Pointer
	sqes                 unsafe.Pointer
	cqHead, cqTail       *uint32
	cqMask               uint32
	cqes                 unsafe.Pointer
	tail                 uint32 // our SQ tail: SQEs written, published at flush

	ops  []*Op // in flight, by slot-1: keeps each Op and its buffer reachable
	free []uint32

	armed map[int]*[2]*Op // Arm's polls in flight, by fd: [read, write]
	spare []*Op           // finished Arm polls, for reuse

	wakefd    int
	wakeBuf   []byte
	wakeArmed bool // the eventfd read is in flight
	woken     atomic.Bool

	done    []Completion // completed by the last Wait
	prov    *Provided
	noProv  bool // no Provided: failed, or not wanted
	noBatch bool // WEFT_URING_BATCH=0 (measurements only)
	closing bool

	// Parking in the Go runtime's netpoller on the ring's fd, which is
	// readable while CQEs wait (rings without DEFER_TASKRUN): see park.
	file    *os.File
	rc      syscall.RawConn
	parkDL  time.Time
	tryWait func(uintptr) bool
}

// leaked keeps the operations of a ring that was closed while the kernel
// still owned them: their buffers must never be reused.
var leaked struct {
	sync.Mutex
	ops []*Op
}

// ErrNoUring is returned when the kernel does not give an io_uring
// (ENOSYS, a seccomp profile that forbids it, io_uring_disabled).
var ErrNoUring = errors.New("weft: io_uring is not available")

func newUring(o Options) (*uring, error) {
	var flags uint32 = iouSetupCQSize | iouSetupClamp | iouSetupSubmitAll
	if os.Getenv("WEFT_URING_DEFER") == "0" {
		o.SingleIssuer = false
	}
	if os.Getenv("WEFT_URING_COOP") == "1" {
		flags |= iouSetupCoopTaskrun | iouSetupTaskrunFlag
	}
	if o.SingleIssuer {
		flags |= iouSetupSingleIssuer | iouSetupDeferTaskrun | iouSetupTaskrunFlag | iouSetupRDisabled
	}
	r, err := setupUring(256, 4096, flags)
	if err != nil && o.SingleIssuer {
		// A kernel before 6.1: no DEFER_TASKRUN; the plain ring works.
		r, err = setupUring(256, 4096, iouSetupCQSize|iouSetupClamp|iouSetupSubmitAll)
	}
	if err != nil {
		return nil, err
	}
	if r.features&iouFeatNodrop == 0 || r.features&iouFeatExtArg == 0 {
		r.Close()
		return nil, ErrNoUring // before 5.11: not worth a special case
	}
	wfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		r.Close()
		return nil, os.NewSyscallError("eventfd", err)
	}
	r.wakefd = wfd
	r.wakeBuf = make([]byte, 8)
	r.noBatch = os.Getenv("WEFT_URING_BATCH") == "0"
	r.armWake()
	if r.setup&iouSetupDeferTaskrun == 0 && os.Getenv("WEFT_URING_PARK") != "0" {
		// The ring's fd is pollable: POLLIN while the CQ holds entries.
		// A dup goes to the runtime's poller, so that closing the os.File
		// never closes the ring under us.
		if dfd, err := unix.FcntlInt(uintptr(r.fd), unix.F_DUPFD_CLOEXEC, 0); err == nil {
			if unix.SetNonblock(dfd, true) == nil {
				r.file = os.NewFile(uintptr(dfd), "weft-io_uring")
				if rc, err := r.file.SyscallConn(); err == nil {
					r.rc = rc
					r.tryWait = func(uintptr) bool { return r.cqReady() }
				}
			} else {
				unix.Close(dfd)
			}
		}
	}
	return r, nil
}

// cqReady reports whether completions wait in the CQ, first running the
// kernel's pending completion work if it says it has some (TASKRUN).
func (r *uring) cqReady() bool {
	if atomic.LoadUint32(r.sqFlags)&(iouSQTaskrun|iouSQCQOverflow) != 0 {
		r.enter(0, iouEnterGetevents, nil)
	}
	return atomic.LoadUint32(r.cqTail) != atomic.LoadUint32(r.cqHead)
}

func setupUring(entries, cqEntries, flags uint32) (*uring, error) {
	p := iouParams{flags: flags, cqEntries: cqEntries}
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, ErrNoUring
	}
	r := &uring{fd: int(fd), setup: flags, features: p.features, armed: map[int]*[2]*Op{}, wakefd: -1}
	r.started = flags&iouSetupRDisabled == 0
	sqSize := p.sqOff.array + p.sqEntries*4
	cqSize := p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(iouCQE{}))
	var err error
	if r.sqMem, err = unix.Mmap(r.fd, iouOffSQRing, int(sqSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		r.Close()
		return nil, os.NewSyscallError("mmap", err)
	}
	if r.cqMem, err = unix.Mmap(r.fd, iouOffCQRing, int(cqSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		r.Close()
		return nil, os.NewSyscallError("mmap", err)
	}
	if r.sqeMem, err = unix.Mmap(r.fd, iouOffSQEs, int(p.sqEntries)*int(unsafe.Sizeof(iouSQE{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		r.Close()
		return nil, os.NewSyscallError("mmap", err)
	}
	sq := unsafe.Pointer(&r.sqMem[0])
	r.sqHead = (*uint32)(unsafe.Add(sq, p.sqOff.head))
	r.sqTail = (*uint32)(unsafe.Add(sq, p.sqOff.tail))
	r.sqFlags = (*uint32)(unsafe.Add(sq, p.sqOff.flags))
	r.sqMask = *(*uint32)(unsafe.Add(sq, p.sqOff.ringMask))
	r.sqEntries = *(*uint32)(unsafe.Add(sq, p.sqOff.ringEntries))
	r.sqArray = unsafe.Add(sq, p.sqOff.array)
	r.sqes = unsafe.Pointer(&r.sqeMem[0])
	cq := unsafe.Pointer(&r.cqMem[0])
	r.cqHead = (*uint32)(unsafe.Add(cq, p.cqOff.head))
	r.cqTail = (*uint32)(unsafe.Add(cq, p.cqOff.tail))
	r.cqMask = *(*uint32)(unsafe.Add(cq, p.cqOff.ringMask))
	r.cqes = unsafe.Add(cq, p.cqOff.cqes)
	r.tail = atomic.LoadUint32(r.sqTail)
	return r, nil
}

func (r *uring) Caps() Caps {
	return Caps{Name: "io_uring", FDs: true, Completion: true, SingleIssuer: r.setup&iouSetupSingleIssuer != 0}
}

// Start enables a ring made for one issuer, on the thread that will
// submit to it from now on (Options.SingleIssuer).
func (r *uring) Start() error {
	if r.started {
		return nil
	}
	_, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), iouRegisterEnableRings, 0, 0, 0, 0)
	if e != 0 {
		return os.NewSyscallError("io_uring_register", e)
	}
	r.started = true
	return nil
}

// sqe returns the next free SQE, submitting what is queued if the SQ is
// full.
func (r *uring) sqe() *iouSQE {
	for r.tail-atomic.LoadUint32(r.sqHead) >= r.sqEntries {
		// Submit: the kernel consumes the queue.
		if err := r.enter(0, 0, nil); err != nil {
			panic(os.NewSyscallError("weft: io_uring_enter", err))
		}
	}
	i := r.tail & r.sqMask
	*(*uint32)(unsafe.Add(r.sqArray, 4*i)) = i
	s := (*iouSQE)(unsafe.Add(r.sqes, uintptr(i)*unsafe.Sizeof(iouSQE{})))
	*s = iouSQE{}
	r.tail++
	return s
}

// pending is the number of SQEs written and not yet consumed.
func (r *uring) pending() uint32 { return r.tail - atomic.LoadUint32(r.sqHead) }

// enter publishes the SQ tail and calls io_uring_enter.
func (r *uring) enter(minComplete uint32, flags uint32, ts *unix.Timespec) error {
	atomic.StoreUint32(r.sqTail, r.tail)
	toSubmit := r.pending()
	if r.setup&iouSetupDeferTaskrun != 0 {
		flags |= iouEnterGetevents // runs the deferred completion work
	}
	var arg iouGeteventsArg
	argp, argSz := uintptr(0), uintptr(0)
	if ts != nil {
		arg.ts = uint64(uintptr(unsafe.Pointer(ts)))
		argp, argSz = uintptr(unsafe.Pointer(&arg)), unsafe.Sizeof(arg)
		flags |= iouEnterExtArg
	}
	_, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(minComplete), uintptr(flags), argp, argSz)
	runtime.KeepAlive(ts)
	switch e {
	case 0, unix.EINTR, unix.ETIME, unix.EBUSY, unix.EAGAIN:
		return nil
	}
	return e
}

// Submit queues op; see the completion contract in poller.go.
func (r *uring) Submit(op *Op) {
	if op.slot != 0 {
		panic("weft: internal error: an io_uring operation submitted twice")
	}
	var slot uint32
	if n := len(r.free); n > 0 {
		slot = r.free[n-1]
		r.free = r.free[:n-1]
		r.ops[slot-1] = op
	} else {
		r.ops = append(r.ops, op)
		slot = uint32(len(r.ops))
	}
	op.slot = slot
	s := r.sqe()
	s.opcode = op.code
	s.ioprio = op.ioprio
	s.fd = op.fd
	s.off = op.off
	if len(op.buf) > 0 {
		s.addr = uint64(uintptr(unsafe.Pointer(&op.buf[0])))
		s.len = uint32(len(op.buf))
		switch op.code {
		case iouOpConnect:
			// connect: addr is the sockaddr, off its length.
			s.off = uint64(len(op.buf))
			s.len = 0
		case iouOpAccept:
			// accept: addr is the sockaddr's room, off a pointer to its
			// length (in op, which the table keeps where it is).
			s.off = uint64(uintptr(unsafe.Pointer(&op.alen)))
			s.len = 0
		}
	}
	if op.code == iouOpPollAdd {
		s.len = 0
	}
	s.opFlags = op.opFlags
	s.flags = op.sqeFlags
	s.bufIndex = op.bgid
	s.userData = uint64(slot)
	if r.noBatch {
		r.enter(0, 0, nil) // WEFT_URING_BATCH=0: one enter per operation, to measure batching
	}
}

// Cancel asks the kernel to cancel op, if it is in flight; op still
// completes (see the contract).
func (r *uring) Cancel(op *Op) {
	if op.slot == 0 || op.cancelled {
		return
	}
	op.cancelled = true
	s := r.sqe()
	s.opcode = iouOpAsyncCancel
	s.fd = -1
	s.addr = uint64(op.slot)
}

// CancelFD cancels every operation in flight on fd (before it is closed).
func (r *uring) CancelFD(fd int) {
	s := r.sqe()
	s.opcode = iouOpAsyncCancel
	s.fd = int32(fd)
	s.opFlags = iouCancelFd | iouCancelAll
}

// Completed returns the completions of the last Wait, in order. The
// slice is the backend's until the next Wait.
func (r *uring) Completed() []Completion { return r.done }

// Provided returns the ring's provided buffers, made on first use (nil:
// the kernel has none, before 5.19, or WEFT_URING_MULTISHOT=0).
func (r *uring) Provided() *Provided {
	if r.prov == nil && !r.noProv {
		r.noProv = true
		if os.Getenv("WEFT_URING_MULTISHOT") != "0" {
			if p, err := r.newProvided(providedBuffers, providedSize); err == nil {
				r.prov, r.noProv = p, false
			}
		}
	}
	return r.prov
}

// The provided buffers of a ring: 256 of 16 KiB (4 MiB of address space,
// pages touched only as data arrives).
const (
	providedBuffers = 256
	providedSize    = 16 << 10
)

// Flush submits what is queued without waiting.
func (r *uring) Flush() error {
	if r.pending() == 0 {
		return nil
	}
	return r.enter(0, 0, nil)
}

// parkSlack is how close to a deadline the ring's wait switches from
// parking in the runtime's netpoller (millisecond accuracy) to a blocking
// io_uring_enter (nanosecond accuracy).
const parkSlack = 2 * time.Millisecond

func (r *uring) Wait(timeout time.Duration, evs []Event) ([]Event, error) {
	clear(r.done)
	r.done = r.done[:0]
	if atomic.LoadUint32(r.cqTail) != atomic.LoadUint32(r.cqHead) {
		timeout = 0 // completions are waiting: collect them
	}
	if r.rc != nil && (timeout < 0 || timeout > parkSlack) {
		// Submit, then sleep in the runtime's netpoller until the ring's
		// fd says completions wait (or the timeout less parkSlack).
		if r.pending() > 0 {
			if err := r.enter(0, 0, nil); err != nil {
				return evs, os.NewSyscallError("io_uring_enter", err)
			}
		}
		start := time.Now()
		timedOut, err := r.park(timeout)
		if err != nil {
			return evs, err
		}
		if !timedOut {
			return r.reap(evs), nil
		}
		if timeout -= time.Since(start); timeout <= 0 {
			timeout = 0
		}
	}
	sqf := atomic.LoadUint32(r.sqFlags)
	if timeout != 0 || r.tail != atomic.LoadUint32(r.sqHead) || sqf&(iouSQTaskrun|iouSQCQOverflow) != 0 ||
		(r.setup&iouSetupDeferTaskrun != 0 && r.setup&iouSetupTaskrunFlag == 0) {
		var min uint32
		var flags uint32
		var ts *unix.Timespec
		if timeout != 0 {
			min, flags = 1, iouEnterGetevents
		}
		if timeout > 0 {
			t := unix.NsecToTimespec(int64(timeout))
			ts = &t
		}
		if sqf&iouSQCQOverflow != 0 {
			flags |= iouEnterGetevents
		}
		if err := r.enter(min, flags, ts); err != nil {
			return evs, os.NewSyscallError("io_uring_enter", err)
		}
	}
	return r.reap(evs), nil
}

// park waits for the ring's fd to become readable in the Go runtime's
// netpoller, for at most timeout less parkSlack (negative: no limit).
// timedOut reports that the deadline ended it.
func (r *uring) park(timeout time.Duration) (timedOut bool, err error) {
	var dl time.Time
	if timeout > 0 {
		dl = time.Now().Add(timeout - parkSlack)
	}
	if !dl.Equal(r.parkDL) {
		r.file.SetReadDeadline(dl)
		r.parkDL = dl
	}
	if err := r.rc.Read(r.tryWait); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return true, nil
		}
		return false, err
	}
	return false, nil
}

// reap consumes the CQ.
func (r *uring) reap(evs []Event) []Event {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	for ; head != tail; head++ {
		c := (*iouCQE)(unsafe.Add(r.cqes, uintptr(head&r.cqMask)*unsafe.Sizeof(iouCQE{})))
		ud, res, fl := c.userData, c.res, c.flags
		switch ud {
		case 0:
			continue // a cancel's own completion
		case wakeSlot:
			r.wakeArmed = false
			if r.fd >= 0 && !r.closing {
				r.woken.Store(false)
				r.armWake()
			}
			continue
		}
		op := r.ops[ud-1]
		op.Res, op.Flags = res, fl
		if fl&iouCQEFMore == 0 {
			r.ops[ud-1] = nil
			r.free = append(r.free, uint32(ud))
			op.slot = 0
		}
		if op.mode != 0 {
			evs = r.pollDone(op, evs)
			continue
		}
		r.done = append(r.done, Completion{Op: op, Res: res, Flags: fl})
	}
	atomic.StoreUint32(r.cqHead, head)
	return evs
}

// armWake queues the eventfd read that a Wake completes.
func (r *uring) armWake() {
	s := r.sqe()
	s.opcode = iouOpRead
	s.fd = int32(r.wakefd)
	s.addr = uint64(uintptr(unsafe.Pointer(&r.wakeBuf[0])))
	s.len = 8
	s.off = ^uint64(0)
	s.userData = wakeSlot
	r.wakeArmed = true
}

func (r *uring) Wake() error {
	if r.woken.Swap(true) {
		return nil
	}
	one := [8]byte{1}
	_, err := unix.Write(r.wakefd, one[:])
	if err == unix.EAGAIN {
		err = nil
	}
	return err
}

// Readiness: Arm is a one-shot IORING_OP_POLL_ADD per direction.

func pollMask(m Mode) uint32 {
	if m == Read {
		return unix.POLLIN | unix.POLLRDHUP
	}
	return unix.POLLOUT
}

func (r *uring) Arm(fd int, m Mode) error {
	if fd < 0 {
		return unix.EBADF
	}
	a := r.armed[fd]
	if a == nil {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			return err
		}
		a = new([2]*Op)
		r.armed[fd] = a
	}
	for i, d := range [2]Mode{Read, Write} {
		if m&d == 0 {
			continue
		}
		if op := a[i]; op != nil {
			op.quiet = false // armed again before a disarm's poll came back
			continue
		}
		var op *Op
		if n := len(r.spare); n > 0 {
			op = r.spare[n-1]
			r.spare = r.spare[:n-1]
		} else {
			op = new(Op)
		}
		op.prep(iouOpPollAdd, fd, nil, pollMask(d))
		op.mode = d
		a[i] = op
		r.Submit(op)
	}
	return nil
}

func (r *uring) Disarm(fd int, m Mode) error {
	a := r.armed[fd]
	if a == nil {
		return nil
	}
	for i, d := range [2]Mode{Read, Write} {
		if op := a[i]; op != nil && m&d != 0 && !op.quiet {
			op.quiet = true
			r.Cancel(op)
		}
	}
	return nil
}

// pollDone turns an Arm poll's completion into an event.
func (r *uring) pollDone(op *Op, evs []Event) []Event {
	fd := int(op.fd)
	a := r.armed[fd]
	i := 0
	if op.mode == Write {
		i = 1
	}
	if a != nil && a[i] == op {
		a[i] = nil
		if a[0] == nil && a[1] == nil {
			delete(r.armed, fd)
		}
	}
	quiet := op.quiet
	res := op.Res
	if op.slot == 0 {
		op.Owner = nil
		r.spare = append(r.spare, op)
	}
	if quiet || res == -int32(unix.ECANCELED) {
		return evs
	}
	var ready Mode
	switch {
	case res < 0:
		ready = op.mode // an error: the retried call will see it
	case op.mode == Read && uint32(res)&(unix.POLLIN|unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0:
		ready = Read
	case op.mode == Write && uint32(res)&(unix.POLLOUT|unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0:
		ready = Write
	}
	if ready != 0 {
		evs = append(evs, Event{Fd: int32(fd), Ready: ready})
	}
	return evs
}

// Watch registers nothing: completions need no registration.
func (r *uring) Watch(fd int) error {
	if fd < 0 {
		return unix.EBADF
	}
	return nil
}

// Unwatch cancels whatever is in flight on fd, before it is closed. The
// cancel is submitted at once: it finds the operations by the file fd
// names, which must still be the same file (and an operation that still
// held it would keep, say, a pipe's end open after its close).
func (r *uring) Unwatch(fd int) error {
	if a := r.armed[fd]; a != nil {
		for _, op := range a {
			if op != nil {
				op.quiet = true
			}
		}
	}
	r.CancelFD(fd)
	if !r.started {
		return nil
	}
	return r.enter(0, 0, nil)
}

// Close cancels what is in flight, waits up to a second for the kernel to
// give it back, and releases the ring. Operations the kernel still holds
// then are kept reachable for good: their buffers are never reused.
func (r *uring) Close() error {
	if r.fd < 0 {
		return nil
	}
	r.closing = true
	if r.started && (r.inFlight() > 0 || r.wakeArmed) {
		s := r.sqe()
		s.opcode = iouOpAsyncCancel
		s.fd = -1
		s.opFlags = iouCancelAny | iouCancelAll
		deadline := time.Now().Add(time.Second)
		for (r.inFlight() > 0 || r.wakeArmed) && time.Now().Before(deadline) {
			ts := unix.NsecToTimespec(int64(10 * time.Millisecond))
			if err := r.enter(1, iouEnterGetevents, &ts); err != nil {
				break // another thread than the issuer's, say
			}
			r.reap(nil)
		}
	}
	if r.inFlight() > 0 || r.wakeArmed {
		leaked.Lock()
		leaked.ops = append(leaked.ops, &Op{buf: r.wakeBuf})
		for _, op := range r.ops {
			if op != nil {
				leaked.ops = append(leaked.ops, op)
			}
		}
		leaked.Unlock()
	}
	for _, m := range [][]byte{r.sqeMem, r.cqMem, r.sqMem} {
		if m != nil {
			unix.Munmap(m)
		}
	}
	r.sqeMem, r.cqMem, r.sqMem = nil, nil, nil
	if r.file != nil {
		r.file.Close()
	}
	err := unix.Close(r.fd)
	r.fd = -1
	if r.prov != nil && r.inFlight() == 0 {
		r.prov.free()
	}
	r.prov = nil
	if r.wakefd >= 0 {
		unix.Close(r.wakefd)
	}
	return err
}

func (r *uring) inFlight() int { return len(r.ops) - len(r.free) }

// Provided is a ring of buffers the kernel picks from for multishot
// receives (IORING_REGISTER_PBUF_RING, Linux 5.19). Its memory is mapped
// outside Go's heap, so the collector never sees it and it never moves.
// A buffer is the kernel's while it is in the ring, and the receiver's from
// the completion that names it until Recycle.
type Provided struct {
	group uint16
	size  int    // bytes per buffer
	n     uint16 // buffers (a power of two)
	mem   []byte // n buffers of size
	ring  []byte // n struct io_uring_buf; the tail is in the first one
	tail  uint16
}

// Buf returns buffer bid's first n bytes.
func (p *Provided) Buf(bid uint16, n int) []byte {
	off := int(bid) * p.size
	return p.mem[off : off+n : off+p.size]
}

// Recycle gives buffer bid back to the kernel.
func (p *Provided) Recycle(bid uint16) {
	i := uintptr(p.tail & (p.n - 1))
	e := unsafe.Pointer(&p.ring[i*16])
	*(*uint64)(e) = uint64(uintptr(unsafe.Pointer(&p.mem[int(bid)*p.size])))
	*(*uint32)(unsafe.Add(e, 8)) = uint32(p.size)
	*(*uint16)(unsafe.Add(e, 12)) = bid
	p.tail++
	// The tail shares the first entry's last 16 bits; the kernel reads it
	// with acquire semantics.
	atomicStoreUint16((*uint16)(unsafe.Pointer(&p.ring[14])), p.tail)
}

// atomicStoreUint16 stores v with release semantics. Go has no 16-bit
// atomics; the tail is the high half of an aligned 32-bit word whose low
// half (the first entry's bid) only we write, so a 32-bit store does it.
func atomicStoreUint16(p *uint16, v uint16) {
	w := (*uint32)(unsafe.Add(unsafe.Pointer(p), -2))
	old := *w
	atomic.StoreUint32(w, old&0xffff|uint32(v)<<16)
}

// newProvided maps and registers n buffers of size bytes as group 0.
func (r *uring) newProvided(n uint16, size int) (*Provided, error) {
	p := &Provided{size: size, n: n}
	var err error
	if p.mem, err = unix.Mmap(-1, 0, int(n)*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err != nil {
		return nil, err
	}
	if p.ring, err = unix.Mmap(-1, 0, max(int(n)*16, 4096), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err != nil {
		unix.Munmap(p.mem)
		return nil, err
	}
	reg := struct {
		ringAddr    uint64
		ringEntries uint32
		bgid        uint16
		flags       uint16
		resv        [3]uint64
	}{ringAddr: uint64(uintptr(unsafe.Pointer(&p.ring[0]))), ringEntries: uint32(n), bgid: p.group}
	_, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), iouRegisterPbufRing, uintptr(unsafe.Pointer(&reg)), 1, 0, 0)
	if e != 0 {
		unix.Munmap(p.mem)
		unix.Munmap(p.ring)
		return nil, e
	}
	for bid := range n {
		p.Recycle(bid)
	}
	return p, nil
}

// free unmaps the buffers once the ring is gone (nothing can write them).
func (p *Provided) free() {
	unix.Munmap(p.mem)
	unix.Munmap(p.ring)
}
