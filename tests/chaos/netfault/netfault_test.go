package netfault

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// echoServer greets each connection with "hi\n" and then echoes lines.
type echoServer struct {
	ln       net.Listener
	wg       sync.WaitGroup
	mu       sync.Mutex
	accepted int
	conns    []net.Conn
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.accepted++
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				io.WriteString(c, "hi\n")
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := io.WriteString(c, line); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *echoServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

func startProxy(t *testing.T, opts Options) *Proxy {
	t.Helper()
	p, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return p
}

// client is a connection through the proxy with a line reader.
type client struct {
	net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{c, bufio.NewReader(c)}
}

// line reads one line, waiting at most wait; "" with an error if none.
func (c *client) line(wait time.Duration) (string, error) {
	c.SetReadDeadline(time.Now().Add(wait))
	return c.r.ReadString('\n')
}

func (c *client) must(t *testing.T, want string) {
	t.Helper()
	got, err := c.line(20 * time.Second)
	if err != nil || got != want+"\n" {
		t.Fatalf("read %q, %v; want %q", got, err, want)
	}
}

// quiet checks that nothing arrives for a while: bytes held by a fault
// must not leak through. It asserts an absence, not a duration.
func (c *client) quiet(t *testing.T) {
	t.Helper()
	if got, err := c.line(300 * time.Millisecond); err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %q, %v through a blackhole", got, err)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPass(t *testing.T) {
	echo := startEcho(t)
	p := startProxy(t, Options{Target: echo.ln.Addr().String()})
	c := dial(t, p.Addr())
	c.must(t, "hi")
	for _, s := range []string{"a", "b", strings.Repeat("x", 100000)} {
		io.WriteString(c, s+"\n")
		c.must(t, s)
	}
	if n := p.Accepted(""); n != 1 {
		t.Fatalf("accepted %d connections", n)
	}
}

// A delayed link still delivers everything in order, and a change of the
// rule applies to bytes already held: back to Pass, they go at once.
func TestDelay(t *testing.T) {
	echo := startEcho(t)
	p := startProxy(t, Options{Target: echo.ln.Addr().String()})
	c := dial(t, p.Addr())
	c.must(t, "hi")
	p.Set(Latency(5 * time.Millisecond))
	for _, s := range []string{"1", "2", "3", "4"} {
		io.WriteString(c, s+"\n")
	}
	for _, s := range []string{"1", "2", "3", "4"} {
		c.must(t, s)
	}
	p.Set(Latency(time.Hour))
	io.WriteString(c, "late\n")
	c.quiet(t)
	p.Set(Heal)
	c.must(t, "late")
}

// A blackhole holds bytes both ways and keeps new connections from the
// target; healed, the held bytes arrive in order and the new connection
// is forwarded.
func TestBlackhole(t *testing.T) {
	echo := startEcho(t)
	p := startProxy(t, Options{Target: echo.ln.Addr().String()})
	c := dial(t, p.Addr())
	c.must(t, "hi")
	p.Set(Partition)
	io.WriteString(c, "held 1\n")
	io.WriteString(c, "held 2\n")
	c.quiet(t)
	fresh := dial(t, p.Addr())
	eventually(t, "the proxy to accept", func() bool { return p.Accepted("") == 2 })
	fresh.quiet(t)
	if n := echo.count(); n != 1 {
		t.Fatalf("the target got %d connections through a blackhole", n)
	}
	p.Set(Heal)
	c.must(t, "held 1")
	c.must(t, "held 2")
	fresh.must(t, "hi")
}

// One-way: with Up blackholed the target's greeting still arrives but
// nothing the client sends does; with Down blackholed the target gets the
// client's bytes (its echo is held).
func TestOneWay(t *testing.T) {
	echo := startEcho(t)
	p := startProxy(t, Options{Target: echo.ln.Addr().String()})
	c := dial(t, p.Addr())
	c.must(t, "hi")
	p.Set(OneWay(false))
	io.WriteString(c, "up\n")
	c.quiet(t)
	p.Set(OneWay(true))
	// The held "up" reaches the target now; its echo is held on the way
	// down.
	c.quiet(t)
	p.Set(Heal)
	c.must(t, "up")

	// A new connection under a down-only blackhole reaches the target.
	p.Set(OneWay(true))
	before := echo.count()
	fresh := dial(t, p.Addr())
	eventually(t, "the target to get the connection", func() bool { return echo.count() == before+1 })
	fresh.quiet(t)
	p.Set(Heal)
	fresh.must(t, "hi")
}

// Reset closes open connections and refuses new ones until healed.
func TestReset(t *testing.T) {
	echo := startEcho(t)
	p := startProxy(t, Options{Target: echo.ln.Addr().String()})
	c := dial(t, p.Addr())
	c.must(t, "hi")
	p.Set(Reset)
	if _, err := c.line(20 * time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("an open connection survived a reset: %v", err)
	}
	// The reset may even reach the dialer before its connect returns.
	if nc, err := net.Dial("tcp", p.Addr()); err == nil {
		refused := &client{nc, bufio.NewReader(nc)}
		defer nc.Close()
		if _, err := refused.line(20 * time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a new connection was not refused: %v", err)
		}
	}
	p.Set(Heal)
	dial(t, p.Addr()).must(t, "hi")
}

// Rules per source: the named source is cut off, others pass.
func TestPerSource(t *testing.T) {
	echo := startEcho(t)
	procs := NewProcesses()
	procs.Set("me", os.Getpid())
	named := startProxy(t, Options{Target: echo.ln.Addr().String(), Source: procs.Source})
	unnamed := startProxy(t, Options{Target: echo.ln.Addr().String(), Source: NewProcesses().Source})
	named.SetFor("me", Partition)
	unnamed.SetFor("me", Partition)
	c := dial(t, named.Addr())
	c.quiet(t)
	eventually(t, "the connection to be counted", func() bool { return named.Accepted("me") == 1 })
	// The other proxy knows no process: this one is "" there and passes.
	dial(t, unnamed.Addr()).must(t, "hi")
	named.HealAll()
	c.must(t, "hi")

	// A connection made before its process was named is named when a
	// rule changes.
	late := NewProcesses()
	p := startProxy(t, Options{Target: echo.ln.Addr().String(), Source: late.Source})
	early := dial(t, p.Addr())
	early.must(t, "hi")
	late.Set("me", os.Getpid())
	p.SetFor("me", Partition)
	io.WriteString(early, "held\n")
	early.quiet(t)
	p.HealAll()
	early.must(t, "held")
}

// Processes names this test's own connections by pid.
func TestProcessesLookup(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	procs := NewProcesses()
	if name := procs.Source(s); name != "" {
		t.Fatalf("an unnamed process is %q", name)
	}
	procs.Set("me", os.Getpid())
	if name, err := procs.Lookup(s.RemoteAddr(), s.LocalAddr()); name != "me" || err != nil {
		t.Fatalf("lookup: %q, %v", name, err)
	}
	procs.Remove(os.Getpid())
	if name := procs.Source(s); name != "" {
		t.Fatalf("a removed process is %q", name)
	}
}

// Close ends every goroutine, also with connections held in a blackhole,
// and a closed proxy refuses connections.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	echo := startEcho(t)
	base := runtime.NumGoroutine()
	p, err := Start(context.Background(), Options{Target: echo.ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	a := dial(t, p.Addr())
	a.must(t, "hi")
	p.Set(Partition)
	b := dial(t, p.Addr())
	io.WriteString(a, "held\n")
	io.WriteString(b, "held\n")
	p.Set(Latency(time.Hour))
	eventually(t, "both connections", func() bool { return p.Accepted("") == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.line(20 * time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection outlived Close: %v", err)
	}
	if c, err := net.Dial("tcp", p.Addr()); err == nil {
		c.Close()
		t.Fatal("a closed proxy accepted a connection")
	}
	a.Close()
	b.Close()
	// The echo server's own goroutines end when its connections close.
	eventually(t, "the goroutines to end", func() bool { return runtime.NumGoroutine() <= base })
}

func TestStartNeedsTarget(t *testing.T) {
	if _, err := Start(context.Background(), Options{}); err == nil {
		t.Fatal("a proxy without a target started")
	}
}

func TestFaultString(t *testing.T) {
	for f, want := range map[Fault]string{Heal: "pass", Partition: "blackhole", Reset: "reset",
		Latency(time.Second): "delay 1s", OneWay(false): "up blackhole, down pass"} {
		if got := f.String(); got != want {
			t.Errorf("%#v: %q, want %q", f, got, want)
		}
	}
}
