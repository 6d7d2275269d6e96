package weft

// Timers. A loop keeps its timers in a binary min-heap ordered by deadline,
// ties broken by the order in which they were added (seq), so that two
// sleeps with the same deadline wake in FIFO order. Each timer records its
// index in the heap, so a cancelled sleep is removed in O(log n) and leaves
// nothing behind. Deadlines are nanoseconds on the loop's clock.
//
// A weak timer (a Ticker's) fires like any other but does not by itself
// keep the loop from finding a deadlock: whoever waits on what it feeds
// says so as a keepAliveSource. The heap counts its weak timers.
//
// The heap and its timers are loop-owned.

type timer struct {
	when  int64
	seq   uint64
	task  *Task  // a sleeping task to wake, or
	fn    func() // a callback to run on the loop
	index int32  // position in the heap; -1 when not in it
	weak  bool   // does not count as pending work for deadlock detection
}

type timerHeap struct {
	owner *loop // for the owner checks (owner.go)
	items []*timer
	seq   uint64
	weak  int   // weak timers in items
	rnd   *prng // a seeded Run's source: ties are broken by draws from it (seed.go)
}

func (h *timerHeap) len() int { return len(h.items) }

// strong returns how many timers are not weak: those that are work the
// loop waits for.
func (h *timerHeap) strong() int { return len(h.items) - h.weak }

func (h *timerHeap) less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	return a.when < b.when || (a.when == b.when && a.seq < b.seq)
}

func (h *timerHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].index = int32(i)
	h.items[j].index = int32(j)
}

func (h *timerHeap) push(t *timer) {
	if ownerChecks {
		h.owner.assertOwner("the timer heap")
	}
	h.seq++
	t.seq = h.seq
	if h.rnd != nil {
		t.seq = h.rnd.next()
	}
	t.index = int32(len(h.items))
	h.items = append(h.items, t)
	if t.weak {
		h.weak++
	}
	h.up(len(h.items) - 1)
}

// peek returns the earliest timer, or nil.
func (h *timerHeap) peek() *timer {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

// remove takes t out of the heap; it reports false if t was not in it.
func (h *timerHeap) remove(t *timer) bool {
	if ownerChecks {
		h.owner.assertOwner("the timer heap")
	}
	i := int(t.index)
	if i < 0 || i >= len(h.items) || h.items[i] != t {
		return false
	}
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = nil
	h.items = h.items[:last]
	t.index = -1
	if t.weak {
		h.weak--
	}
	if i != last {
		if !h.down(i) {
			h.up(i)
		}
	}
	h.shrink()
	return true
}

// shrink gives memory back after a burst: a heap that held 100k timers
// should not pin their slots once they are gone.
func (h *timerHeap) shrink() {
	if c := cap(h.items); c > 1024 && len(h.items) < c/4 {
		h.items = append([]*timer(nil), h.items...)
	}
}

func (h *timerHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

func (h *timerHeap) down(i int) bool {
	start := i
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			break
		}
		h.swap(i, m)
		i = m
	}
	return i > start
}
