module github.com/weft-go/weft

go 1.26.0

require (
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.50.0
)

require golang.org/x/net v0.63.0

require golang.org/x/text v0.44.0 // indirect
