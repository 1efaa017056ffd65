package rawtcp

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

const supported = true

// conn is a TCP connection whose Read and Write make raw system calls.
// Everything else is the TCPConn's.
//
// RawConn takes its callback as a func value, and a closure over Read's
// or Write's arguments would escape to the heap on every call. So each
// direction keeps its arguments and results in the conn, and its callback
// is a method value bound once; the mutex makes concurrent Reads (or
// Writes) take turns over that state, as the socket's own lock would.
type conn struct {
	*net.TCPConn
	rc syscall.RawConn

	rmu    sync.Mutex
	r      op
	readFn func(uintptr) bool

	wmu     sync.Mutex
	w       op
	writeFn func(uintptr) bool
}

// op is one Read's or Write's buffer and progress.
type op struct {
	b     []byte
	done  int
	errno syscall.Errno
}

func newConn(tc *net.TCPConn, rc syscall.RawConn) *conn {
	c := &conn{TCPConn: tc, rc: rc}
	c.readFn, c.writeFn = c.read, c.write
	return c
}

// Write writes all of b unless the connection fails or its write deadline
// passes, as net.Conn's Write does.
func (c *conn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	c.w = op{b: b}
	err := c.rc.Write(c.writeFn)
	done, errno := c.w.done, c.w.errno
	c.w = op{}
	c.wmu.Unlock()
	if err == nil && errno != 0 {
		err = os.NewSyscallError("sendto", errno)
	}
	if err != nil {
		return done, c.opError("write", err)
	}
	return done, nil
}

func (c *conn) write(fd uintptr) bool {
	w := &c.w
	for w.done < len(w.b) && w.errno == 0 {
		n, again, e := call(syscall.SYS_SENDTO, fd, w.b[w.done:], syscall.MSG_NOSIGNAL)
		if again {
			return false // RawConn waits until the socket is writable
		}
		w.done, w.errno = w.done+n, e
	}
	return true
}

// Read reads what has arrived, up to len(b), waiting for something if
// nothing has; at the end of the stream it returns io.EOF.
func (c *conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	c.r = op{b: b}
	err := c.rc.Read(c.readFn)
	n, errno := c.r.done, c.r.errno
	c.r = op{}
	c.rmu.Unlock()
	if err == nil && errno != 0 {
		err = os.NewSyscallError("read", errno)
	}
	if err != nil {
		return n, c.opError("read", err)
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (c *conn) read(fd uintptr) bool {
	n, again, e := call(syscall.SYS_READ, fd, c.r.b, 0)
	c.r.done, c.r.errno = n, e
	return !again // on EAGAIN RawConn waits until the socket is readable
}

// call makes one read or sendto system call on p, again after EINTR.
// again reports EAGAIN: the socket is not ready.
func call(trap, fd uintptr, p []byte, flags uintptr) (n int, again bool, errno syscall.Errno) {
	for {
		r, _, e := syscall.RawSyscall6(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), flags, 0, 0)
		switch e {
		case 0:
			return int(r), false, 0
		case syscall.EINTR:
		case syscall.EAGAIN:
			return 0, true, 0
		default:
			return 0, false, e
		}
	}
}

// opError makes err look like the error the net package returns for op:
// RawConn reports its own as a "raw-read" or "raw-write" *net.OpError.
func (c *conn) opError(op string, err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
