package weft

// The net layer's side of Networks (seed_network.go): Listen, Dial and
// ListenPacket of a task with a Network of its own go through it, and what
// it returns is wrapped in the implementations behind Listener, Conn and
// PacketConn.

import "net"

type netListener struct{ ln NetListener }

func (l netListener) accept(t *Task) (connImpl, error) {
	c, err := l.ln.Accept(t)
	if err != nil {
		return nil, err
	}
	return netConn{c}, nil
}
func (l netListener) addr() net.Addr { return l.ln.Addr() }
func (l netListener) close() error   { return l.ln.Close() }

type netConn struct{ c NetConn }

func (c netConn) read(t *Task, b []byte) (int, error)  { return c.c.Read(t, b) }
func (c netConn) write(t *Task, b []byte) (int, error) { return c.c.Write(t, b) }
func (c netConn) closeWrite() error                    { return c.c.CloseWrite() }
func (c netConn) close() error                         { return c.c.Close() }
func (c netConn) localAddr() net.Addr                  { return c.c.LocalAddr() }
func (c netConn) remoteAddr() net.Addr                 { return c.c.RemoteAddr() }

type netPacket struct{ p NetPacketConn }

func (p netPacket) readFrom(t *Task, b []byte) (int, net.Addr, error) { return p.p.ReadFrom(t, b) }
func (p netPacket) writeTo(t *Task, b []byte, a net.Addr) (int, error) {
	return p.p.WriteTo(t, b, a)
}
func (p netPacket) localAddr() net.Addr { return p.p.LocalAddr() }
func (p netPacket) close() error        { return p.p.Close() }

// listenOn, dialOn and listenPacketOn are Listen, Dial and ListenPacket
// through the Network n.
func listenOn(t *Task, n Network, network, address string) (listenerImpl, error) {
	ln, err := n.Listen(t, network, address)
	if err != nil {
		return nil, err
	}
	return netListener{ln}, nil
}

func dialOn(t *Task, n Network, network, address string) (connImpl, error) {
	c, err := n.Dial(t, network, address)
	if err != nil {
		return nil, err
	}
	return netConn{c}, nil
}

func listenPacketOn(t *Task, n Network, network, address string) (packetImpl, error) {
	p, err := n.ListenPacket(t, network, address)
	if err != nil {
		return nil, err
	}
	return netPacket{p}, nil
}
