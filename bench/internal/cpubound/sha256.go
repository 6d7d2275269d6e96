package cpubound

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/weft-go/weft/internal/cliflag"

	"github.com/weft-go/weft"
)

// shaChunk is how much a task on the loop hashes between Checkpoints.
const shaChunk = 64 << 10

// goalSpeedup is the Offload phase's goal against the loop phase, on two
// cores.
const goalSpeedup = 1.8

// tickPeriod is how long the timer task sleeps each time, to see how late
// the loop wakes it.
const tickPeriod = time.Millisecond

// shaPhase is what one phase of `bench sha256` saw.
type shaPhase struct {
	name    string
	wall    time.Duration
	digests [][32]byte
	lags    []time.Duration // how late each 1 ms sleep woke, sorted
}

// SHA256 is `bench sha256` with its flags in args: it hashes n messages
// in n tasks on one loop, then in n tasks that each Offload the hash, and
// prints to stdout the wall times, whether the digests agree and how
// promptly the loop answered a timer. It returns nil after -h, and an
// error for bad flags or when the phases' digests differ.
func SHA256(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("bench sha256", flag.ContinueOnError)
	size := fs.Int("size", 128<<20, "bytes per message")
	n := fs.Int("n", 8, "messages (and tasks)")
	interval := fs.Duration("interval", weft.DefaultSwitchInterval, "weft's switch interval (WithSwitchInterval)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: bench sha256 [flags]")
		fs.PrintDefaults()
	}
	if ok, err := cliflag.Parse(fs, stdout, stderr, args); !ok {
		return err
	}
	if *size < 1 || *n < 1 || *n > 1024 || *interval <= 0 {
		fs.SetOutput(stderr)
		fs.Usage()
		return fmt.Errorf("bench sha256: -size and -interval must be positive and -n in 1..1024")
	}

	fmt.Fprintf(stdout, "bench sha256: %d messages of %s, crypto/sha256\n", *n, fmtBytes(*size))
	fmt.Fprintf(stdout, "%s %s/%s, NumCPU=%d, GOMAXPROCS=%d, switch interval %v\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), *interval)
	start := time.Now()
	msgs := fillMessages(*n, *size)
	fmt.Fprintf(stdout, "messages filled in %s (xorshift64), before timing\n", fmtDur(time.Since(start)))

	loop, err := hashPhase(fmt.Sprintf("%d tasks on one loop (Checkpoint every %s)", *n, fmtBytes(shaChunk)), msgs, *interval, hashOnLoop)
	if err != nil {
		return err
	}
	off, err := hashPhase(fmt.Sprintf("%d tasks, each Offload(sha256.Sum256)", *n), msgs, *interval, hashOffloaded)
	if err != nil {
		return err
	}

	fmt.Fprintln(stdout)
	total := float64(*n) * float64(*size)
	fmt.Fprintf(stdout, "%-48s %10s %10s   timer lag (1 ms sleeps):  p50      p99      max      wakes\n", "phase", "wall", "MB/s")
	for _, p := range []shaPhase{loop, off} {
		fmt.Fprintf(stdout, "%-48s %10s %10.0f   %26s %8s %8s %8d\n", p.name, fmtDur(p.wall), total/1e6/p.wall.Seconds(),
			fmtDur(quantile(p.lags, 0.5)), fmtDur(quantile(p.lags, 0.99)), fmtDur(quantile(p.lags, 1)), len(p.lags))
	}
	speedup := loop.wall.Seconds() / off.wall.Seconds()
	fmt.Fprintf(stdout, "\nspeed-up of Offload over the loop: %.2fx (goal >= %.1fx on 2 cores, this machine has %d): %s\n",
		speedup, goalSpeedup, runtime.NumCPU(), verdict(speedup >= goalSpeedup))
	if !slices.Equal(loop.digests, off.digests) {
		return fmt.Errorf("bench sha256: the two phases' digests differ")
	}
	fmt.Fprintf(stdout, "digests: all %d match between the phases (first %s...)\n", *n, hex.EncodeToString(loop.digests[0][:8]))
	return nil
}

// hashPhase runs one phase on a fresh loop: a task per message, each
// hashing it with hash, beside a timer task that sleeps 1 ms at a time and
// records how late it wakes, until the hashing is done.
func hashPhase(name string, msgs [][]byte, interval time.Duration, hash func(*weft.Task, []byte) ([32]byte, error)) (shaPhase, error) {
	p := shaPhase{name: name}
	_, err := weft.Run(func(t *weft.Task) (struct{}, error) {
		var stop atomic.Bool
		ticker := weft.Go(t, func(t *weft.Task) ([]time.Duration, error) {
			var lags []time.Duration
			for !stop.Load() {
				before := t.Now()
				if err := t.Sleep(tickPeriod); err != nil {
					return lags, err
				}
				lags = append(lags, t.Now().Sub(before)-tickPeriod)
			}
			return lags, nil
		})
		start := time.Now()
		var ps []*weft.Promise[[32]byte]
		for _, m := range msgs {
			ps = append(ps, weft.Go(t, func(t *weft.Task) ([32]byte, error) { return hash(t, m) }))
		}
		sums, err := weft.All(t, ps...)
		p.wall = time.Since(start)
		stop.Store(true)
		if err != nil {
			ticker.Cancel()
			return struct{}{}, err
		}
		p.digests = sums
		p.lags, err = ticker.Await(t)
		return struct{}{}, err
	}, weft.WithSwitchInterval(interval))
	if err != nil {
		return p, fmt.Errorf("bench sha256: %s: %w", name, err)
	}
	slices.Sort(p.lags)
	return p, nil
}

// hashOnLoop hashes msg on the loop in shaChunk pieces, with a Checkpoint
// after each.
func hashOnLoop(t *weft.Task, msg []byte) ([32]byte, error) {
	h := sha256.New()
	for off := 0; off < len(msg); off += shaChunk {
		h.Write(msg[off:min(off+shaChunk, len(msg))])
		if err := t.Checkpoint(); err != nil {
			return [32]byte{}, err
		}
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, nil
}

// hashOffloaded hashes msg in one Offload call.
func hashOffloaded(t *weft.Task, msg []byte) ([32]byte, error) {
	return weft.Offload(t, func() ([32]byte, error) { return sha256.Sum256(msg), nil })
}

// fillMessages makes n messages of size bytes, each filled from a
// xorshift64 generator with a seed of its own.
func fillMessages(n, size int) [][]byte {
	msgs := make([][]byte, n)
	for i := range msgs {
		m := make([]byte, size)
		x := uint64(i+1) * 0x9E3779B97F4A7C15
		var word [8]byte
		for off := 0; off < size; off += 8 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			if off+8 <= size {
				binary.LittleEndian.PutUint64(m[off:], x)
			} else {
				binary.LittleEndian.PutUint64(word[:], x)
				copy(m[off:], word[:])
			}
		}
		msgs[i] = m
	}
	return msgs
}

// quantile returns the q quantile (0..1) of sorted durations, or 0 if there
// are none.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)))
	return sorted[min(i, len(sorted)-1)]
}

// fmtBytes formats a byte count in KiB, MiB or GiB when it is a whole
// number of them.
func fmtBytes(n int) string {
	for _, u := range []struct {
		size int
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
