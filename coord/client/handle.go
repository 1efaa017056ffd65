package client

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/cellardb/cellar/coord"
	pb "github.com/cellardb/cellar/coord/coordpb"
)

// OpenOptions are the options of OpenNode.
type OpenOptions struct {
	// Mode says what the handle may do; the cell checks the node's ACLs
	// for it once, here.
	Mode coord.Mode
	// Events selects the events the handle delivers.
	Events coord.EventMask
	// LockDelay keeps the node's lock from others this long after this
	// handle's holder fails (at most a minute).
	LockDelay time.Duration
	// Create makes the node if it is missing; MustCreate fails if it exists.
	Create, MustCreate bool
	// Directory, Ephemeral, Contents and ACL describe a node to create.
	// Empty ACL names inherit the parent's.
	Directory bool
	Ephemeral bool
	Contents  []byte
	ACL       coord.ACL
}

// Handle is an open node, like a file descriptor. It belongs to one
// instance of the node: once that node is deleted, the handle fails, even
// if a node of the same name is created again.
type Handle struct {
	c        *Client
	ref      *pb.HandleRef
	name     string
	path     string
	key      idleKey
	mask     coord.EventMask // what the program subscribed to
	reusable bool            // may stay open at the cell after Close
	poisoned atomic.Bool
	invalid  atomic.Bool
	closed   atomic.Bool

	mu sync.Mutex
	// seq is the sequencer of the lock the program holds, if any. It
	// is written under mu and read without it by LockHeld, which a
	// fencing server calls on every request.
	seq       atomic.Pointer[coord.Sequencer]
	cachedSeq *coord.Sequencer // of a lock released by the program but kept (CacheLocks)
	contended bool             // another session asked for the lock since it was acquired
}

// idleKey says which Opens may reuse an idle handle: same node, same
// mode, same events, same lock-delay.
type idleKey struct {
	path      string
	mode      coord.Mode
	mask      coord.EventMask
	lockDelay time.Duration
}

// libraryEvents are subscribed on every handle for the library's own use:
// it drops cached handles whose node is gone and gives up cached locks
// that another session wants.
var libraryEvents = coord.Mask(coord.EventHandleInvalid, coord.EventConflictingLock)

// OpenNode opens (and perhaps creates) a node, Chubby's Open. It reports
// whether it created the node.
func (c *Client) OpenNode(ctx context.Context, name string, opts OpenOptions) (*Handle, bool, error) {
	n, err := c.resolve(name)
	if err != nil {
		return nil, false, err
	}
	if opts.LockDelay < 0 || opts.LockDelay > coord.MaxLockDelay {
		return nil, false, coord.Errorf(coord.InvalidArgument, "lock-delay %v is outside [0, %v]", opts.LockDelay, coord.MaxLockDelay)
	}
	key := idleKey{path: n.Path, mode: opts.Mode, mask: opts.Events, lockDelay: opts.LockDelay}
	if !opts.Create {
		if h := c.reuseIdle(n, key); h != nil {
			return h, false, nil
		}
	}
	id, done := c.newRequest()
	defer done()
	req := &pb.OpenRequest{RequestId: id, Path: n.Path, Mode: uint32(opts.Mode), EventMask: uint32(opts.Events | libraryEvents),
		LockDelayMs: opts.LockDelay.Milliseconds(), Create: &pb.CreateOptions{Create: opts.Create, MustCreate: opts.MustCreate,
			Directory: opts.Directory, Ephemeral: opts.Ephemeral, Contents: opts.Contents, Acl: pb.ACLToProto(opts.ACL)}}
	var resp *pb.OpenResponse
	err = c.call(ctx, func(ctx context.Context, cli pb.ChubbyClient, s *pb.SessionRef, o grpc.CallOption) error {
		req.Session = s
		var err error
		resp, err = cli.Open(ctx, req, o)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	h := &Handle{c: c, ref: resp.Handle, name: n.String(), path: n.Path, key: key, mask: opts.Events,
		// A handle on an ephemeral node must really close: the node lives
		// only while handles are open on it.
		reusable: resp.Stat != nil && !resp.Stat.Ephemeral && !opts.Ephemeral}
	c.mu.Lock()
	c.handles[h.ref.Id] = h
	c.mu.Unlock()
	return h, resp.Created, nil
}

// reuseIdle returns a handle made from an idle one for key, if there is
// one: Chubby's handle cache, which spares the Open call.
func (c *Client) reuseIdle(n coord.Name, key idleKey) *Handle {
	c.mu.Lock()
	defer c.mu.Unlock()
	refs := c.idle[key]
	if len(refs) == 0 || c.state != stateSafe {
		return nil
	}
	ref := refs[len(refs)-1]
	c.idle[key] = refs[:len(refs)-1]
	if len(c.idle[key]) == 0 {
		delete(c.idle, key)
	}
	delete(c.idleByID, ref.Id)
	h := &Handle{c: c, ref: ref, name: n.String(), path: n.Path, key: key, mask: key.mask, reusable: true}
	c.handles[ref.Id] = h
	return h
}

// dropIdleLocked forgets an idle handle whose node is gone. c.mu must be
// held.
func (c *Client) dropIdleLocked(id uint64) {
	key, ok := c.idleByID[id]
	if !ok {
		return
	}
	delete(c.idleByID, id)
	refs := c.idle[key]
	for i, r := range refs {
		if r.Id == id {
			c.idle[key] = append(refs[:i:i], refs[i+1:]...)
			break
		}
	}
	if len(c.idle[key]) == 0 {
		delete(c.idle, key)
	}
}

// keepIdle makes a closed handle idle instead of closing it at the cell,
// if the cache has room. It reports whether it did.
func (h *Handle) keepIdle() bool {
	c := h.c
	h.mu.Lock()
	locked := h.seq.Load() != nil || h.cachedSeq != nil
	h.mu.Unlock()
	if !h.reusable || locked || h.usable() != nil || c.opts.MaxIdleHandles < 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != stateSafe || len(c.idleByID) >= c.opts.MaxIdleHandles {
		return false
	}
	c.idle[h.key] = append(c.idle[h.key], h.ref)
	c.idleByID[h.ref.Id] = h.key
	delete(c.handles, h.ref.Id)
	h.closed.Store(true)
	return true
}

// Name returns the node's full name.
func (h *Handle) Name() string { return h.name }

// usable fails for a closed, poisoned or invalidated handle.
func (h *Handle) usable() error {
	switch {
	case h.closed.Load():
		return coord.Errorf(coord.InvalidHandle, "%s: the handle is closed", h.name)
	case h.poisoned.Load():
		return coord.Errorf(coord.InvalidHandle, "%s: the handle was poisoned", h.name)
	case h.invalid.Load():
		return coord.Errorf(coord.InvalidHandle, "%s: the node was deleted", h.name)
	}
	return nil
}

// dropCached forgets the cached copy of the handle's node before this
// client changes it, so the master need not wait for this client's ack.
func (h *Handle) dropCached() {
	c := h.c
	c.mu.Lock()
	delete(c.cache, h.path)
	c.dirty[h.path]++
	c.mu.Unlock()
}

// mutate runs a call that changes the handle's node.
func (h *Handle) mutate(ctx context.Context, fn func(context.Context, pb.ChubbyClient, *pb.HandleRequest, grpc.CallOption) error) error {
	if err := h.usable(); err != nil {
		return err
	}
	return h.send(ctx, fn)
}

// send runs a call that changes the handle's node, usable or not.
func (h *Handle) send(ctx context.Context, fn func(context.Context, pb.ChubbyClient, *pb.HandleRequest, grpc.CallOption) error) error {
	id, done := h.c.newRequest()
	defer done()
	h.dropCached()
	defer h.dropCached() // a read that raced with the write must not be cached
	return h.c.call(ctx, func(ctx context.Context, cli pb.ChubbyClient, s *pb.SessionRef, o grpc.CallOption) error {
		return fn(ctx, cli, &pb.HandleRequest{Session: s, RequestId: id, Handle: h.ref}, o)
	})
}

// Close closes the handle. A lock it holds is released; an ephemeral node
// goes with its last handle.
func (h *Handle) Close(ctx context.Context) error {
	if h.closed.Load() || h.keepIdle() {
		return nil
	}
	// Poisoned and invalidated handles still get closed at the cell.
	err := h.send(ctx, func(ctx context.Context, cli pb.ChubbyClient, r *pb.HandleRequest, o grpc.CallOption) error {
		_, err := cli.Close(ctx, r, o)
		return err
	})
	h.closed.Store(true)
	h.c.mu.Lock()
	delete(h.c.handles, h.ref.Id)
	h.c.mu.Unlock()
	if errors.Is(err, coord.ErrInvalidHandle) || errors.Is(err, coord.ErrSessionExpired) {
		return nil // gone already: closing never fails for that
	}
	return err
}

// Poison makes every later call on the handle fail at once, without
// closing it; calls in flight end when their contexts do.
func (h *Handle) Poison() { h.poisoned.Store(true) }

// GetContentsAndStat reads the file's contents and metadata, from the
// cache when it holds them.
func (h *Handle) GetContentsAndStat(ctx context.Context) ([]byte, coord.Stat, error) {
	resp, err := h.get(ctx, true)
	if err != nil {
		return nil, coord.Stat{}, err
	}
	return resp.contents, resp.stat, nil
}

// GetStat reads the node's metadata.
func (h *Handle) GetStat(ctx context.Context) (coord.Stat, error) {
	resp, err := h.get(ctx, false)
	return resp.stat, err
}

func (h *Handle) get(ctx context.Context, contents bool) (cacheEntry, error) {
	if err := h.usable(); err != nil {
		return cacheEntry{}, err
	}
	c := h.c
	c.mu.Lock()
	if e := c.cache[h.path]; e != nil && c.state == stateSafe && time.Now().Before(c.leaseEnd) && (e.hasData || !contents) {
		out := *e
		c.mu.Unlock()
		return out, nil
	}
	dirty, flushes := c.dirty[h.path], c.flushes
	c.mu.Unlock()
	var resp *pb.GetResponse
	err := c.call(ctx, func(ctx context.Context, cli pb.ChubbyClient, s *pb.SessionRef, o grpc.CallOption) error {
		var err error
		req := &pb.HandleRequest{Session: s, Handle: h.ref}
		if contents {
			resp, err = cli.GetContentsAndStat(ctx, req, o)
		} else {
			resp, err = cli.GetStat(ctx, req, o)
		}
		return err
	})
	if err != nil {
		return cacheEntry{}, err
	}
	e := cacheEntry{contents: resp.Contents, stat: pb.StatFromProto(resp.Stat), hasData: contents}
	c.mu.Lock()
	// Cache only if nothing invalidated the node since the read began.
	if resp.Cacheable && c.dirty[h.path] == dirty && c.flushes == flushes && c.state == stateSafe {
		c.cache[h.path] = &e
	}
	c.mu.Unlock()
	return e, nil
}

// ReadDir lists a directory's children with their metadata.
func (h *Handle) ReadDir(ctx context.Context) ([]DirEntry, error) {
	if err := h.usable(); err != nil {
		return nil, err
	}
	var resp *pb.ReadDirResponse
	err := h.c.call(ctx, func(ctx context.Context, cli pb.ChubbyClient, s *pb.SessionRef, o grpc.CallOption) error {
		var err error
		resp, err = cli.ReadDir(ctx, &pb.HandleRequest{Session: s, Handle: h.ref}, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]DirEntry, len(resp.Entries))
	for i, e := range resp.Entries {
		out[i] = DirEntry{Name: e.Name, Stat: pb.StatFromProto(e.Stat)}
	}
	return out, nil
}

// DirEntry is a child of a directory.
type DirEntry struct {
	Name string
	Stat coord.Stat
}

// SetContents writes the file's contents whole. With IfGeneration it is a
// compare-and-swap on the content generation.
func (h *Handle) SetContents(ctx context.Context, data []byte, opts ...SetOption) (coord.Stat, error) {
	var o setOptions
	for _, f := range opts {
		f(&o)
	}
	var resp *pb.SetContentsResponse
	err := h.mutate(ctx, func(ctx context.Context, cli pb.ChubbyClient, r *pb.HandleRequest, co grpc.CallOption) error {
		var err error
		resp, err = cli.SetContents(ctx, &pb.SetContentsRequest{Session: r.Session, RequestId: r.RequestId, Handle: r.Handle,
			Contents: data, HasIfGeneration: o.hasGen, IfGeneration: o.gen}, co)
		return err
	})
	if err != nil {
		return coord.Stat{}, err
	}
	return pb.StatFromProto(resp.Stat), nil
}

type setOptions struct {
	hasGen bool
	gen    uint64
}

// SetOption modifies SetContents.
type SetOption func(*setOptions)

// IfGeneration makes SetContents write only if the content generation is
// still gen.
func IfGeneration(gen uint64) SetOption {
	return func(o *setOptions) { o.hasGen, o.gen = true, gen }
}

// SetACL writes the node's ACL names.
func (h *Handle) SetACL(ctx context.Context, acl coord.ACL) (coord.Stat, error) {
	var resp *pb.SetACLResponse
	err := h.mutate(ctx, func(ctx context.Context, cli pb.ChubbyClient, r *pb.HandleRequest, o grpc.CallOption) error {
		var err error
		resp, err = cli.SetACL(ctx, &pb.SetACLRequest{Session: r.Session, RequestId: r.RequestId, Handle: r.Handle, Acl: pb.ACLToProto(acl)}, o)
		return err
	})
	if err != nil {
		return coord.Stat{}, err
	}
	return pb.StatFromProto(resp.Stat), nil
}

// Delete deletes the node, which must have no children.
func (h *Handle) Delete(ctx context.Context) error {
	return h.mutate(ctx, func(ctx context.Context, cli pb.ChubbyClient, r *pb.HandleRequest, o grpc.CallOption) error {
		_, err := cli.Delete(ctx, r, o)
		return err
	})
}

// Acquire takes the node's lock, waiting while others hold it, until ctx
// ends. The handle must have been opened with ModeWrite.
func (h *Handle) Acquire(ctx context.Context, mode coord.LockMode) error {
	ok, err := h.acquire(ctx, mode, true)
	if err == nil && !ok {
		err = coord.Errorf(coord.LockBusy, "%s is locked", h.name)
	}
	return err
}

// TryAcquire takes the node's lock if it is free now.
func (h *Handle) TryAcquire(ctx context.Context, mode coord.LockMode) (bool, error) {
	return h.acquire(ctx, mode, false)
}

func (h *Handle) acquire(ctx context.Context, mode coord.LockMode, wait bool) (bool, error) {
	safe := h.c.Safe()
	h.mu.Lock()
	if cs := h.cachedSeq; cs != nil && cs.Mode == mode && safe && h.usable() == nil {
		// Still held at the cell since the program released it.
		h.seq.Store(cs)
		h.cachedSeq = nil
		h.mu.Unlock()
		return true, nil
	}
	h.mu.Unlock()
	if err := h.releaseCached(ctx); err != nil {
		return false, err
	}
	var resp *pb.AcquireResponse
	err := h.mutate(ctx, func(ctx context.Context, cli pb.ChubbyClient, r *pb.HandleRequest, o grpc.CallOption) error {
		var err error
		resp, err = cli.Acquire(ctx, &pb.AcquireRequest{Session: r.Session, RequestId: r.RequestId, Handle: r.Handle,
			Mode: pb.LockMode(mode), Wait: wait}, o)
		return err
	})
	if err != nil || !resp.Acquired {
		return false, err
	}
	seq := pb.SequencerFromProto(resp.Sequencer)
	h.mu.Lock()
	h.seq.Store(&seq)
	h.contended = false
	h.mu.Unlock()
	return true, nil
}

// releaseCached gives up a lock kept after the program released it.
func (h *Handle) releaseCached(ctx context.Context) error {
	h.mu.Lock()
	cs := h.cachedSeq
	h.cachedSeq = nil
	h.mu.Unlock()
	if cs == nil {
		return nil
	}
	return h.send(ctx, func(ctx context.Context, cli pb.ChubbyClient, r *pb.HandleRequest, o grpc.CallOption) error {
		_, err := cli.Release(ctx, r, o)
		return err
	})
}

// conflict notes that another session wants this handle's lock, and gives
// up a cached one. It runs under c.mu, so the call goes on its own.
func (h *Handle) conflict() {
	h.mu.Lock()
	h.contended = true
	cached := h.cachedSeq != nil
	h.mu.Unlock()
	if !cached {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		go func() {
			select {
			case <-h.c.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		if err := h.releaseCached(ctx); err != nil {
			h.c.opts.Logger.Warn("giving up the cached lock failed", slog.String("cell", h.c.opts.Cell), slog.String("path", h.name), slog.Any("err", err))
		}
	}()
}

// Release releases the node's lock. With Options.CacheLocks the lock stays
// held at the cell until another session asks for it, and the next
// Acquire in the same mode takes it back without a call.
func (h *Handle) Release(ctx context.Context) error {
	h.mu.Lock()
	if h.c.opts.CacheLocks && h.seq.Load() != nil && !h.contended && h.usable() == nil {
		h.cachedSeq = h.seq.Swap(nil)
		h.mu.Unlock()
		return nil
	}
	h.seq.Store(nil)
	h.mu.Unlock()
	return h.mutate(ctx, func(ctx context.Context, cli pb.ChubbyClient, r *pb.HandleRequest, o grpc.CallOption) error {
		_, err := cli.Release(ctx, r, o)
		return err
	})
}

// GetSequencer returns the sequencer of the lock this handle holds.
func (h *Handle) GetSequencer() (coord.Sequencer, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	seq := h.seq.Load()
	if seq == nil {
		return coord.Sequencer{}, coord.Errorf(coord.NotHeld, "%s: this handle holds no lock", h.name)
	}
	return *seq, nil
}

// LockHeld reports, without a network round trip, whether this handle
// holds its lock and the session is safe. A server fencing itself with a
// Chubby lock checks this on every request.
func (h *Handle) LockHeld() bool {
	return h.seq.Load() != nil && h.usable() == nil && h.c.Safe()
}

// SetSequencer ties the handle to a sequencer: later calls on the handle
// fail once the sequencer is no longer valid.
func (h *Handle) SetSequencer(ctx context.Context, seq coord.Sequencer) error {
	return h.mutate(ctx, func(ctx context.Context, cli pb.ChubbyClient, r *pb.HandleRequest, o grpc.CallOption) error {
		_, err := cli.SetSequencer(ctx, &pb.SetSequencerRequest{Session: r.Session, RequestId: r.RequestId, Handle: r.Handle,
			Sequencer: pb.SequencerToProto(seq)}, o)
		return err
	})
}

// CheckSequencer reports whether seq still describes its lock: nil if it
// does, an ErrStaleSequencer error saying why if not.
func (c *Client) CheckSequencer(ctx context.Context, seq coord.Sequencer) error {
	var resp *pb.CheckSequencerResponse
	err := c.retry(ctx, func(ctx context.Context, cli pb.ChubbyClient, o grpc.CallOption) error {
		var err error
		resp, err = cli.CheckSequencer(ctx, &pb.CheckSequencerRequest{Sequencer: pb.SequencerToProto(seq)}, o)
		return err
	})
	if err != nil {
		return err
	}
	if !resp.Valid {
		return coord.Errorf(coord.StaleSequencer, "%s", resp.Reason)
	}
	return nil
}
