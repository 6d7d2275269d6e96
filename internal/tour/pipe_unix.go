//go:build unix

package tour

import (
	"fmt"
	"io"
	"time"

	"github.com/weft-go/weft"
	"github.com/weft-go/weft/internal/fdutil"
	"golang.org/x/sys/unix"
)

// Pipe runs a writer, a reader and a ticker on one loop. The reader waits
// with Readable for the pipe to have data, so the ticker keeps ticking in
// between; closing the write end makes the pipe readable with no data,
// which is end of file.
func Pipe(w io.Writer) error {
	r, wr, err := fdutil.Pipe()
	if err != nil {
		return err
	}
	defer unix.Close(r)
	_, err = weft.Run(func(t *weft.Task) (struct{}, error) {
		writer := weft.Go(t, func(t *weft.Task) (struct{}, error) {
			defer unix.Close(wr)
			for _, msg := range []string{"one", "two", "three"} {
				if err := t.Sleep(100 * time.Millisecond); err != nil {
					return struct{}{}, err
				}
				if _, err := unix.Write(wr, []byte(msg)); err != nil {
					return struct{}{}, err
				}
			}
			return struct{}{}, nil
		})
		ticker := weft.Go(t, func(t *weft.Task) (struct{}, error) {
			if err := t.Sleep(50 * time.Millisecond); err != nil {
				return struct{}{}, err
			}
			for i := 1; i <= 3; i++ {
				fmt.Fprintln(w, "tick", i)
				if err := t.Sleep(100 * time.Millisecond); err != nil {
					return struct{}{}, err
				}
			}
			return struct{}{}, nil
		})
		buf := make([]byte, 64)
		for {
			if err := weft.Readable(t, r); err != nil {
				return struct{}{}, err
			}
			n, err := unix.Read(r, buf)
			if err != nil {
				return struct{}{}, err
			}
			if n == 0 {
				fmt.Fprintln(w, "eof")
				break
			}
			fmt.Fprintln(w, "read", string(buf[:n]))
		}
		_, err := weft.All(t, writer, ticker)
		return struct{}{}, err
	})
	return err
}
