package trace

import "sync"

// The default recorder: weft's Runs that have no trace option of their
// own record into it while it is set, each as a process of its own
// ("weft run N"). It serves `weft tour --trace`, which traces programs
// that call weft.Run themselves.
var (
	defaultMu  sync.Mutex
	defaultRec *Recorder // guarded by defaultMu
)

// SetDefault makes r the default recorder (nil: none). Runs already
// running keep what they had.
func SetDefault(r *Recorder) {
	defaultMu.Lock()
	defaultRec = r
	defaultMu.Unlock()
}

// Default returns the default recorder, or nil.
func Default() *Recorder {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	return defaultRec
}
