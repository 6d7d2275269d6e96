package whttp

// CheckRetention says whether this build checks that handlers keep no
// request (the race detector or weft_debug) instead of reusing them.
const CheckRetention = checkRetention
