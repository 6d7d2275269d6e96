package coro

import "testing"

type nopJob struct{}

func (nopJob) RunJob() {}

func BenchmarkStartFinish(b *testing.B) {
	c := New()
	defer c.Close()
	for b.Loop() {
		c.Start(nopJob{})
	}
}

// allocJob is about as large as a task cell: its size is the point.
type allocJob struct{ _ [300]byte }

func (*allocJob) RunJob() {}

var sink *allocJob

func BenchmarkStartFinishAlloc320(b *testing.B) {
	c := New()
	defer c.Close()
	for b.Loop() {
		j := &allocJob{}
		sink = j
		c.Start(j)
	}
}

func BenchmarkResumeSuspend(b *testing.B) {
	c := New()
	defer c.Close()
	c.Start(&loopJob{c: c})
	for b.Loop() {
		c.Resume()
	}
}

type loopJob struct{ c *Coro }

func (j *loopJob) RunJob() {
	for j.c.Suspend() {
	}
}

func BenchmarkRunningOutside(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if Running() {
			b.Fatal("Running outside a Coro")
		}
	}
}

// BenchmarkResumeSuspendThread is BenchmarkResumeSuspend with the
// Thread's record of each switch, as a weft loop keeps it.
func BenchmarkResumeSuspendThread(b *testing.B) {
	var th Thread
	c := New()
	defer c.Close()
	prev := th.Switch(c)
	c.Start(&loopJob{c: c})
	th.Back(prev)
	for b.Loop() {
		prev := th.Switch(c)
		c.Resume()
		th.Back(prev)
	}
}

// BenchmarkCurrent measures Current from a Coro run by the last of n
// registered Threads (the others idle, or, busy, one of them switching
// all along on another goroutine, as a loop of another processor does),
// and from a plain goroutine.
func BenchmarkCurrent(b *testing.B) {
	for _, bc := range []struct {
		name    string
		threads int
		busy    bool
	}{{"threads=1", 1, false}, {"threads=4", 4, false}, {"threads=16", 16, false}, {"threads=4,busy", 4, true}} {
		ths := make([]*Thread, bc.threads)
		for i := range ths {
			ths[i] = &Thread{}
			ths[i].Register()
		}
		stop, stopped := make(chan struct{}), make(chan struct{})
		if bc.busy {
			o := New()
			go func() {
				defer close(stopped)
				defer o.Close()
				for {
					select {
					case <-stop:
						return
					default:
					}
					for range 100 {
						prev := ths[0].Switch(o)
						ths[0].Back(prev)
					}
				}
			}()
		} else {
			close(stopped)
		}
		th := ths[len(ths)-1]
		c := New()
		b.Run(bc.name+"/coro", func(b *testing.B) {
			prev := th.Switch(c)
			c.Start(funcJob(func() {
				for b.Loop() {
					if Current() != c {
						b.Fatal("Current in a Coro is not the Coro")
					}
				}
			}))
			th.Back(prev)
		})
		b.Run(bc.name+"/plain", func(b *testing.B) {
			for b.Loop() {
				if Current() != nil {
					b.Fatal("Current in a plain goroutine is a Coro")
				}
			}
		})
		c.Close()
		close(stop)
		<-stopped
		for _, th := range ths {
			th.Unregister()
		}
	}
}
