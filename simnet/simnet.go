// Package simnet is an in-memory network for weft programs: hosts by name,
// links with latency, jitter, loss and bandwidth, partitions, all in the
// loop's time. A program written against weft.Listen, weft.Dial and
// weft.ListenPacket runs on it unchanged:
//
//	n := simnet.New(1)
//	weft.Run(func(t *weft.Task) (int, error) {
//		weft.GoWithNetwork(t, n.Host("a"), serverA) // listens on "a:80"
//		weft.GoWithNetwork(t, n.Host("b"), clientB) // dials "a:80"
//		...
//	}, weft.WithSeed(seed))
//
// # Model
//
// Addresses are "name:port". A host sees itself as its name, "",
// "localhost", "127.0.0.1" or "::1"; Listen on port 0 picks a free port
// from 10000 up. Each ordered pair of hosts has a Link (SetLink sets both
// directions; DefaultLink applies where none was set).
//
// Streams ("tcp", "tcp4", "tcp6") are ordered and reliable while the link
// is up: a Write is delivered Latency (plus a draw in [0, Jitter), never
// overtaking an earlier write) after it leaves, and it leaves once the
// link has sent what was written before, at BytesPerSecond (a Write waits
// until its bytes are on the wire). Loss does not apply to streams. Dial
// takes one round trip; dialing a port nobody listens on fails with
// ECONNREFUSED after the round trip; dialing across a partition fails at
// once with EHOSTUNREACH. A partition stalls open streams: what was written
// stays queued and is delivered when the link heals, unless the stream has
// been stalled for ResetAfter (default DefaultResetAfter, 30 s, measured
// from when one of its ends first found it stalled), after which both ends
// fail with ECONNRESET. A stream with nothing in flight is not reset by a
// partition, as TCP without keep-alives is not. Close of one end makes the other read io.EOF once
// the data before it is delivered, and its writes fail with EPIPE.
//
// Datagrams ("udp", "udp4", "udp6") are dropped with probability Loss,
// and always across a partition or to a port nobody listens on; each is
// delayed by Latency plus a draw in [0, Jitter), so datagrams are
// reordered when Jitter exceeds the gap between them.
//
// # Determinism
//
// simnet waits only on weft's primitives (channels and timers), so its
// waits are waits for virtual time's auto-advance and for deadlock
// detection: when every task waits on simulated I/O with nothing in
// flight, Run reports a deadlock. Its random draws mix New's seed with
// Task.Rand: under weft.WithSeed the pair (seed, run seed) reproduces a
// run. Without a seed the draws differ from run to run.
//
// A Net may be shared by several Runs (a Run per host, say, on the real
// clock). So in a Run on the real clock its waits look again every
// HeartbeatPeriod: a Run whose tasks wait on another Run's hosts must not
// be reported as deadlocked. The price: such a Run that waits on simulated
// I/O nobody will answer waits forever, as it would on a real network.
// On virtual time (WithVirtualTime, WithSeed) a Net serves one Run, and
// its waits are exact.
package simnet

import (
	"strconv"
	"sync"
	"time"

	"github.com/weft-go/weft"
)

// Link describes one direction between two hosts.
type Link struct {
	Latency        time.Duration // one-way delay
	Jitter         time.Duration // extra delay, drawn uniformly in [0, Jitter)
	Loss           float64       // datagrams only: the probability that one is dropped, 0 to 1
	BytesPerSecond int64         // bandwidth; 0 is unlimited
}

// DefaultLink is the link between hosts for which SetLink was not called.
var DefaultLink = Link{Latency: time.Millisecond}

// DefaultResetAfter is how long a partition may stall a stream before it
// is reset (Net.SetResetAfter).
const DefaultResetAfter = 30 * time.Second

// HeartbeatPeriod is how often a wait in a Run on the real clock looks
// again (see the package doc).
const HeartbeatPeriod = time.Second

// Net is a simulated network. Its methods may be called from any task or
// goroutine; none of them suspends.
type Net struct {
	mu         sync.Mutex
	rng        uint64 // mixed with Task.Rand at each draw
	hosts      map[string]*Host
	links      map[[2]string]Link
	parts      map[[2]string]bool // unordered pairs, sorted
	busy       map[[2]string]time.Time
	pipes      []*pipe // stream directions, to wake on partitions and heals, in order of creation (a map's order would make wakes random)
	resetAfter time.Duration
}

// New returns an empty network whose random draws start from seed.
func New(seed uint64) *Net {
	return &Net{
		rng:        seed,
		hosts:      map[string]*Host{},
		links:      map[[2]string]Link{},
		parts:      map[[2]string]bool{},
		busy:       map[[2]string]time.Time{},
		resetAfter: DefaultResetAfter,
	}
}

// Host returns the host called name, making it on first use: the Network
// its tasks use (weft.GoWithNetwork, weft.WithNetwork). An empty name or
// one with a colon panics with "simnet:".
func (n *Net) Host(name string) weft.Network {
	return n.host(name)
}

func (n *Net) host(name string) *Host {
	if name == "" || containsColon(name) {
		panic("simnet: bad host name " + strconv.Quote(name))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	h := n.hosts[name]
	if h == nil {
		h = &Host{net: n, name: name, streams: map[int]*listener{}, packets: map[int]*packetConn{}, nextPort: 10000}
		n.hosts[name] = h
	}
	return h
}

// SetLink sets the link between hosts a and b, both directions. A negative
// duration or bandwidth, or a Loss outside [0, 1], panics with "simnet:".
func (n *Net) SetLink(a, b string, l Link) {
	if l.Latency < 0 || l.Jitter < 0 || l.BytesPerSecond < 0 || !(l.Loss >= 0 && l.Loss <= 1) {
		panic("simnet: SetLink with a negative delay or bandwidth, or a loss outside [0, 1]")
	}
	n.mu.Lock()
	n.links[[2]string{a, b}] = l
	n.links[[2]string{b, a}] = l
	n.mu.Unlock()
}

// SetResetAfter sets how long a partition may stall a stream before it is
// reset (default DefaultResetAfter). A d that is not positive panics with
// "simnet:".
func (n *Net) SetResetAfter(d time.Duration) {
	if d <= 0 {
		panic("simnet: SetResetAfter with a non-positive duration")
	}
	n.mu.Lock()
	n.resetAfter = d
	n.mu.Unlock()
}

// Partition cuts hosts a and b apart, both directions, until Heal: dials
// between them fail, datagrams are dropped and streams stall (see the
// package doc).
func (n *Net) Partition(a, b string) {
	n.mu.Lock()
	n.parts[pairOf(a, b)] = true
	n.wakePipesLocked(a, b, false)
	n.mu.Unlock()
}

// Heal undoes Partition(a, b): the stalled streams between them deliver
// what they hold.
func (n *Net) Heal(a, b string) {
	n.mu.Lock()
	delete(n.parts, pairOf(a, b))
	n.wakePipesLocked(a, b, true)
	n.mu.Unlock()
}

// HealAll undoes every partition.
func (n *Net) HealAll() {
	n.mu.Lock()
	for p := range n.parts {
		delete(n.parts, p)
	}
	n.compactPipesLocked()
	for _, p := range n.pipes {
		p.stallSince = time.Time{}
		p.changedLocked()
	}
	n.mu.Unlock()
}

// Partitioned reports whether a and b are cut apart.
func (n *Net) Partitioned(a, b string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.partedLocked(a, b)
}

// compactPipesLocked drops the pipes both of whose ends are closed.
func (n *Net) compactPipesLocked() {
	k := 0
	for _, p := range n.pipes {
		if !p.gone {
			n.pipes[k] = p
			k++
		}
	}
	clear(n.pipes[k:])
	n.pipes = n.pipes[:k]
}

func (n *Net) wakePipesLocked(a, b string, heal bool) {
	n.compactPipesLocked()
	for _, p := range n.pipes {
		if pairOf(p.from, p.to) == pairOf(a, b) {
			if heal {
				p.stallSince = time.Time{}
			}
			p.changedLocked()
		}
	}
}

func (n *Net) partedLocked(a, b string) bool {
	return a != b && n.parts[pairOf(a, b)]
}

func (n *Net) linkLocked(a, b string) Link {
	if a == b {
		return Link{}
	}
	if l, ok := n.links[[2]string{a, b}]; ok {
		return l
	}
	return DefaultLink
}

// drawLocked returns a random number for a choice of t's.
func (n *Net) drawLocked(t *weft.Task) uint64 {
	n.rng = mix(n.rng ^ t.Rand())
	return n.rng
}

// delayLocked returns the latency plus jitter of a message from a to b.
func (n *Net) delayLocked(t *weft.Task, l Link) time.Duration {
	d := l.Latency
	if l.Jitter > 0 {
		d += time.Duration(n.drawLocked(t) % uint64(l.Jitter))
	}
	return d
}

// sendLocked books the link a→b for size bytes from now on and returns
// when they have left.
func (n *Net) sendLocked(a, b string, l Link, now time.Time, size int) time.Time {
	if l.BytesPerSecond <= 0 {
		return now
	}
	k := [2]string{a, b}
	start := n.busy[k]
	if start.Before(now) {
		start = now
	}
	end := start.Add(time.Duration(float64(size) / float64(l.BytesPerSecond) * float64(time.Second)))
	n.busy[k] = end
	return end
}

// wait suspends t until ch is closed (something changed) or d passes (d <
// 0: no limit). It returns the error that ended the wait early:
// cancellation, a deadline.
func (n *Net) wait(t *weft.Task, ch *weft.Chan[struct{}], d time.Duration) error {
	if !t.VirtualTime() && (d < 0 || d > HeartbeatPeriod) {
		d = HeartbeatPeriod
	}
	var cases [2]weft.SelectCase
	cases[0] = weft.RecvCase(ch, nil)
	cs := cases[:1]
	if d >= 0 {
		cases[1] = weft.AfterCase(d)
		cs = cases[:2]
	}
	i, err := weft.Select(t, cs...)
	if i < 0 {
		return err
	}
	return nil
}

func pairOf(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

func containsColon(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			return true
		}
	}
	return false
}

// mix is splitmix64's output function.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
