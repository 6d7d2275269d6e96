package weft

import (
	"testing"
	"unsafe"
)

// TestRecordSizes keeps the records every waiting task pays for within
// their allocator size classes: a field added to taskExtra that pushes it
// past 288 bytes costs every sleeping, awaiting or reading task 32 bytes
// more (the next class is 320), and belongs in taskRare instead. The sizes
// are those of 64-bit platforms.
func TestRecordSizes(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the size classes are reckoned for 64-bit platforms")
	}
	for _, c := range []struct {
		name      string
		size, max uintptr
	}{
		{"taskExtra", unsafe.Sizeof(taskExtra{}), 288},
		{"obsRecord", unsafe.Sizeof(obsRecord{}), 160}, // all an unstarted GoWhenReadable wait has (prepareUnstarted)
		{"taskRare", unsafe.Sizeof(taskRare{}), 128},
		{"timer", unsafe.Sizeof(timer{}), 40},
		{"Conn", unsafe.Sizeof(Conn{}), 224}, // an idle connection's
		{"taskCell[struct{}]", unsafe.Sizeof(taskCell[struct{}]{}), 240},
		{"wrappedCell[struct{}]", unsafe.Sizeof(wrappedCell[struct{}]{}), 240}, // a group task's
	} {
		if c.size > c.max {
			t.Errorf("%s is %d bytes, over the %d of its size class", c.name, c.size, c.max)
		}
	}
}
