package main

// The standard gRPC client (google.golang.org/grpc) calls the service
// served by whttp: unary and streaming calls, status codes, and deadlines
// and cancellations crossing from the client to the handler's task.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/weft-go/weft"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"
)

func TestMain(m *testing.M) {
	serverChildFromEnv() // a server child of the ServerCPU benchmarks
	encoding.RegisterCodec(jsonCodec{})
	goleak.VerifyTestMain(m)
}

// serve runs the service on a loop of its own (loops of them) until the
// end of the test.
func serve(t testing.TB, d *demo, loops int) string {
	t.Helper()
	addr := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := weft.Run(func(wt *weft.Task) (struct{}, error) {
			ln, err := weft.Listen(wt, "tcp", "127.0.0.1:0")
			if err != nil {
				addr <- ""
				return struct{}{}, err
			}
			addr <- ln.Addr().String()
			return struct{}{}, d.server().Serve(wt, ln)
		}, weft.WithContext(ctx), weft.WithLoops(loops))
		done <- err
	}()
	a := <-addr
	if a == "" {
		t.Fatal(<-done)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	})
	return a
}

func dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.CallContentSubtype("json")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func TestGRPCUnary(t *testing.T) {
	for _, loops := range []int{1, 2} {
		cc := dial(t, serve(t, &demo{}, loops))
		for i := range 20 {
			var resp PingResponse
			err := cc.Invoke(context.Background(), PingProcedure, &PingRequest{Text: "hi"}, &resp)
			if err != nil {
				t.Fatalf("loops %d call %d: %v", loops, i, err)
			}
			if resp.Text != "pong: hi" {
				t.Fatalf("response %+v", resp)
			}
		}
	}
}

// A handler's error reaches the client as its gRPC status code.
func TestGRPCStatusCodes(t *testing.T) {
	cc := dial(t, serve(t, &demo{}, 1))
	for code, want := range map[string]codes.Code{
		"not_found":          codes.NotFound,
		"permission_denied":  codes.PermissionDenied,
		"resource_exhausted": codes.ResourceExhausted,
		"internal":           codes.Internal,
	} {
		var resp PingResponse
		err := cc.Invoke(context.Background(), PingProcedure, &PingRequest{Text: "x", Fail: code}, &resp)
		if got := status.Code(err); got != want {
			t.Fatalf("fail %s: code %v (%v), want %v", code, got, err, want)
		}
	}
}

var countDesc = &grpc.StreamDesc{StreamName: "Count", ServerStreams: true}

func TestGRPCServerStream(t *testing.T) {
	cc := dial(t, serve(t, &demo{}, 2))
	st, err := cc.NewStream(context.Background(), countDesc, CountProcedure)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SendMsg(&CountRequest{N: 5000}); err != nil {
		t.Fatal(err)
	}
	st.CloseSend()
	n := 0
	for {
		var m CountResponse
		err := st.RecvMsg(&m)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.I != n {
			t.Fatalf("message %d is %d", n, m.I)
		}
		n++
	}
	if n != 5000 {
		t.Fatalf("%d messages, want 5000", n)
	}
}

func TestGRPCClientStreamAndBidi(t *testing.T) {
	cc := dial(t, serve(t, &demo{}, 1))
	st, err := cc.NewStream(context.Background(), &grpc.StreamDesc{ClientStreams: true}, SumProcedure)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 100; i++ {
		if err := st.SendMsg(&SumRequest{X: i}); err != nil {
			t.Fatal(err)
		}
	}
	st.CloseSend()
	var sum SumResponse
	if err := st.RecvMsg(&sum); err != nil {
		t.Fatal(err)
	}
	if sum.Sum != 5050 || sum.Count != 100 {
		t.Fatalf("sum %+v", sum)
	}

	bidi, err := cc.NewStream(context.Background(), &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, EchoProcedure)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a", "b", "c"} {
		if err := bidi.SendMsg(&PingRequest{Text: s}); err != nil {
			t.Fatal(err)
		}
		var r PingResponse
		if err := bidi.RecvMsg(&r); err != nil || r.Text != "echo: "+s {
			t.Fatalf("echo %q: %+v %v", s, r, err)
		}
	}
	bidi.CloseSend()
	if err := bidi.RecvMsg(new(PingResponse)); err != io.EOF {
		t.Fatalf("after CloseSend: %v", err)
	}
}

// The client's deadline crosses to the server: the handler's task is
// cancelled (its Sleep returns) when the deadline passes, and the client
// gets DeadlineExceeded.
func TestGRPCDeadlineCrosses(t *testing.T) {
	d := &demo{ended: make(chan error, 1)}
	cc := dial(t, serve(t, d, 1))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	var resp PingResponse
	err := cc.Invoke(ctx, PingProcedure, &PingRequest{Text: "slow", Delay: time.Minute}, &resp)
	if got := status.Code(err); got != codes.DeadlineExceeded {
		t.Fatalf("code %v (%v), want DeadlineExceeded", got, err)
	}
	select {
	case herr := <-d.ended:
		if herr == nil {
			t.Fatal("the handler's context was not done when it returned")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the handler was not stopped by the client's deadline")
	}
	if e := time.Since(start); e > 20*time.Second {
		t.Fatalf("took %v", e)
	}
}

// A client that cancels a server stream stops the handler's task.
func TestGRPCCancelCrosses(t *testing.T) {
	d := &demo{ended: make(chan error, 1)}
	cc := dial(t, serve(t, d, 2))
	ctx, cancel := context.WithCancel(context.Background())
	st, err := cc.NewStream(ctx, countDesc, CountProcedure)
	if err != nil {
		t.Fatal(err)
	}
	st.SendMsg(&CountRequest{N: 1 << 30, Every: time.Millisecond})
	st.CloseSend()
	for range 3 {
		if err := st.RecvMsg(new(CountResponse)); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	select {
	case <-d.ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the handler went on after the client cancelled")
	}
	var err2 error
	for err2 == nil { // messages received before the cancel may come first
		err2 = st.RecvMsg(new(CountResponse))
	}
	if status.Code(err2) != codes.Canceled {
		t.Fatalf("after cancel: %v", err2)
	}
}

// The same handlers answer Connect's own protocol over HTTP/1.1 (its
// unary calls are plain POSTs).
func TestConnectOverHTTP1(t *testing.T) {
	addr := serve(t, &demo{}, 1)
	client := connect.NewClient[PingRequest, PingResponse](http.DefaultClient, "http://"+addr+PingProcedure, connect.WithCodec(jsonCodec{}))
	resp, err := client.CallUnary(context.Background(), connect.NewRequest(&PingRequest{Text: "c"}))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Msg.Text != "pong: c" {
		t.Fatalf("%+v", resp.Msg)
	}
	http.DefaultClient.CloseIdleConnections()
}
