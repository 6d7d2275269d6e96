package resp

import (
	"strconv"
	"sync"

	"github.com/weft-go/weft"
)

// shards is how many parts the keyspace is split into, by a hash of the
// key, so that connections on different loops (or goroutines on
// different threads) seldom want the same lock.
const shards = 64

// Store is the keyspace: a map from key to value, split into shards, each
// guarded by a lock. A Store made by NewWeftStore is used by weft tasks
// and its shards are guarded by weft.Mutex (a task that finds a shard
// locked by a task of another loop suspends; one loop never contends,
// since no lock is held across a suspension point); one made by
// NewNetStore is used by goroutines and guarded by sync.Mutex. Values
// are copied in and out under the lock.
type Store struct {
	weft   bool
	shards [shards]shard
}

// shard is one part of the keyspace and its lock (one of the two, as the
// Store says), padded to keep neighbours off its cache line.
type shard struct {
	m   map[string]*value
	wmu weft.Mutex
	smu sync.Mutex
	_   [32]byte
}

// NewWeftStore returns an empty Store for weft tasks (Serve).
func NewWeftStore() *Store { return newStore(true) }

// NewNetStore returns an empty Store for goroutines (ServeNet).
func NewNetStore() *Store { return newStore(false) }

func newStore(w bool) *Store {
	s := &Store{weft: w}
	for i := range s.shards {
		s.shards[i].m = make(map[string]*value)
	}
	return s
}

// value is a key's value, behind a pointer so that a SET of a present
// key changes it in place (no map assignment, which would allocate the
// key's string again).
type value struct{ b []byte }

// session is one connection's access to a Store: its task, for a weft
// Store's locks (nil for a net Store).
type session struct {
	st *Store
	t  *weft.Task
}

// weftSession is t's access to st, a weft Store.
func (st *Store) weftSession(t *weft.Task) session {
	if !st.weft {
		panic("resp: a net Store served by weft (use NewWeftStore)")
	}
	return session{st: st, t: t}
}

// netSession is a goroutine's access to st, a net Store.
func (st *Store) netSession() session {
	if st.weft {
		panic("resp: a weft Store served by goroutines (use NewNetStore)")
	}
	return session{st: st}
}

// lock takes the lock of key's shard and returns the shard. With weft
// locks it is a cancellation point: a cancelled task gets the cause and
// no shard.
func (s session) lock(key []byte) (*shard, error) {
	// FNV-1a.
	h := uint32(2166136261)
	for _, c := range key {
		h ^= uint32(c)
		h *= 16777619
	}
	sh := &s.st.shards[h%shards]
	if err := s.lockShard(sh); err != nil {
		return nil, err
	}
	return sh, nil
}

func (s session) unlock(sh *shard) {
	if s.t != nil {
		sh.wmu.Unlock()
	} else {
		sh.smu.Unlock()
	}
}

// get appends key's value to out as a bulk string, or a null if there is
// none.
func (s session) get(out, key []byte) ([]byte, error) {
	sh, err := s.lock(key)
	if err != nil {
		return out, err
	}
	v, ok := sh.m[string(key)]
	if ok {
		out = appendBulk(out, v.b)
	} else {
		out = appendNull(out)
	}
	s.unlock(sh)
	return out, nil
}

// set makes key's value a copy of v (in place when the old value's array
// holds it).
func (s session) set(key, v []byte) error {
	sh, err := s.lock(key)
	if err != nil {
		return err
	}
	if old, ok := sh.m[string(key)]; ok {
		old.b = append(old.b[:0], v...)
	} else {
		sh.m[string(key)] = &value{b: append([]byte(nil), v...)}
	}
	s.unlock(sh)
	return nil
}

// has reports whether key is present, and deletes it if del is set.
func (s session) has(key []byte, del bool) (bool, error) {
	sh, err := s.lock(key)
	if err != nil {
		return false, err
	}
	_, ok := sh.m[string(key)]
	if ok && del {
		delete(sh.m, string(key))
	}
	s.unlock(sh)
	return ok, nil
}

// incr adds delta to key's value, a decimal integer (a missing key is 0),
// and returns the new value; ok is false if the value is not an integer
// or the sum overflows.
func (s session) incr(key []byte, delta int64) (v int64, ok bool, err error) {
	sh, err := s.lock(key)
	if err != nil {
		return 0, false, err
	}
	defer s.unlock(sh)
	old, found := sh.m[string(key)]
	if found {
		if v, err = strconv.ParseInt(string(old.b), 10, 64); err != nil {
			return 0, false, nil
		}
	} else {
		old = &value{}
	}
	if (delta > 0 && v > v+delta) || (delta < 0 && v < v+delta) {
		return 0, false, nil
	}
	v += delta
	old.b = strconv.AppendInt(old.b[:0], v, 10)
	if !found {
		sh.m[string(key)] = old
	}
	return v, true, nil
}

// size counts the keys, shard by shard (not one snapshot).
func (s session) size() (int, error) {
	n := 0
	for i := range s.st.shards {
		sh := &s.st.shards[i]
		if err := s.lockShard(sh); err != nil {
			return 0, err
		}
		n += len(sh.m)
		s.unlock(sh)
	}
	return n, nil
}

// flush deletes every key, shard by shard.
func (s session) flush() error {
	for i := range s.st.shards {
		sh := &s.st.shards[i]
		if err := s.lockShard(sh); err != nil {
			return err
		}
		clear(sh.m)
		s.unlock(sh)
	}
	return nil
}

func (s session) lockShard(sh *shard) error {
	if s.t != nil {
		return sh.wmu.Lock(s.t)
	}
	sh.smu.Lock()
	return nil
}
