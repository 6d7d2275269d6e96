// Package cpubound holds the bench program's measurements of CPU-bound
// work beside weft's loop: `bench convoy`, an echo server beside k
// CPU-bound workers (tasks on the loop, tasks in Offload, and Go's own
// scheduler at GOMAXPROCS=1 for reference: the GIL's convoy effect), and
// `bench sha256`, hashing in tasks on one loop against hashing in Offload.
// See bench/README.md for their figures.
package cpubound
