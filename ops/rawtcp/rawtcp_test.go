package rawtcp

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// pair returns a wrapped server side and a plain client side of one TCP
// connection on loopback.
func pair(t *testing.T) (srv, cli net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	wl := Listener(ln)
	done := make(chan error, 1)
	go func() {
		c, err := wl.Accept()
		srv = c
		done <- err
	}()
	cli, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(); cli.Close() })
	if runtime.GOOS == "linux" {
		if _, ok := srv.(*conn); !ok {
			t.Fatalf("accepted a %T, want the raw connection", srv)
		}
	}
	return srv, cli
}

// TestBothWays: megabytes each way at once, so that both sides' socket
// buffers fill and Read and Write wait for readiness (EAGAIN) and resume
// part-way through a buffer.
func TestBothWays(t *testing.T) {
	srv, cli := pair(t)
	const size = 8 << 20
	up, down := make([]byte, size), make([]byte, size)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range up {
		up[i], down[i] = byte(r.Uint32()), byte(r.Uint32())
	}
	errs := make(chan error, 4)
	got := make(chan []byte, 2)
	send := func(c net.Conn, b []byte) {
		n, err := c.Write(b)
		if err == nil && n != len(b) {
			err = io.ErrShortWrite
		}
		errs <- err
	}
	recv := func(c net.Conn, n int) {
		b := make([]byte, n)
		// Odd-sized reads: Read returns what has arrived.
		for off := 0; off < n; {
			k, err := c.Read(b[off:min(n, off+7777)])
			if err != nil {
				errs <- err
				got <- nil
				return
			}
			off += k
		}
		errs <- nil
		got <- b
	}
	go send(cli, up)
	go send(srv, down)
	go recv(srv, size)
	go recv(cli, size)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	a, b := <-got, <-got
	if !(bytes.Equal(a, up) && bytes.Equal(b, down) || bytes.Equal(a, down) && bytes.Equal(b, up)) {
		t.Fatal("the bytes read are not the bytes written")
	}
}

func TestEOF(t *testing.T) {
	srv, cli := pair(t)
	cli.Write([]byte("bye"))
	cli.Close()
	b, err := io.ReadAll(srv)
	if err != nil || string(b) != "bye" {
		t.Fatalf("ReadAll = %q, %v; want \"bye\", nil (io.EOF ends it)", b, err)
	}
	if n, err := srv.Read(make([]byte, 4)); n != 0 || err != io.EOF {
		t.Fatalf("Read after the end = %d, %v; want 0, io.EOF", n, err)
	}
	if n, err := srv.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v; want 0, nil", n, err)
	}
}

func TestReadDeadline(t *testing.T) {
	srv, _ := pair(t)
	srv.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := srv.Read(make([]byte, 10))
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Read past its deadline = %v; want a timeout", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "read" || oe.Net != "tcp" {
		t.Fatalf("Read's error = %#v; want a read *net.OpError", err)
	}
}

func TestWriteDeadline(t *testing.T) {
	srv, _ := pair(t)
	// The client never reads: the write fills both buffers and waits.
	srv.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	n, err := srv.Write(make([]byte, 64<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write past its deadline = %d, %v; want a timeout", n, err)
	}
	if n <= 0 || n >= 64<<20 {
		t.Fatalf("Write wrote %d bytes before its deadline; want part of the buffer", n)
	}
}

// TestCloseWakesRead: Close ends a Read waiting for data, as it does for
// any net.Conn.
func TestCloseWakesRead(t *testing.T) {
	srv, _ := pair(t)
	errc := make(chan error, 1)
	go func() {
		_, err := srv.Read(make([]byte, 10))
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	srv.Close()
	if err := <-errc; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read on a closed connection = %v; want net.ErrClosed", err)
	}
}

// TestWriteToGonePeer: writing to a peer that has gone fails with an
// error (sendto's MSG_NOSIGNAL: no SIGPIPE).
func TestWriteToGonePeer(t *testing.T) {
	srv, cli := pair(t)
	cli.(*net.TCPConn).SetLinger(0) // reset, not a FIN
	cli.Close()
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = srv.Write([]byte("anyone there?"))
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Write to a reset connection = %v; want ECONNRESET or EPIPE", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "write" {
		t.Fatalf("Write's error = %#v; want a write *net.OpError", err)
	}
}

func TestOtherConnsPassThrough(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if wrap(a) != a {
		t.Fatal("a non-TCP connection was wrapped")
	}
}

// TestNoAllocations: a Read or Write that finds its socket ready allocates
// nothing; the point SELECT makes one of each per statement.
func TestNoAllocations(t *testing.T) {
	if raceEnabled || runtime.GOOS != "linux" {
		t.Skip("allocation counts need the raw connection and no race detector")
	}
	srv, cli := pair(t)
	msg, buf := []byte("ping"), make([]byte, 64)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := cli.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(srv, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(cli, buf[:len(msg)]); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per round trip, want 0", n)
	}
}

// TestConcurrentWrites: net.Conn lets several goroutines write (or read)
// at once; the per-direction state must not mix their buffers.
func TestConcurrentWrites(t *testing.T) {
	srv, cli := pair(t)
	const writers, each = 4, 2000
	errs := make(chan error, writers+1)
	for w := range writers {
		go func() {
			rec := []byte{byte(w), byte(w), byte(w), byte(w)}
			for range each {
				if _, err := srv.Write(rec); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	counts := make([]int, writers)
	go func() {
		buf := make([]byte, 4)
		for range writers * each {
			if _, err := io.ReadFull(cli, buf); err != nil {
				errs <- err
				return
			}
			if buf[0] != buf[1] || buf[0] != buf[2] || buf[0] != buf[3] || int(buf[0]) >= writers {
				errs <- errors.New("records interleaved: " + string(buf))
				return
			}
			counts[buf[0]]++
		}
		errs <- nil
	}()
	for range writers + 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for w, n := range counts {
		if n != each {
			t.Fatalf("writer %d: %d records arrived, want %d", w, n, each)
		}
	}
}
