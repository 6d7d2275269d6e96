//go:build unix

package weft_test

import (
	"fmt"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/fdutil"
	"golang.org/x/sys/unix"
)

// Readable suspends the task until a pipe has data, while other tasks run.
func ExampleReadable() {
	r, w, _ := fdutil.Pipe()
	defer unix.Close(r)
	weft.Run(func(t *weft.Task) (struct{}, error) {
		weft.Go(t, func(t *weft.Task) (int, error) {
			fmt.Println("writer: writing")
			return unix.Write(w, []byte("hello"))
		})
		weft.Readable(t, r)
		buf := make([]byte, 16)
		n, _ := unix.Read(r, buf)
		fmt.Println("reader:", string(buf[:n]))
		unix.Close(w)
		return struct{}{}, nil
	})
	// Output:
	// writer: writing
	// reader: hello
}
