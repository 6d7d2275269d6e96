package tables

// The memory of one suspended task in each kind of wait, and of the bare
// coroutine a task runs on, each measured in a fresh process (see Memory).

import (
	"iter"
	"net"
	"runtime"
	"syscall"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/benchmarks"
)

// memConns is how many connections the Conn read measurement holds: its
// process holds both ends, under the descriptor limit.
const memConns = 5000

// heapAndStacks is the heap and the stacks in use once the garbage is gone.
func heapAndStacks() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}

// awaitingTaskBytes is the heap and stack per task while
// benchmarks.MemTasks tasks wait in Await on one promise.
func awaitingTaskBytes() float64 {
	var perTask float64
	before := heapAndStacks()
	weft.Run(func(t *weft.Task) (struct{}, error) {
		p, settle := weft.NewPromise[int]()
		for range benchmarks.MemTasks {
			weft.Go(t, func(t *weft.Task) (int, error) { return p.Await(t) })
		}
		perTask = float64(heapAndStacks()-before) / benchmarks.MemTasks
		settle(1, nil)
		return struct{}{}, nil
	}, weft.WithVirtualTime(time.Unix(0, 0)), weft.WithWatchdog(0))
	return perTask
}

// chanRecvTaskBytes is the heap and stack per task while MemTasks tasks
// wait in Chan.Recv on one empty channel.
func chanRecvTaskBytes() float64 {
	var perTask float64
	before := heapAndStacks()
	weft.Run(func(t *weft.Task) (struct{}, error) {
		ch := weft.NewChan[[]byte](0)
		for range benchmarks.MemTasks {
			weft.Go(t, func(t *weft.Task) ([]byte, error) { return ch.Recv(t) })
		}
		t.Yield() // each task parks
		perTask = float64(heapAndStacks()-before) / benchmarks.MemTasks
		ch.Close()
		return struct{}{}, nil
	}, weft.WithVirtualTime(time.Unix(0, 0)), weft.WithWatchdog(0))
	return perTask
}

// connBuf is the buffer every reader shares: nothing arrives, and the
// measure is of the task and its connection, not of a buffer.
var connBuf [64]byte

// connReadTaskBytes is the heap and stack per task while memConns tasks
// wait in Conn.Read, each on a connection of its own (the server's end:
// the Conn, its descriptor's records; the client ends are raw sockets,
// which take no Go memory).
func connReadTaskBytes() (float64, error) {
	var perTask float64
	clients := make([]int, 0, memConns)
	defer func() {
		for _, fd := range clients {
			syscall.Close(fd)
		}
	}()
	before := heapAndStacks()
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", "127.0.0.1:0")
		if err != nil {
			return struct{}{}, err
		}
		defer ln.Close()
		port := ln.Addr().(*net.TCPAddr).Port
		dialed := make(chan error, 1)
		go func() { // blocking connects, answered by the accepts below
			for range memConns {
				fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
				if err != nil {
					dialed <- err
					return
				}
				clients = append(clients, fd)
				if err := syscall.Connect(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
					dialed <- err
					return
				}
			}
			dialed <- nil
		}()
		for range memConns {
			c, err := ln.Accept(t)
			if err != nil {
				return struct{}{}, err
			}
			weft.Go(t, func(t *weft.Task) (int, error) {
				defer c.Close()
				c.Read(t, connBuf[:]) // ends with the client's close (EOF)
				return 0, nil
			})
		}
		if err := <-dialed; err != nil {
			return struct{}{}, err
		}
		perTask = float64(heapAndStacks()-before) / memConns
		for _, fd := range clients {
			syscall.Close(fd)
		}
		clients = nil
		return struct{}{}, nil
	}, weft.WithWatchdog(0)) // main holds the loop in runtime.GC on purpose
	return perTask, err
}

// pullCoroutineBytes is the heap and stack per bare iter.Pull coroutine
// suspended in its yield: what any weft task is made of, before weft's
// own records.
func pullCoroutineBytes() float64 {
	stops := make([]func(), 0, benchmarks.MemTasks)
	before := heapAndStacks()
	for range benchmarks.MemTasks {
		next, stop := iter.Pull(func(yield func(struct{}) bool) {
			for yield(struct{}{}) {
			}
		})
		next()
		stops = append(stops, stop)
	}
	per := float64(heapAndStacks()-before) / benchmarks.MemTasks
	for _, stop := range stops {
		stop()
	}
	return per
}
