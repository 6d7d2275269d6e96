package main

// Benchmarks: the same calls from grpc-go's client, against the service
// on whttp (connect handlers under Adapt, one weft loop) and against
// grpc-go's own server (the same methods as grpc.ServiceDesc handlers).
// Client and server share the process, so ns/op is the cost of both
// sides; run under flock /tmp/weft-bench.lock with -count for a spread:
//
//	go test -run '^$' -bench '^Benchmark(Unary|ServerStream)$' -count 5
//
// cpu_linux_test.go has the same calls with the server in a process of
// its own, measured in server CPU per call.

import (
	"context"
	"io"
	"net"
	"testing"

	"google.golang.org/grpc"
)

// grpcGoServer serves the Ping and Count methods with grpc-go's server.
func grpcGoServer(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := newGRPCGoServer()
	go s.Serve(ln)
	b.Cleanup(s.Stop)
	return ln.Addr().String()
}

// newGRPCGoServer is grpc-go's server with the Ping and Count methods.
func newGRPCGoServer() *grpc.Server {
	s := grpc.NewServer()
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: "weft.demo.Demo",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Ping",
			Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				var req PingRequest
				if err := dec(&req); err != nil {
					return nil, err
				}
				return &PingResponse{Text: "pong: " + req.Text}, nil
			},
		}},
		Streams: []grpc.StreamDesc{{
			StreamName:    "Count",
			ServerStreams: true,
			Handler: func(_ any, st grpc.ServerStream) error {
				var req CountRequest
				if err := st.RecvMsg(&req); err != nil {
					return err
				}
				for i := range req.N {
					if err := st.SendMsg(&CountResponse{I: i}); err != nil {
						return err
					}
				}
				return nil
			},
		}},
	}, struct{}{})
	return s
}

func benchServers(b *testing.B, f func(b *testing.B, cc *grpc.ClientConn)) {
	b.Run("whttp", func(b *testing.B) {
		f(b, dial(b, serve(b, &demo{}, 1)))
	})
	b.Run("grpc-go", func(b *testing.B) {
		f(b, dial(b, grpcGoServer(b)))
	})
}

// BenchmarkUnary is a ping-pong: one call at a time.
func BenchmarkUnary(b *testing.B) {
	benchServers(b, func(b *testing.B, cc *grpc.ClientConn) {
		var resp PingResponse
		for b.Loop() {
			if err := cc.Invoke(context.Background(), PingProcedure, &PingRequest{Text: "x"}, &resp); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// receiveCount asks the Count service for n messages on cc and receives
// them all.
func receiveCount(b *testing.B, cc *grpc.ClientConn, n int) {
	st, err := cc.NewStream(context.Background(), countDesc, CountProcedure)
	if err != nil {
		b.Fatal(err)
	}
	st.SendMsg(&CountRequest{N: n})
	st.CloseSend()
	got := 0
	for {
		var m CountResponse
		if err := st.RecvMsg(&m); err == io.EOF {
			break
		} else if err != nil {
			b.Fatal(err)
		}
		got++
	}
	if got != n {
		b.Fatalf("%d messages, want %d", got, n)
	}
}

// BenchmarkServerStream receives a stream of 100k small messages; ns/op
// is per message.
func BenchmarkServerStream(b *testing.B) {
	benchServers(b, func(b *testing.B, cc *grpc.ClientConn) {
		const n = 100_000
		for b.Loop() {
			receiveCount(b, cc, n)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
	})
}
