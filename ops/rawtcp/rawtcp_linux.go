package rawtcp

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

const supported = true

// conn is a TCP connection whose Read and Write make raw system calls.
// Everything else is the TCPConn's.
type conn struct {
	*net.TCPConn
	rc syscall.RawConn
}

// Write writes all of b unless the connection fails or its write deadline
// passes, as net.Conn's Write does.
func (c *conn) Write(b []byte) (int, error) {
	done := 0
	var errno syscall.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		for done < len(b) && errno == 0 {
			n, again, e := call(syscall.SYS_SENDTO, fd, b[done:], syscall.MSG_NOSIGNAL)
			if again {
				return false // RawConn waits until the socket is writable
			}
			done, errno = done+n, e
		}
		return true
	})
	if err == nil && errno != 0 {
		err = os.NewSyscallError("sendto", errno)
	}
	if err != nil {
		return done, c.opError("write", err)
	}
	return done, nil
}

// Read reads what has arrived, up to len(b), waiting for something if
// nothing has; at the end of the stream it returns io.EOF.
func (c *conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n := 0
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		var again bool
		n, again, errno = call(syscall.SYS_READ, fd, b, 0)
		return !again // on EAGAIN RawConn waits until the socket is readable
	})
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
