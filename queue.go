package weft

// queue is a growable FIFO ring buffer. It is loop-owned: no locking.
type queue[T any] struct {
	buf        []T
	head, size int
}

func (q *queue[T]) len() int { return q.size }

func (q *queue[T]) push(v T) {
	if q.size == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.size)&(len(q.buf)-1)] = v
	q.size++
}

// pushFront puts v at the head, to be popped next.
func (q *queue[T]) pushFront(v T) {
	if q.size == len(q.buf) {
		q.grow()
	}
	q.head = (q.head - 1) & (len(q.buf) - 1)
	q.buf[q.head] = v
	q.size++
}

func (q *queue[T]) pop() (T, bool) {
	var zero T
	if q.size == 0 {
		return zero, false
	}
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.size--
	return v, true
}

// grow doubles the buffer (always a power of two, so indexes wrap by mask).
func (q *queue[T]) grow() {
	n := 2 * len(q.buf)
	if n == 0 {
		n = 16
	}
	buf := make([]T, n)
	for i := 0; i < q.size; i++ {
		buf[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
	}
	q.buf, q.head = buf, 0
}
