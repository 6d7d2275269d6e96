package weft_test

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/weft-go/weft"
)

// A tiny line-echo server and a client on the same loop.
func ExampleListen() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		ln, err := weft.Listen(t, "tcp", "127.0.0.1:0")
		if err != nil {
			return struct{}{}, err
		}
		defer ln.Close()
		weft.Go(t, func(t *weft.Task) (struct{}, error) {
			c, err := ln.Accept(t)
			if err != nil {
				return struct{}{}, err
			}
			defer c.Close()
			line, err := bufio.NewReader(c.ReadWriter(t)).ReadString('\n')
			if err != nil {
				return struct{}{}, err
			}
			_, err = c.Write(t, []byte(strings.ToUpper(line)))
			return struct{}{}, err
		})
		c, err := weft.Dial(t, "tcp", ln.Addr().String())
		if err != nil {
			return struct{}{}, err
		}
		defer c.Close()
		fmt.Fprintln(c.ReadWriter(t), "hello, weft")
		reply, _ := bufio.NewReader(c.ReadWriter(t)).ReadString('\n')
		fmt.Print(reply)
		return struct{}{}, nil
	})
	// Output: HELLO, WEFT
}

// Offload keeps blocking or CPU-heavy work off the loop.
func ExampleOffload() {
	weft.Run(func(t *weft.Task) (struct{}, error) {
		sum, err := weft.Offload(t, func() (int, error) {
			s := 0
			for i := 1; i <= 1000; i++ {
				s += i
			}
			return s, nil
		})
		fmt.Println(sum, err)
		return struct{}{}, nil
	})
	// Output: 500500 <nil>
}

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
