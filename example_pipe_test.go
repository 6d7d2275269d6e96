package weft_test

import (
	"fmt"
	"io"

	"github.com/weft-go/weft"
)

func ExamplePipe() {
	r, w, _ := weft.Pipe()
	defer r.Close()
	weft.Run(func(t *weft.Task) (struct{}, error) {
		weft.Go(t, func(t *weft.Task) (int, error) {
			defer w.Close()
			return w.Write(t, []byte("through the pipe"))
		})
		b, err := io.ReadAll(r.ReadWriter(t))
		fmt.Println(string(b), err)
		return struct{}{}, nil
	})
	// Output: through the pipe <nil>
}
