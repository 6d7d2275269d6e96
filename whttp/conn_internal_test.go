package whttp

import (
	"testing"
	"unsafe"
)

// An idle connection costs its conn, its parked wait and its weft.Conn
// (the landing buffer is pooled, taken only for a read): conn must stay
// within the 208-byte size class, the memory per idle connection is a
// goal.
func TestConnFitsIn208Bytes(t *testing.T) {
	if size := unsafe.Sizeof(conn{}); size > 208 {
		t.Fatalf("conn is %d bytes: over the 208-byte size class, the memory per idle connection is a goal", size)
	}
}
