// Package client is the library programs use to talk to a cellar lock
// cell: sessions and KeepAlives, handles, locks, sequencers, events and a
// consistent cache, after section 2 of the Chubby paper.
//
// A Client is one session. Open finds the master, creates the session and
// starts the KeepAlive loop; Close ends the session. While the session's
// local lease is valid the session is safe. When the lease lapses without a
// KeepAlive answer, the session is in jeopardy: the cache is flushed, the
// library reports a Jeopardy event and calls wait. If a KeepAlive succeeds
// within the grace period the session is safe again (a Safe event);
// otherwise it has expired (a SessionExpired event) and every call fails.
// A KeepAlive the master holds past its expected answer is given up
// shortly before the lease lapses, so that a session whose master is
// paused or cut off can reach a new one while it is still safe.
//
// The cache keeps the contents and metadata of files. It is consistent: the
// master invalidates a client's copy before it changes the node, and the
// client drops its own copy before it changes a node itself.
//
// # Retries
//
// Every call retries in exactly one place, call: when the replica it
// reached is not the master, the master is unreachable, or the cell is
// electing a new master, it finds the master again and retries with
// capped exponential backoff until the call's context ends. Calls that
// change state carry a request id that stays the same across retries, so
// the cell applies each at most once.
package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/coord"
	pb "github.com/cellardb/cellar/coord/coordpb"
)

// Metadata keys; they match coord/cell.
const (
	principalKey = "cellar-principal"
	secretKey    = "cellar-secret"
	masterKey    = "cellar-master"
	ackBelowKey  = "cellar-ack-below"
)

// Options configure a client.
type Options struct {
	// Cell is the name of the client's own cell ("local" resolves to it).
	// If empty, Open learns it from the replicas at Addrs.
	Cell string
	// Addrs are the client addresses of the cell's replicas.
	Addrs []string
	// Principal is who the client acts for; ACLs name principals.
	Principal string
	// Secret is the cell's shared secret, if it has one.
	Secret string
	// Grace is how long the session survives in jeopardy.
	Grace time.Duration
	// OnEvent, if set, receives every event, one at a time, in order,
	// each once, also across master failovers (the cell replicates its
	// event queues).
	OnEvent func(Event)
	// Logger receives notable events of the library (nil: discarded).
	Logger *slog.Logger
	// Dialer, if set, makes the connections to replicas (for proxies and
	// for tests that cut a client off).
	Dialer func(ctx context.Context, addr string) (net.Conn, error)
	// CacheLocks keeps a lock after Release until another session asks for
	// it (or the handle closes), so that taking it again costs no call, as
	// Chubby's lock caching does. Others then wait one round trip longer.
	CacheLocks bool
	// MaxIdleHandles bounds the handles kept open at the cell after Close
	// for a later OpenNode of the same node to reuse (default 64; -1: none).
	MaxIdleHandles int
}

// Event is something the cell or the library reports.
type Event struct {
	Type coord.EventType
	// Name is the full name of the node the event is about, if any.
	Name string
	// Handle is the handle that subscribed, if any.
	Handle *Handle
}

type sessionState int

const (
	stateNone sessionState = iota
	stateSafe
	stateJeopardy
	stateExpired
	stateClosed
)

type cacheEntry struct {
	contents []byte
	stat     coord.Stat
	hasData  bool
}

// Client is a session with a cell.
type Client struct {
	opts Options

	connMu sync.Mutex
	conns  map[string]*grpc.ClientConn

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced when state changes
	state    sessionState
	master   string
	session  *pb.SessionRef
	epoch    uint64
	leaseEnd time.Time // local, conservative
	// safeUntil is leaseEnd while the state is safe and nil otherwise,
	// published under mu (publishSafe) so that Safe, which a fencing
	// server calls on every request, takes no lock.
	safeUntil   atomic.Pointer[time.Time]
	lease       time.Duration // the lease the master granted last
	jeopardyAt  time.Time
	ackedEvent  uint64
	ackedInval  uint64
	nextReq     uint64
	outstanding map[uint64]bool
	cache       map[string]*cacheEntry
	dirty       map[string]uint64 // path -> bumped on every invalidation or own write
	flushes     uint64            // bumped on every cache flush
	handles     map[uint64]*Handle
	idle        map[idleKey][]*pb.HandleRef // closed by the program, open at the cell
	idleByID    map[uint64]idleKey

	evMu    sync.Mutex
	evQueue []Event
	evWake  chan struct{}

	stop chan struct{}
	wg   sync.WaitGroup
}

// New returns a client. It does no I/O; Open starts the session.
func New(opts Options) *Client {
	if opts.Grace == 0 {
		opts.Grace = coord.DefaultGrace
	}
	if opts.Principal == "" {
		opts.Principal = "anonymous"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxIdleHandles == 0 {
		opts.MaxIdleHandles = 64
	}
	return &Client{opts: opts, conns: map[string]*grpc.ClientConn{}, changed: make(chan struct{}),
		outstanding: map[uint64]bool{}, cache: map[string]*cacheEntry{}, dirty: map[string]uint64{},
		handles: map[uint64]*Handle{}, idle: map[idleKey][]*pb.HandleRef{}, idleByID: map[uint64]idleKey{}, evWake: make(chan struct{}, 1), stop: make(chan struct{})}
}

// Open creates the session and starts keeping it alive.
func (c *Client) Open(ctx context.Context) error {
	if len(c.opts.Addrs) == 0 {
		return coord.Errorf(coord.InvalidArgument, "client options need at least one replica address")
	}
	if c.opts.Cell == "" {
		// Before any goroutine starts, so opts stays read-only after Open.
		cell, err := c.discoverCell(ctx)
		if err != nil {
			return err
		}
		c.opts.Cell = cell
	}
	var resp *pb.CreateSessionResponse
	start := time.Now()
	err := c.retry(ctx, func(ctx context.Context, cli pb.ChubbyClient, o grpc.CallOption) error {
		var err error
		resp, err = cli.CreateSession(ctx, &pb.CreateSessionRequest{}, o)
		return err
	})
	if err != nil {
		return fmt.Errorf("create session in cell %s: %w", c.opts.Cell, err)
	}
	c.mu.Lock()
	c.session, c.epoch, c.state = resp.Session, resp.Epoch, stateSafe
	c.lease = time.Duration(resp.LeaseMs) * time.Millisecond
	c.leaseEnd = start.Add(conservative(c.lease))
	c.publishSafe()
	c.mu.Unlock()
	c.wg.Add(2)
	go c.keepAliveLoop()
	go c.dispatch()
	return nil
}

// conservative shortens a lease for clock drift between the master and
// the client.
func conservative(d time.Duration) time.Duration { return d - d/20 }

// SessionID returns the session's id (0 before Open).
func (c *Client) SessionID() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session == nil {
		return 0
	}
	return c.session.Id
}

// LeaseEnd returns the end of the session's local lease: while the
// session is safe, the lease is valid until then. A server that fences
// itself by a lock says from when it stopped serving with it.
func (c *Client) LeaseEnd() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leaseEnd
}

// Safe reports whether the session is safe: its local lease is valid.
func (c *Client) Safe() bool {
	end := c.safeUntil.Load()
	return end != nil && time.Now().Before(*end)
}

// publishSafe publishes the state and lease for Safe. c.mu must be held.
func (c *Client) publishSafe() {
	if c.state != stateSafe {
		c.safeUntil.Store(nil)
		return
	}
	end := c.leaseEnd
	c.safeUntil.Store(&end)
}

// Close ends the session: its locks are released at once (no lock-delay),
// its handles closed and its ephemeral nodes deleted.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.state == stateClosed {
		c.mu.Unlock()
		return nil
	}
	sess, live := c.session, c.state == stateSafe || c.state == stateJeopardy
	c.setState(stateClosed)
	c.mu.Unlock()
	close(c.stop)
	var err error
	if live {
		err = c.retry(ctx, func(ctx context.Context, cli pb.ChubbyClient, o grpc.CallOption) error {
			_, err := cli.CloseSession(ctx, &pb.CloseSessionRequest{Session: sess}, o)
			return err
		})
	}
	c.wg.Wait()
	c.connMu.Lock()
	for _, cc := range c.conns {
		cc.Close()
	}
	c.conns = map[string]*grpc.ClientConn{}
	c.connMu.Unlock()
	return err
}

// setState changes the session state. c.mu must be held.
func (c *Client) setState(s sessionState) {
	c.state = s
	c.publishSafe()
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *Client) conn(addr string) (pb.ChubbyClient, error) {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	cc := c.conns[addr]
	if cc == nil {
		var err error
		opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
		if c.opts.Dialer != nil {
			opts = append(opts, grpc.WithContextDialer(c.opts.Dialer))
		}
		cc, err = grpc.NewClient("passthrough:///"+addr, opts...)
		if err != nil {
			return nil, err
		}
		c.conns[addr] = cc
	}
	return pb.NewChubbyClient(cc), nil
}

// keepOnly closes the connections to replicas other than the master's, so
// that a cell with many clients does not hold idle connections on every
// replica; they are dialled again if the master moves.
func (c *Client) keepOnly(addr string) {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	if len(c.conns) <= 1 {
		return
	}
	for a, cc := range c.conns {
		if a != addr {
			cc.Close()
			delete(c.conns, a)
		}
	}
}

func (c *Client) outgoing(ctx context.Context) context.Context {
	c.mu.Lock()
	ack := c.ackBelow()
	c.mu.Unlock()
	md := []string{principalKey, c.opts.Principal, ackBelowKey, strconv.FormatUint(ack, 10)}
	if c.opts.Secret != "" {
		md = append(md, secretKey, c.opts.Secret)
	}
	return metadata.AppendToOutgoingContext(ctx, md...)
}

// discoverCell asks the replicas which cell they serve, under the one retry
// loop of the library.
func (c *Client) discoverCell(ctx context.Context) (string, error) {
	var cell string
	err := c.retry(ctx, func(ctx context.Context, cli pb.ChubbyClient, o grpc.CallOption) error {
		resp, err := cli.FindMaster(ctx, &pb.FindMasterRequest{}, o)
		if err == nil {
			cell = resp.Cell
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("find the cell served at %s: %w", strings.Join(c.opts.Addrs, ","), err)
	}
	if cell == "" {
		return "", coord.Errorf(coord.Unavailable, "the replicas at %s did not name their cell", strings.Join(c.opts.Addrs, ","))
	}
	return cell, nil
}

// findMaster asks the replicas who the master is, all at once: one of
// them may be paused or cut off, and asking in turn would wait a second
// on it while the session's lease runs out.
func (c *Client) findMaster(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	// The calls still out end at once when ctx does (even one to a hung
	// replica); none outlives this call, as Open sets opts.Cell later.
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	type answer struct {
		master string
		err    error
	}
	answers := make(chan answer, len(c.opts.Addrs))
	for _, addr := range c.opts.Addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cli, err := c.conn(addr)
			if err != nil {
				answers <- answer{err: err}
				return
			}
			resp, err := cli.FindMaster(c.outgoing(ctx), &pb.FindMasterRequest{})
			switch {
			case err != nil:
				answers <- answer{err: err}
			case resp.Cell != "" && c.opts.Cell != "" && resp.Cell != c.opts.Cell:
				answers <- answer{err: coord.Errorf(coord.InvalidArgument, "replica %s serves cell %q, not %q", addr, resp.Cell, c.opts.Cell)}
			case resp.Master == "":
				answers <- answer{err: coord.Errorf(coord.Unavailable, "cell %s is electing a master", c.opts.Cell)}
			default:
				answers <- answer{master: resp.Master}
			}
		}()
	}
	var last error
	for range c.opts.Addrs {
		a := <-answers
		if a.err == nil {
			return a.master, nil
		}
		var ce *coord.Error
		if errors.As(a.err, &ce) && ce.Kind == coord.InvalidArgument {
			return "", a.err
		}
		last = a.err
	}
	if last == nil {
		last = coord.Errorf(coord.Unavailable, "no replica of cell %s answered", c.opts.Cell)
	}
	return "", last
}

// asError turns a gRPC error into a *coord.Error (or a context error).
func asError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return coord.Errorf(coord.Unavailable, "%v", err)
	}
	switch st.Code() {
	case codes.Canceled:
		// Either the caller's context ended, which the retry loop notices
		// itself, or the connection was closed under the call (keepOnly
		// after the master moved): worth another try either way.
		return coord.Errorf(coord.Unavailable, "call canceled: %s", st.Message())
	case codes.DeadlineExceeded:
		return context.DeadlineExceeded
	}
	return coord.FromStatus(int(st.Code()), st.Message())
}

// retry runs fn against the master until it succeeds with anything but a
// retryable error, or ctx ends. It is the library's one retry loop.
func (c *Client) retry(ctx context.Context, fn func(context.Context, pb.ChubbyClient, grpc.CallOption) error) error {
	backoff := 10 * time.Millisecond
	for {
		c.mu.Lock()
		addr := c.master
		c.mu.Unlock()
		var err error
		if addr == "" {
			addr, err = c.findMaster(ctx)
		}
		if err == nil {
			var cli pb.ChubbyClient
			if cli, err = c.conn(addr); err == nil {
				// The trailer names the master when a replica turns the call away.
				var trailer metadata.MD
				err = asError(fn(c.outgoing(ctx), cli, grpc.Trailer(&trailer)))
				var ce *coord.Error
				if errors.As(err, &ce) && ce.Kind == coord.NotMaster {
					if m := trailer.Get(masterKey); len(m) > 0 {
						addr = m[0]
					} else {
						addr = ""
					}
					c.mu.Lock()
					c.master = addr
					c.mu.Unlock()
				} else if err == nil || !retryable(err) {
					if err == nil {
						c.mu.Lock()
						c.master = addr
						c.mu.Unlock()
						c.keepOnly(addr)
					}
					return err
				} else {
					c.mu.Lock()
					c.master = ""
					c.mu.Unlock()
				}
			}
		}
		if !retryable(asError(err)) {
			return asError(err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

func retryable(err error) bool {
	var ce *coord.Error
	return errors.As(err, &ce) && ce.Kind.Retryable()
}

// call runs a session call: it waits while the session is in jeopardy,
// fails once it has expired, and retries through retry.
func (c *Client) call(ctx context.Context, fn func(context.Context, pb.ChubbyClient, *pb.SessionRef, grpc.CallOption) error) error {
	for {
		c.mu.Lock()
		st, sess, ch := c.state, c.session, c.changed
		c.mu.Unlock()
		switch st {
		case stateNone:
			return coord.Errorf(coord.InvalidArgument, "the client is not open")
		case stateExpired:
			return coord.Errorf(coord.SessionExpired, "session %d expired", sess.Id)
		case stateClosed:
			return coord.Errorf(coord.SessionExpired, "the client is closed")
		case stateJeopardy:
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		err := c.retry(ctx, func(ctx context.Context, cli pb.ChubbyClient, o grpc.CallOption) error { return fn(ctx, cli, sess, o) })
		if errors.Is(err, coord.ErrSessionExpired) {
			c.expire()
		}
		return err
	}
}

// newRequest returns a request id for a call that changes state, and the
// function that marks it answered.
func (c *Client) newRequest() (uint64, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextReq++
	id := c.nextReq
	c.outstanding[id] = true
	return id, func() {
		c.mu.Lock()
		delete(c.outstanding, id)
		c.mu.Unlock()
	}
}

// ackBelow is the lowest request id still in flight. c.mu must be held.
func (c *Client) ackBelow() uint64 {
	low := c.nextReq + 1
	for id := range c.outstanding {
		low = min(low, id)
	}
	return low
}

// resolve turns a name into a path in this client's cell.
func (c *Client) resolve(name string) (coord.Name, error) {
	n, err := coord.ParseName(name)
	if err != nil {
		return coord.Name{}, err
	}
	if n.Cell == coord.LocalCell {
		n.Cell = c.opts.Cell
	}
	if n.Cell != c.opts.Cell {
		return coord.Name{}, coord.Errorf(coord.InvalidArgument, "%s is in cell %q; this client talks to cell %q", name, n.Cell, c.opts.Cell)
	}
	return n, nil
}
