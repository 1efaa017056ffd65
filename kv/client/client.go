// Package client is the kv client library (Bigtable paper, sections 5.1
// and 5.2): it finds tablets through the three-level location hierarchy,
// caches their locations, and sends row operations to the tablet servers.
//
// # Locating a row
//
//	lock service file ──► root tablet ──► METADATA tablet ──► user tablet
//	  (RootReader)          (never split)   (rows by table, end row)
//
// A cold lookup costs three round trips: the root file (kept until a
// failure says it is stale), a read of the root tablet for the METADATA
// tablet, and a read of that tablet, which also prefetches the rows of the
// next tablets of the same table. Locations are cached; a stale entry is
// found when its server answers "not serving" or cannot be reached, and
// the client then climbs one level at a time, so a stale lookup costs at
// most six round trips.
//
// # Retries
//
// Every operation runs under the caller's context in the one retry loop of
// the kv data path (Client.do): "not serving" and unreachable servers are
// retried with bounded exponential backoff, after dropping the stale
// location; every other error is returned at once.
package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/model"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// MetaTable is the name of the METADATA table at the tablet servers.
const MetaTable = "METADATA"

// RootReader reads the root tablet's location from the lock service.
type RootReader interface {
	// Root returns the address of the server of the root tablet.
	Root(ctx context.Context) (string, error)
}

// Options configure a client.
type Options struct {
	Root RootReader
	// Prefetch is how many METADATA rows a lookup reads (default 8).
	Prefetch int
	// MinBackoff and MaxBackoff bound the waits between retries (default
	// 5 ms and 1 s).
	MinBackoff, MaxBackoff time.Duration
	// DialOptions are added to the connections to tablet servers.
	DialOptions []grpc.DialOption
	// Local, if set, returns the tablet server at addr if it runs in
	// this process; its unary data methods are then called directly
	// (local.go).
	Local func(addr string) (pb.TabletServerServer, bool)
	// AttemptTimeout bounds one attempt (a lookup, or one RPC to a tablet
	// server) within the caller's deadline (default 10 s). A server that
	// is paused or cut off answers nothing; when the attempt times out the
	// client drops the location and looks the tablet up again, as it does
	// for "not serving".
	AttemptTimeout time.Duration
	// Secret is the cluster's shared secret, sent on every call with the
	// principal of the call's context (auth.go).
	Secret string
}

// Client is safe for concurrent use.
type Client struct {
	opts Options

	mu    sync.Mutex
	root  string                // cached root location; "" when unknown
	cache map[string][]location // by table, sorted by end (the last tablet last)
	conns map[string]*grpc.ClientConn
	stubs map[string]pb.TabletServerClient // by address, over conns
}

// location is a cached tablet location.
type location struct {
	start, end []byte
	addr       string
}

func (t location) contains(row []byte) bool {
	return bytes.Compare(row, t.start) >= 0 && (len(t.end) == 0 || bytes.Compare(row, t.end) < 0)
}

// New returns a client. It does no I/O.
func New(opts Options) *Client {
	if opts.Prefetch <= 0 {
		opts.Prefetch = 8
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 5 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = time.Second
	}
	if opts.AttemptTimeout <= 0 {
		opts.AttemptTimeout = 10 * time.Second
	}
	return &Client{opts: opts, cache: map[string][]location{}, conns: map[string]*grpc.ClientConn{}}
}

// Close closes the connections.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, cc := range c.conns {
		errs = append(errs, cc.Close())
	}
	c.conns = map[string]*grpc.ClientConn{}
	c.stubs = nil
	return errors.Join(errs...)
}

func (c *Client) stub(addr string) (pb.TabletServerClient, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stubs[addr]; ok {
		return st, nil
	}
	cc := c.conns[addr]
	if cc == nil {
		var err error
		opts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, AuthDialOptions(c.opts.Secret)...)
		opts = append(opts, c.opts.DialOptions...)
		if cc, err = grpc.NewClient("passthrough:///"+addr, opts...); err != nil {
			return nil, err
		}
		c.conns[addr] = cc
	}
	var st pb.TabletServerClient = pb.NewTabletServerClient(cc)
	if c.opts.Local != nil {
		if srv, ok := c.opts.Local(addr); ok {
			st = localStub{TabletServerClient: st, srv: srv, mark: localMark(c.opts.Secret)}
		}
	}
	if c.stubs == nil {
		c.stubs = map[string]pb.TabletServerClient{}
	}
	c.stubs[addr] = st
	return st, nil
}

// retryable tells whether err may go away once the location is looked up
// again: the server no longer serves the tablet, or cannot be reached.
func retryable(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Unavailable:
		return true
	case codes.FailedPrecondition:
		return strings.HasPrefix(st.Message(), "not serving")
	}
	return false
}

// refusedBeforeApply tells whether err proves that the request was not
// applied: the server refused it ("not serving"), or no connection could
// be made, so nothing was sent. A broken connection, an attempt's
// deadline or the server's "outcome unknown" prove nothing.
func refusedBeforeApply(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.FailedPrecondition:
		return strings.HasPrefix(st.Message(), "not serving")
	case codes.Unavailable:
		// gRPC's words for a connection that was never made.
		return strings.Contains(st.Message(), "Error while dialing")
	}
	return false
}

// do runs op against the server of row's tablet until it succeeds, fails
// for good, or ctx ends. It is the kv data path's one retry loop.
func (c *Client) do(ctx context.Context, table string, row []byte, op func(context.Context, pb.TabletServerClient, location) error) error {
	return c.retry(ctx, table, row, false, op)
}

// doOnce is do for a call that must not take effect twice (a
// CheckAndMutate, a ReadModifyWrite): after an error that may follow its
// application it returns the error instead of resending, since a resent
// call would find its own effect (a compare-and-swap that took effect
// would report a mismatch). The caller reports the outcome as unknown.
func (c *Client) doOnce(ctx context.Context, table string, row []byte, op func(context.Context, pb.TabletServerClient, location) error) error {
	return c.retry(ctx, table, row, true, op)
}

func (c *Client) retry(ctx context.Context, table string, row []byte, once bool, op func(context.Context, pb.TabletServerClient, location) error) error {
	if err := checkRequest(table, row); err != nil {
		return err
	}
	backoff := c.opts.MinBackoff
	for {
		loc, ok := c.cached(table, row)
		var err error
		if !ok {
			actx, cancel := context.WithTimeout(ctx, c.opts.AttemptTimeout)
			loc, err = c.locate(actx, table, row)
			cancel()
			err = c.attemptError(ctx, err)
		}
		if err == nil {
			var cli pb.TabletServerClient
			if cli, err = c.stub(loc.addr); err == nil {
				if _, local := cli.(localStub); local {
					// In-process: no network to wait on, so no
					// attempt deadline (the caller's still applies).
					err = op(ctx, cli, loc)
				} else {
					actx, cancel := context.WithTimeout(ctx, c.opts.AttemptTimeout)
					err = c.attemptError(ctx, op(actx, cli, loc))
					cancel()
				}
			}
			if err != nil && ctx.Err() != nil {
				// The caller's deadline ended before the server answered
				// (a caller's deadline shorter than AttemptTimeout never
				// reaches attemptError): the server may be paused or cut
				// off, its tablet already elsewhere. Without forgetting
				// it, every later call would wait on it again.
				c.forget(table, loc)
			}
			if err == nil || !retryable(err) {
				return err
			}
			c.forget(table, loc)
			if once && !refusedBeforeApply(err) {
				return err
			}
		} else if !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, c.opts.MaxBackoff)
	}
}

// attemptError turns the end of an attempt's own deadline, while the
// caller's goes on, into a retryable error.
func (c *Client) attemptError(ctx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && (status.Code(err) == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded)) {
		return status.Errorf(codes.Unavailable, "no answer within %v: %v", c.opts.AttemptTimeout, err)
	}
	return err
}

// checkRequest refuses, before any lookup, what no server would accept.
func checkRequest(table string, row []byte) error {
	switch {
	case table == "":
		return status.Error(codes.InvalidArgument, "no table name")
	case len(row) > model.MaxRowKeyLen:
		return status.Errorf(codes.InvalidArgument, "row key of %d bytes exceeds the limit of %d", len(row), model.MaxRowKeyLen)
	}
	return nil
}

// locate returns the tablet of row, from the cache or the hierarchy.
func (c *Client) locate(ctx context.Context, table string, row []byte) (location, error) {
	if t, ok := c.cached(table, row); ok {
		return t, nil
	}
	if table == MetaTable && bytes.Compare(row, model.MetaRootEnd) < 0 {
		addr, err := c.rootAddr(ctx)
		if err != nil {
			return location{}, err
		}
		return location{end: model.MetaRootEnd, addr: addr}, nil
	}
	// The METADATA row of row's tablet is in a METADATA tablet, found the
	// same way one level up (the root level ends the recursion above).
	key := model.MetaLookupKey(table, row)
	if table == MetaTable {
		key = model.MetaLookupKey("", row)
	}
	meta, err := c.locate(ctx, MetaTable, key)
	if err != nil {
		return location{}, err
	}
	found, err := c.readMeta(ctx, meta, key, table)
	if err != nil {
		if retryable(err) || ctx.Err() != nil {
			// Unreachable, or silent until the attempt's deadline: the
			// METADATA tablet may have moved.
			c.forget(MetaTable, meta)
		}
		return location{}, err
	}
	for _, t := range found {
		if t.contains(row) {
			return t, nil
		}
	}
	return location{}, status.Errorf(codes.NotFound, "table %q has no tablet for row %q", table, row)
}

// readMeta reads up to Prefetch METADATA rows from key on, caches the
// tablets of table they describe, and returns them.
func (c *Client) readMeta(ctx context.Context, meta location, key []byte, table string) ([]location, error) {
	cli, err := c.stub(meta.addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx) // ends the stream if we stop early
	defer cancel()
	stream, err := cli.Scan(ctx, &pb.ScanRequest{Table: MetaTable, Ranges: []*pb.RowRange{{Start: key, End: meta.end}},
		RowLimit: int64(c.opts.Prefetch)})
	if err != nil {
		return nil, err
	}
	described := table
	if table == MetaTable {
		described = "" // rows about METADATA's own tablets
	}
	var out []location
	for done := false; !done; {
		resp, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		for _, r := range resp.Rows {
			row := model.Row{Key: r.Key}
			for _, cell := range r.Cells {
				row.Cells = append(row.Cells, model.Cell{Family: cell.Family, Qualifier: cell.Qualifier, Timestamp: cell.Timestamp, Value: cell.Value})
			}
			d, err := model.ParseTabletDescriptor(row)
			if err != nil {
				return nil, status.Errorf(codes.DataLoss, "METADATA: %v", err)
			}
			if d.Table != described {
				done = true // the next table's rows
				break
			}
			if d.Addr == "" {
				return nil, status.Errorf(codes.Unavailable, "not serving: tablet [%q, %q) of %q is not assigned", d.Start, d.End, table)
			}
			out = append(out, location{start: d.Start, end: d.End, addr: d.Addr})
		}
	}
	if len(out) == 0 {
		return nil, status.Errorf(codes.NotFound, "table %q not found", table)
	}
	c.store(table, out)
	return out, nil
}

// rootAddr returns the root tablet's server, reading it if unknown.
func (c *Client) rootAddr(ctx context.Context) (string, error) {
	c.mu.Lock()
	addr := c.root
	c.mu.Unlock()
	if addr != "" {
		return addr, nil
	}
	addr, err := c.opts.Root.Root(ctx)
	if err != nil {
		return "", status.Errorf(codes.Unavailable, "read the root tablet's location: %v", err)
	}
	c.mu.Lock()
	c.root = addr
	c.mu.Unlock()
	return addr, nil
}

func (c *Client) cached(table string, row []byte) (location, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	list := c.cache[table]
	i := sort.Search(len(list), func(i int) bool {
		return len(list[i].end) == 0 || bytes.Compare(row, list[i].end) < 0
	})
	if i < len(list) && list[i].contains(row) {
		return list[i], true
	}
	return location{}, false
}

// cachedBefore returns the cached tablet that holds the rows just
// before end (nil: the table's last rows), if any.
func (c *Client) cachedBefore(table string, end []byte) (location, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	list := c.cache[table]
	i := len(list) - 1
	if end != nil {
		i = sort.Search(len(list), func(i int) bool {
			return len(list[i].end) == 0 || bytes.Compare(list[i].end, end) >= 0
		})
	}
	if i < 0 || i >= len(list) || (end == nil && len(list[i].end) > 0) || (end != nil && bytes.Compare(list[i].start, end) >= 0) {
		return location{}, false
	}
	return list[i], true
}

// store caches tablets, replacing the cached tablets they overlap.
func (c *Client) store(table string, found []location) {
	c.mu.Lock()
	defer c.mu.Unlock()
	overlaps := func(a, b location) bool {
		return (len(a.end) == 0 || bytes.Compare(b.start, a.end) < 0) && (len(b.end) == 0 || bytes.Compare(a.start, b.end) < 0)
	}
	var kept []location
	for _, old := range c.cache[table] {
		stale := false
		for _, t := range found {
			if overlaps(old, t) {
				stale = true
				break
			}
		}
		if !stale {
			kept = append(kept, old)
		}
	}
	kept = append(kept, found...)
	sort.Slice(kept, func(i, j int) bool {
		switch {
		case len(kept[i].end) == 0:
			return false
		case len(kept[j].end) == 0:
			return true
		}
		return bytes.Compare(kept[i].end, kept[j].end) < 0
	})
	c.cache[table] = kept
}

// ForgetTable drops every cached location of table: one that was deleted,
// or deleted and made again with other tablets, would otherwise be found
// stale only by the reads that go astray (and never by Tablets).
func (c *Client) ForgetTable(table string) {
	c.mu.Lock()
	delete(c.cache, table)
	c.mu.Unlock()
}

// forget drops a stale location; the root location goes with the root
// tablet's entry.
func (c *Client) forget(table string, t location) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if table == MetaTable && bytes.Equal(t.end, model.MetaRootEnd) {
		c.root = ""
	}
	list := c.cache[table]
	for i := range list {
		if bytes.Equal(list[i].start, t.start) && bytes.Equal(list[i].end, t.end) {
			c.cache[table] = append(list[:i:i], list[i+1:]...)
			return
		}
	}
}
