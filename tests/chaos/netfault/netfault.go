// Package netfault is a fault-injecting TCP proxy for cellar's chaos
// tests, where tc netem is not available.
//
// A Proxy listens on a loopback port and forwards every connection it
// accepts to one destination. A process reaches another through the proxy
// by being given the proxy's address instead of the destination's: a
// tablet server's -advertise address, a replica's client address in
// -peers, or a replica's Raft address (see cellar chubby -raft-listen).
// So there is one proxy per destination, and a fault between two chosen
// processes is a rule for one source on the destination's proxy: Source
// names the process that opened a connection (Processes does so on
// Linux loopback by finding which process holds the other end), and
// SetFor gives that source its own Fault.
//
// A Fault says, per direction, what happens to the bytes:
//
//   - Pass forwards them.
//   - Delay forwards each chunk a fixed time after the proxy read it; the
//     reading goes on meanwhile, so a delay adds latency without limiting
//     throughput, and the order is kept.
//   - Blackhole holds them: the proxy stops forwarding, then stops reading
//     once a few chunks are queued, so the sender stalls as it would
//     behind a link that drops every packet. Held bytes go on, in order,
//     when the rule changes back, as TCP's retransmissions would deliver
//     them after a partition heals. A new connection whose upstream
//     direction is blackholed is accepted but not forwarded until then.
//
// and, for the connection as a whole, Reset closes the source's
// connections with a TCP reset and refuses new ones. A one-way blackhole
// is a Fault with one direction blackholed and the other passing.
//
// Rules change at run time and apply at once, to connections already open
// as well as new ones. Close stops the proxy and waits, under its context,
// until every goroutine it started has returned.
package netfault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Mode is what happens to bytes flowing one way through a proxy.
type Mode int

const (
	// Pass forwards bytes as they come.
	Pass Mode = iota
	// Delay forwards each chunk Way.Delay after it was read.
	Delay
	// Blackhole holds bytes until the rule changes.
	Blackhole
)

func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Delay:
		return "delay"
	case Blackhole:
		return "blackhole"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// Way is the rule for one direction of a connection.
type Way struct {
	Mode  Mode
	Delay time.Duration // with Mode Delay
}

// Fault is what a proxy does to a source's connections.
type Fault struct {
	// Up is the direction from the connecting process to the destination;
	// Down is the way back.
	Up, Down Way
	// Reset closes the connections at once with a TCP reset and refuses
	// new ones.
	Reset bool
}

// Heal is the fault that is none: both directions pass.
var Heal = Fault{}

// Partition blackholes both directions.
var Partition = Fault{Up: Way{Mode: Blackhole}, Down: Way{Mode: Blackhole}}

// Reset resets the connections and refuses new ones.
var Reset = Fault{Reset: true}

// Latency delays both directions by d.
func Latency(d time.Duration) Fault {
	return Fault{Up: Way{Mode: Delay, Delay: d}, Down: Way{Mode: Delay, Delay: d}}
}

// OneWay blackholes the Up direction (the connecting process's bytes
// never arrive) while the Down direction passes, or the reverse if down
// is true.
func OneWay(down bool) Fault {
	if down {
		return Fault{Down: Way{Mode: Blackhole}}
	}
	return Fault{Up: Way{Mode: Blackhole}}
}

func (f Fault) String() string {
	if f.Reset {
		return "reset"
	}
	way := func(w Way) string {
		if w.Mode == Delay {
			return fmt.Sprintf("delay %v", w.Delay)
		}
		return w.Mode.String()
	}
	if f.Up == f.Down {
		return way(f.Up)
	}
	return fmt.Sprintf("up %s, down %s", way(f.Up), way(f.Down))
}

// Options configure a proxy.
type Options struct {
	// Listen is the address to listen on (default "127.0.0.1:0").
	Listen string
	// Target is the destination every connection is forwarded to.
	Target string
	// Source names the process that opened a connection, for rules set
	// with SetFor; nil or "" means the connection gets the default rule.
	Source func(net.Conn) string
	// DialTimeout bounds the dial of the destination (default 5s).
	DialTimeout time.Duration
	// ChunkSize is the most bytes read at once (default 32 KiB).
	ChunkSize int
	// QueueChunks is how many chunks a direction holds before the proxy
	// stops reading from its sender (default 64).
	QueueChunks int
}

func (o Options) withDefaults() Options {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = 32 << 10
	}
	if o.QueueChunks <= 0 {
		o.QueueChunks = 64
	}
	return o
}

// Proxy forwards TCP connections to one destination, with faults.
type Proxy struct {
	opts Options
	ln   net.Listener
	base context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu       sync.Mutex
	def      Fault
	bySource map[string]Fault
	changed  chan struct{} // closed and replaced whenever a rule changes
	conns    map[*conn]struct{}
	accepted map[string]int
}

// Start listens and starts forwarding. ctx bounds only the start.
func Start(ctx context.Context, opts Options) (*Proxy, error) {
	opts = opts.withDefaults()
	if opts.Target == "" {
		return nil, errors.New("netfault: no target")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("netfault: listen for %s: %w", opts.Target, err)
	}
	base, stop := context.WithCancel(context.Background())
	p := &Proxy{opts: opts, ln: ln, base: base, stop: stop, bySource: map[string]Fault{},
		changed: make(chan struct{}), conns: map[*conn]struct{}{}, accepted: map[string]int{}}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the address processes dial instead of the target's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the destination's address.
func (p *Proxy) Target() string { return p.opts.Target }

// Set makes f the rule of every source without a rule of its own.
func (p *Proxy) Set(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.def = f
	p.changedLocked()
}

// SetFor makes f the rule of one source's connections.
func (p *Proxy) SetFor(source string, f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bySource[source] = f
	p.changedLocked()
}

// HealAll drops every rule: all traffic passes again.
func (p *Proxy) HealAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.def = Heal
	clear(p.bySource)
	p.changedLocked()
}

// Accepted returns how many connections the proxy accepted from source
// (all sources with "*").
func (p *Proxy) Accepted(source string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if source == "*" {
		n := 0
		for _, v := range p.accepted {
			n += v
		}
		return n
	}
	return p.accepted[source]
}

// Open returns how many connections are open now, by source.
func (p *Proxy) Open() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nameLocked()
	out := map[string]int{}
	for c := range p.conns {
		out[c.source]++
	}
	return out
}

// nameLocked names again the connections whose source had no name when
// they were accepted: a process may connect before the test has learnt
// its pid. p.mu must be held.
func (p *Proxy) nameLocked() {
	if p.opts.Source == nil {
		return
	}
	for c := range p.conns {
		if c.source == "" {
			c.source = p.opts.Source(c.client)
		}
	}
}

// changedLocked wakes every goroutine waiting on a rule and resets the
// connections whose rule is now Reset, once every connection has its
// name. p.mu must be held.
func (p *Proxy) changedLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
	p.nameLocked()
	for c := range p.conns {
		if p.ruleLocked(c.source).Reset {
			c.abort()
		}
	}
}

func (p *Proxy) ruleLocked(source string) Fault {
	if f, ok := p.bySource[source]; ok {
		return f
	}
	return p.def
}

// rule returns a connection's rule and a channel closed when rules
// change.
func (p *Proxy) rule(c *conn) (Fault, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ruleLocked(c.source), p.changed
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines until ctx ends.
func (p *Proxy) Close(ctx context.Context) error {
	p.stop()
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.abort()
	}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("netfault: close proxy for %s: %w", p.opts.Target, ctx.Err())
	}
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		nc, err := p.ln.Accept()
		if err != nil {
			if p.base.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient accept error (too many files): back off a little.
			select {
			case <-p.base.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		p.wg.Add(1)
		go p.handle(nc)
	}
}

// conn is one forwarded connection.
type conn struct {
	source string // guarded by Proxy.mu once the connection is listed
	ctx    context.Context
	cancel context.CancelFunc
	client net.Conn

	mu       sync.Mutex
	target   net.Conn
	finished int // directions that ended cleanly
}

// abort tears the connection down with a reset on both sides.
func (c *conn) abort() {
	c.cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	resetClose(c.client)
	if c.target != nil {
		resetClose(c.target)
	}
}

// resetClose closes a connection with a TCP reset instead of a FIN, as a
// network that resets it would.
func resetClose(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	nc.Close()
}

// finish records that one direction ended cleanly; after both, the
// connection closes.
func (c *conn) finish() {
	c.mu.Lock()
	c.finished++
	both := c.finished == 2
	c.mu.Unlock()
	if both {
		c.cancel()
		c.client.Close()
		c.target.Close()
	}
}

type chunk struct {
	data []byte
	at   time.Time
	eof  bool
}

func (p *Proxy) handle(nc net.Conn) {
	defer p.wg.Done()
	source := ""
	if p.opts.Source != nil {
		source = p.opts.Source(nc)
	}
	ctx, cancel := context.WithCancel(p.base)
	c := &conn{source: source, ctx: ctx, cancel: cancel, client: nc}
	p.mu.Lock()
	if p.base.Err() != nil || p.ruleLocked(source).Reset {
		p.mu.Unlock()
		cancel()
		resetClose(nc)
		return
	}
	p.conns[c] = struct{}{}
	p.accepted[source]++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		c.abort()
	}()

	up := make(chan chunk, p.opts.QueueChunks)
	p.wg.Add(1)
	go func() { defer p.wg.Done(); p.read(c, nc, up) }()

	// The destination is dialled only once the upstream direction may
	// carry bytes: a blackholed connection never reaches it.
	if !p.waitOpen(c, func(f Fault) bool { return f.Up.Mode != Blackhole }) {
		return
	}
	dctx, dcancel := context.WithTimeout(ctx, p.opts.DialTimeout)
	var d net.Dialer
	tc, err := d.DialContext(dctx, "tcp", p.opts.Target)
	dcancel()
	if err != nil {
		return
	}
	c.mu.Lock()
	c.target = tc
	aborted := ctx.Err() != nil
	c.mu.Unlock()
	if aborted {
		resetClose(tc)
		return
	}
	down := make(chan chunk, p.opts.QueueChunks)
	var wg sync.WaitGroup
	wg.Add(3)
	p.wg.Add(3)
	go func() { defer p.wg.Done(); defer wg.Done(); p.read(c, tc, down) }()
	go func() { defer p.wg.Done(); defer wg.Done(); p.write(c, tc, up, func(f Fault) Way { return f.Up }) }()
	go func() { defer p.wg.Done(); defer wg.Done(); p.write(c, nc, down, func(f Fault) Way { return f.Down }) }()
	wg.Wait()
}

// waitOpen waits until open(rule) holds; false if the connection ended.
func (p *Proxy) waitOpen(c *conn, open func(Fault) bool) bool {
	for {
		f, changed := p.rule(c)
		if f.Reset {
			c.abort()
			return false
		}
		if open(f) {
			return true
		}
		select {
		case <-changed:
		case <-c.ctx.Done():
			return false
		}
	}
}

// read moves chunks from src into q until src ends.
func (p *Proxy) read(c *conn, src net.Conn, q chan<- chunk) {
	for {
		buf := make([]byte, p.opts.ChunkSize)
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case q <- chunk{data: buf[:n], at: time.Now()}:
			case <-c.ctx.Done():
				return
			}
		}
		if err != nil {
			// A clean end is passed on as a half-close; anything else
			// (a reset, the proxy closing) ends the connection.
			if errors.Is(err, io.EOF) {
				select {
				case q <- chunk{eof: true}:
				case <-c.ctx.Done():
				}
				return
			}
			c.abort()
			return
		}
	}
}

// write moves chunks from q to dst under the rule way picks.
func (p *Proxy) write(c *conn, dst net.Conn, q <-chan chunk, way func(Fault) Way) {
	for {
		var ch chunk
		select {
		case ch = <-q:
		case <-c.ctx.Done():
			return
		}
		if !p.hold(c, ch, way) {
			return
		}
		if ch.eof {
			if tc, ok := dst.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			c.finish()
			return
		}
		if _, err := dst.Write(ch.data); err != nil {
			c.abort()
			return
		}
	}
}

// hold waits until the rule lets ch go on: not blackholed, and past its
// delay. The rule is read again whenever it changes. False if the
// connection ended.
func (p *Proxy) hold(c *conn, ch chunk, way func(Fault) Way) bool {
	for {
		f, changed := p.rule(c)
		if f.Reset {
			c.abort()
			return false
		}
		w := way(f)
		switch w.Mode {
		case Pass:
			return true
		case Delay:
			d := time.Until(ch.at.Add(w.Delay))
			if d <= 0 {
				return true
			}
			t := time.NewTimer(d)
			select {
			case <-t.C:
				return true
			case <-changed:
				t.Stop()
			case <-c.ctx.Done():
				t.Stop()
				return false
			}
		default: // Blackhole
			select {
			case <-changed:
			case <-c.ctx.Done():
				return false
			}
		}
	}
}
