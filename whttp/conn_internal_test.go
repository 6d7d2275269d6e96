package whttp

import (
	"testing"
	"unsafe"
)

// An idle connection costs its conn (with the landing buffer), its task
// and its weft.Conn: conn must stay within the 640-byte size class (the
// landing buffer takes what the fields leave).
func TestConnFitsIn640Bytes(t *testing.T) {
	if size := unsafe.Sizeof(conn{}); size > 640 {
		t.Fatalf("conn is %d bytes: shrink landSize or the fields, the memory per idle connection is a goal", size)
	}
}
