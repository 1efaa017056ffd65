package rawtcp

import "net"

// Listener wraps ln so that the TCP connections it accepts read and write
// with raw system calls (see the package comment). Connections of other
// kinds pass through unchanged.
func Listener(ln net.Listener) net.Listener {
	if !supported {
		return ln
	}
	return &listener{Listener: ln}
}

type listener struct {
	net.Listener
}

func (l *listener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return wrap(nc), nil
}

// wrap wraps one accepted connection (see Listener).
func wrap(nc net.Conn) net.Conn {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	return newConn(tc, rc)
}
