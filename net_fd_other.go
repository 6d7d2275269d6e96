//go:build !linux

package weft

// Without epoll, all I/O goes through the portable layer.

const haveFDIO = false

func listenFD(t *Task, network, address string, cfg *sockConfig) (listenerImpl, error) {
	panic("weft: internal error: fd I/O on a system without it")
}

func dialFD(t *Task, network, address string, cfg *sockConfig) (connImpl, error) {
	panic("weft: internal error: fd I/O on a system without it")
}

func listenPacketFD(t *Task, network, address string, cfg *sockConfig) (packetImpl, error) {
	panic("weft: internal error: fd I/O on a system without it")
}

func bindPipeFD(t *Task, fd int) (fileImpl, error) {
	panic("weft: internal error: fd I/O on a system without it")
}
