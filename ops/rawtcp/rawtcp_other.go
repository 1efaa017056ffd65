//go:build !linux

package rawtcp

import (
	"net"
	"syscall"
)

const supported = false

// conn is never made here; Listener and wrap return their argument.
type conn struct {
	*net.TCPConn
}

func newConn(tc *net.TCPConn, _ syscall.RawConn) *conn { return &conn{TCPConn: tc} }
