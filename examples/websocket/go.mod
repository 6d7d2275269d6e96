module github.com/weft-go/weft/examples/websocket

go 1.26.0

replace github.com/weft-go/weft => ../..

require (
	github.com/coder/websocket v1.8.14
	github.com/go-chi/chi/v5 v5.2.3
	github.com/gorilla/websocket v1.5.3
	github.com/weft-go/weft v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
)

require (
	golang.org/x/net v0.63.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
)
