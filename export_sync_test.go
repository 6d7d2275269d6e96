package weft

// SubscribedSignals reports how many signals have a watch (a Signal
// subscription and its forwarding goroutine).
func SubscribedSignals() int {
	sigReg.mu.Lock()
	defer sigReg.mu.Unlock()
	return len(sigReg.watches)
}
