package main

import (
	"context"
	"errors"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"github.com/weft-go/weft/whttp"
)

// The messages of the service weft.demo.Demo.
type (
	PingRequest struct {
		Text string `json:"text"`
		// Fail, if set, is the Connect code the call fails with.
		Fail string `json:"fail,omitempty"`
		// Delay makes the server wait that long (a deadline test).
		Delay time.Duration `json:"delay,omitempty"`
	}
	PingResponse struct {
		Text string `json:"text"`
		Loop int    `json:"loop"`
	}
	CountRequest struct {
		N     int           `json:"n"`
		Every time.Duration `json:"every,omitempty"`
	}
	CountResponse struct {
		I int `json:"i"`
	}
	SumRequest struct {
		X int `json:"x"`
	}
	SumResponse struct {
		Sum   int `json:"sum"`
		Count int `json:"count"`
	}
)

// Procedures of the service.
const (
	PingProcedure  = "/weft.demo.Demo/Ping"
	CountProcedure = "/weft.demo.Demo/Count"
	SumProcedure   = "/weft.demo.Demo/Sum"
	EchoProcedure  = "/weft.demo.Demo/Echo"
)

// demo implements the service. Its handlers run in the HTTP/2 stream's
// task (whttp.Adapt): they suspend that task (t.Sleep), never a
// goroutine, and see the client's cancellation and deadline as the task's
// cancellation.
type demo struct {
	// ended, if not nil, receives each handler's context error as it
	// returns (the tests watch deadlines and cancellations cross).
	ended chan error
}

func (d *demo) done(ctx context.Context) {
	if d.ended != nil {
		d.ended <- ctx.Err()
	}
}

func (d *demo) ping(ctx context.Context, req *connect.Request[PingRequest]) (*connect.Response[PingResponse], error) {
	defer d.done(ctx)
	t := whttp.TaskOfContext(ctx)
	if req.Msg.Delay > 0 {
		if err := t.Sleep(req.Msg.Delay); err != nil {
			return nil, connect.NewError(connect.CodeCanceled, err)
		}
	}
	if req.Msg.Fail != "" {
		var code connect.Code
		if err := code.UnmarshalText([]byte(req.Msg.Fail)); err != nil {
			return nil, connect.NewError(connect.CodeInvalidArgument, err)
		}
		return nil, connect.NewError(code, errors.New("asked to fail: "+req.Msg.Fail))
	}
	return connect.NewResponse(&PingResponse{Text: "pong: " + req.Msg.Text, Loop: t.Loop()}), nil
}

func (d *demo) count(ctx context.Context, req *connect.Request[CountRequest], st *connect.ServerStream[CountResponse]) error {
	defer d.done(ctx)
	t := whttp.TaskOfContext(ctx)
	for i := range req.Msg.N {
		if req.Msg.Every > 0 {
			if err := t.Sleep(req.Msg.Every); err != nil {
				return connect.NewError(connect.CodeCanceled, err)
			}
		}
		if err := ctx.Err(); err != nil { // the deadline connect set from grpc-timeout
			return connect.NewError(connect.CodeDeadlineExceeded, err)
		}
		if err := st.Send(&CountResponse{I: i}); err != nil {
			return err
		}
	}
	return nil
}

func (d *demo) sum(ctx context.Context, st *connect.ClientStream[SumRequest]) (*connect.Response[SumResponse], error) {
	defer d.done(ctx)
	var out SumResponse
	for st.Receive() {
		out.Sum += st.Msg().X
		out.Count++
	}
	if err := st.Err(); err != nil {
		return nil, err
	}
	return connect.NewResponse(&out), nil
}

func (d *demo) echo(ctx context.Context, st *connect.BidiStream[PingRequest, PingResponse]) error {
	defer d.done(ctx)
	for {
		m, err := st.Receive()
		if err != nil {
			if errors.Is(err, context.Canceled) || connect.CodeOf(err) == connect.CodeCanceled {
				return err
			}
			return nil // the client closed its side
		}
		if err := st.Send(&PingResponse{Text: "echo: " + m.Text}); err != nil {
			return err
		}
	}
}

// mux returns the service's handlers, standard http.Handlers that speak
// gRPC, gRPC-Web and Connect.
func (d *demo) mux() *http.ServeMux {
	opt := connect.WithCodec(jsonCodec{})
	mux := http.NewServeMux()
	mux.Handle(PingProcedure, connect.NewUnaryHandler(PingProcedure, d.ping, opt))
	mux.Handle(CountProcedure, connect.NewServerStreamHandler(CountProcedure, d.count, opt))
	mux.Handle(SumProcedure, connect.NewClientStreamHandler(SumProcedure, d.sum, opt))
	mux.Handle(EchoProcedure, connect.NewBidiStreamHandler(EchoProcedure, d.echo, opt))
	return mux
}

// server is the service on whttp: HTTP/2 over cleartext (h2c with prior
// knowledge, as gRPC clients speak it without TLS) beside HTTP/1.1 (for
// Connect's and gRPC-Web's unary calls).
func (d *demo) server() *whttp.Server {
	srv := &whttp.Server{Handler: whttp.Adapt(d.mux()), Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	return srv
}
