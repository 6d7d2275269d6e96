package tour

import (
	"fmt"
	"io"
	"time"

	"github.com/weft-go/weft"
)

// Pipe runs a writer, a reader and a ticker on one loop, over a weft.Pipe.
// The reader's Read suspends until the pipe has data, so the ticker keeps
// ticking in between; closing the write end makes Read return io.EOF.
func Pipe(w io.Writer) error {
	r, wr, err := weft.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = weft.Run(func(t *weft.Task) (struct{}, error) {
		writer := weft.Go(t, func(t *weft.Task) (struct{}, error) {
			defer wr.Close()
			for _, msg := range []string{"one", "two", "three"} {
				if err := t.Sleep(100 * time.Millisecond); err != nil {
					return struct{}{}, err
				}
				if _, err := wr.Write(t, []byte(msg)); err != nil {
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
			n, err := r.Read(t, buf)
			if err == io.EOF {
				fmt.Fprintln(w, "eof")
				break
			}
			if err != nil {
				return struct{}{}, err
			}
			fmt.Fprintln(w, "read", string(buf[:n]))
		}
		_, err := weft.All(t, writer, ticker)
		return struct{}{}, err
	})
	return err
}
