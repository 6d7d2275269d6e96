package benchmarks

import (
	"context"
	"sync"
	"testing"

	"github.com/weft-go/weft"
)

// Sync lists the benchmarks of channels, locks and the goroutine bridge,
// each beside its Go-native twin.
var Sync = []Pair{
	{"chan ping-pong, capacity 0", WeftChanPingPong0, GoChanPingPong0, "two tasks, two weft channels, per round trip", "two goroutines, two unbuffered channels, per round trip", "<= 0.5x"},
	{"chan ping-pong, capacity 1", WeftChanPingPong1, GoChanPingPong1, "the same with capacity 1", "the same with capacity 1", "<= 0.5x"},
	{"chan throughput, capacity 128", WeftChanThroughput, GoChanThroughput, "producer and consumer tasks, per value", "producer and consumer goroutines, per value", ">= 2x the rate (<= 0.5x the time)"},
	{"mutex uncontended", WeftMutex, SyncMutex, "Mutex.Lock + Unlock in one task", "sync.Mutex Lock + Unlock", "<= 2x"},
	{"goroutine to task, capacity 128", WeftSendWait, GoChanSendRecv, "SendWait from a goroutine, Recv in a task, per value", "buffered channel between two goroutines, per value", "<= 2x"},
}

func pingPong(b *testing.B, capacity int) {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		ping, pong := weft.NewChan[int](capacity), weft.NewChan[int](capacity)
		weft.Go(t, func(t *weft.Task) (struct{}, error) {
			for {
				v, err := ping.Recv(t)
				if err != nil {
					return struct{}{}, nil
				}
				pong.Send(t, v)
			}
		})
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			ping.Send(t, i)
			pong.Recv(t)
		}
		b.StopTimer()
		ping.Close()
		return struct{}{}, nil
	})
}

func goPingPong(b *testing.B, capacity int) {
	ping, pong := make(chan int, capacity), make(chan int, capacity)
	go func() {
		for v := range ping {
			pong <- v
		}
		close(pong)
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ping <- i
		<-pong
	}
	b.StopTimer()
	close(ping)
	<-pong
}

// WeftChanPingPong0 bounces a value between two tasks over two weft
// channels of capacity 0, b.N round trips.
func WeftChanPingPong0(b *testing.B) { pingPong(b, 0) }

// WeftChanPingPong1 is WeftChanPingPong0 with capacity 1.
func WeftChanPingPong1(b *testing.B) { pingPong(b, 1) }

// GoChanPingPong0 is the twin: two goroutines, unbuffered channels.
func GoChanPingPong0(b *testing.B) { goPingPong(b, 0) }

// GoChanPingPong1 is the twin with capacity 1.
func GoChanPingPong1(b *testing.B) { goPingPong(b, 1) }

// WeftChanThroughput passes b.N values from a producer task to a consumer
// task through a channel of capacity 128.
func WeftChanThroughput(b *testing.B) {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		c := weft.NewChan[int](128)
		b.ReportAllocs()
		b.ResetTimer()
		weft.Go(t, func(t *weft.Task) (struct{}, error) {
			for i := 0; i < b.N; i++ {
				c.Send(t, i)
			}
			c.Close()
			return struct{}{}, nil
		})
		for _, err := c.Recv(t); err == nil; _, err = c.Recv(t) {
		}
		return struct{}{}, nil
	})
}

// GoChanThroughput is its twin: two goroutines, a buffered Go channel.
func GoChanThroughput(b *testing.B) {
	c := make(chan int, 128)
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		for i := 0; i < b.N; i++ {
			c <- i
		}
		close(c)
	}()
	for range c {
	}
}

// WeftMutex locks and unlocks an uncontended weft Mutex b.N times.
func WeftMutex(b *testing.B) {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		var m weft.Mutex
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			m.Lock(t)
			m.Unlock()
		}
		return struct{}{}, nil
	})
}

// SyncMutex is its twin: sync.Mutex.
func SyncMutex(b *testing.B) {
	var m sync.Mutex
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m.Lock()
		m.Unlock() //nolint:staticcheck // the empty critical section is the point
	}
}

// WeftSendWait passes b.N values from a plain goroutine (SendWait) to a
// task (Recv) through a channel of capacity 128.
func WeftSendWait(b *testing.B) {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		c := weft.NewChan[int](128)
		_, done := weft.NewPromiseExternal[struct{}](t)
		b.ReportAllocs()
		b.ResetTimer()
		go func() {
			defer done(struct{}{}, nil)
			ctx := context.Background()
			for i := 0; i < b.N; i++ {
				c.SendWait(ctx, i)
			}
			c.Close()
		}()
		for _, err := c.Recv(t); err == nil; _, err = c.Recv(t) {
		}
		return struct{}{}, nil
	})
}

// GoChanSendRecv is its twin: a value from one goroutine to another over a
// buffered Go channel of capacity 128.
func GoChanSendRecv(b *testing.B) { GoChanThroughput(b) }
