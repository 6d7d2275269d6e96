//go:build unix

package weft_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weft-go/weft"
)

// io.Copy from a file to a NetConn or LoopConn (its io.ReaderFrom: sendfile
// on Linux) sends the file whole, or the part an io.LimitedReader allows,
// from the file's offset, and leaves the offset after what was sent; a
// client that reads slowly makes the sender wait for the socket, and every
// byte arrives in order. Not a file (a bytes.Reader): the same bytes,
// through Write.
func TestReadFromAFileSendsIt(t *testing.T) {
	data := make([]byte, 8<<20+12345) // more than the socket buffers take: the sender waits
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	before := openFDs(t)
	got := make(chan []byte, 1)
	_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
		ln := mustListen(t, wt, "tcp", "127.0.0.1:0")
		defer ln.Close()
		go func() { // the client: reads slowly at first, then all
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				got <- nil
				return
			}
			defer c.Close()
			c.(*net.TCPConn).SetReadBuffer(64 << 10)
			time.Sleep(100 * time.Millisecond)
			b, _ := io.ReadAll(c)
			got <- b
		}()
		c, err := ln.Accept(wt)
		if err != nil {
			return struct{}{}, err
		}
		defer c.Close()
		f, err := os.Open(path)
		if err != nil {
			return struct{}{}, err
		}
		defer f.Close()
		nc := c.NetConn(wt)
		// 1000 bytes through a LimitedReader, from offset 0.
		if n, err := io.CopyN(nc, f, 1000); n != 1000 || err != nil {
			t.Errorf("CopyN: %d, %v", n, err)
		}
		if off, _ := f.Seek(0, io.SeekCurrent); off != 1000 {
			t.Errorf("offset %d after CopyN, want 1000", off)
		}
		// The rest from a task through LoopConn, to the file's end.
		p := weft.Go(wt, func(wt *weft.Task) (int64, error) { return io.Copy(c.LoopConn(), f) })
		n, err := p.Await(wt)
		if want := int64(len(data) - 1000); n != want || err != nil {
			t.Errorf("Copy: %d, %v; want %d", n, err, want)
		}
		// Not a file: through Write.
		if n, err := io.Copy(nc, bytes.NewReader([]byte("tail"))); n != 4 || err != nil {
			t.Errorf("Copy of a bytes.Reader: %d, %v", n, err)
		}
		return struct{}{}, c.CloseWrite()
	})
	if err != nil {
		t.Fatal(err)
	}
	b := <-got
	if want := append(append([]byte(nil), data...), "tail"...); !bytes.Equal(b, want) {
		t.Fatalf("received %d bytes, want %d (equal: %v)", len(b), len(want), bytes.Equal(b, want))
	}
	if n := openFDs(t); n > before {
		t.Fatalf("%d descriptors open, %d before", n, before)
	}
}
