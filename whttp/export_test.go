package whttp

// CheckRetention says whether this build checks that handlers keep no
// request (the race detector or weft_debug) instead of reusing them.
const CheckRetention = checkRetention

// H2ReadBuffers returns, for each HTTP/2 connection s serves, whether its
// reader holds a large read buffer (h2Input.big).
func H2ReadBuffers(s *Server) []bool {
	var out []bool
	s.mu.Lock()
	defer s.mu.Unlock()
	for sv := range s.servings {
		for _, c := range sv.snapshot() {
			if h := c.h2.Load(); h != nil {
				out = append(out, h.in.holding.Load())
			}
		}
	}
	return out
}

// H2Writes returns the writes the writers of s's HTTP/2 connections made.
func H2Writes(s *Server) int64 {
	var n int64
	s.mu.Lock()
	defer s.mu.Unlock()
	for sv := range s.servings {
		for _, c := range sv.snapshot() {
			if h := c.h2.Load(); h != nil {
				n += h.writes.Load()
			}
		}
	}
	return n
}
