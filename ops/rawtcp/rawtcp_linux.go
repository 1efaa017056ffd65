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
		for done < len(b) {
			n, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&b[done])), uintptr(len(b)-done), syscall.MSG_NOSIGNAL, 0, 0)
			switch e {
			case 0:
				done += int(n)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // RawConn waits until the socket is writable
			default:
				errno = e
				return true
			}
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
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case 0:
				n = int(r)
				return true
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // RawConn waits until the socket is readable
			default:
				errno = e
				return true
			}
		}
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

// opError makes err look like the error the net package returns for op:
// RawConn reports its own as a "raw-read" or "raw-write" *net.OpError.
func (c *conn) opError(op string, err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
