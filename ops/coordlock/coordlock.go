// Package coordlock gives cellar's processes their lock files in the
// Chubby cell: it implements the lock-service interfaces that kv packages
// declare (tabletserver.Coordinator, master.Coordinator) with coord/client.
//
// A lock is watched locally: it counts as lost as soon as the handle no
// longer holds it or the session is not safe (jeopardy), without a round
// trip. Taking it back reuses the session if it survived, and opens a new
// session if it expired.
package coordlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellardb/cellar/coord"
	"github.com/cellardb/cellar/coord/client"
	kvclient "github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/master"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/kv/tabletserver"
)

// Service hands out locks on files, one session per lock.
type Service struct {
	// Client are the options of each lock's session (OnEvent is ignored).
	Client client.Options
	// Poll is how often a lock checks, locally, whether it still holds.
	Poll time.Duration
}

// The master's and the tablet servers' locks can be taken back after a
// jeopardy, and carry sequencers.
var (
	_ master.ResumableLock = (*lock)(nil)
	_ master.SequencedLock = (*lock)(nil)
	_ tabletserver.Lock    = (*lock)(nil)
)

// ForTabletServer is the tablet server's view of the service.
type ForTabletServer struct{ Service *Service }

// Lock implements tabletserver.Coordinator.
func (t ForTabletServer) Lock(ctx context.Context, path string, contents []byte) (tabletserver.Lock, error) {
	return t.Service.lockFile(ctx, path, contents, 0)
}

// DefaultMasterLockDelay is the master lock's lock-delay unless
// configured: it adds this much to a failover after a master's crash, and
// lets the tablet servers trust a checked sequencer for half of it.
const DefaultMasterLockDelay = time.Second

// ForMaster is the master's view of the service: its lock, and a session
// to read and clean up the servers directory.
type ForMaster struct {
	Service *Service
	Session *Session
	// LockDelay is the master lock's lock-delay: after the master fails
	// (a crash, or a pause past its lease), no other master may take the
	// lock for this long. The tablet servers trust a sequencer they
	// checked for half of it (kv/tabletserver's fence.go); a longer one
	// asks the cell less often but delays a failover after a crash.
	LockDelay time.Duration
}

// Lock implements master.Coordinator. The lock is a master.SequencedLock.
func (m ForMaster) Lock(ctx context.Context, path string, contents []byte) (master.Lock, error) {
	return m.Service.lockFile(ctx, path, contents, m.LockDelay)
}

// List implements master.Coordinator.
func (m ForMaster) List(ctx context.Context, dir string) ([]master.File, error) {
	return m.Session.List(ctx, dir)
}

// TakeAndDelete implements master.Coordinator.
func (m ForMaster) TakeAndDelete(ctx context.Context, path string) (bool, error) {
	return m.Session.TakeAndDelete(ctx, path)
}

// lockFile creates the file at path (and its parent directories) unless it
// exists, waits under ctx for its exclusive lock and writes contents.
func (s *Service) lockFile(ctx context.Context, path string, contents []byte, delay time.Duration) (*lock, error) {
	l := &lock{svc: s, path: path, contents: contents, delay: delay, lost: make(chan struct{}), stop: make(chan struct{})}
	if err := l.take(ctx, true); err != nil {
		return nil, err
	}
	l.wg.Add(1)
	go l.watch()
	return l, nil
}

type lock struct {
	svc      *Service
	path     string
	contents []byte
	delay    time.Duration // the handle's lock-delay

	mu sync.Mutex
	c  *client.Client
	// h is the handle holding the lock, written under mu and read
	// without it by Held, which the tablet server calls on every request.
	h    atomic.Pointer[client.Handle]
	lost chan struct{} // closed when the current hold ends

	stop chan struct{}
	wg   sync.WaitGroup
}

func (l *lock) Held() bool {
	h := l.h.Load()
	return h != nil && h.LockHeld()
}

// Sequencer implements master.SequencedLock: the sequencer of the current
// hold, in kv's form.
func (l *lock) Sequencer() (kvclient.Sequencer, error) {
	l.mu.Lock()
	h := l.h.Load()
	l.mu.Unlock()
	if h == nil {
		return kvclient.Sequencer{}, fmt.Errorf("%s: %w", l.path, coord.ErrNotHeld)
	}
	seq, err := h.GetSequencer()
	if err != nil {
		return kvclient.Sequencer{}, err
	}
	return kvclient.Sequencer{Path: seq.Path, Instance: seq.Instance, Generation: seq.LockGeneration, LockDelay: l.delay}, nil
}

// LeaseEnd implements tabletserver.Lock.
func (l *lock) LeaseEnd() time.Time {
	l.mu.Lock()
	c := l.c
	l.mu.Unlock()
	if c == nil {
		return time.Time{}
	}
	return c.LeaseEnd()
}

func (l *lock) Lost() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// watch closes the lost channel when the hold ends, and makes a new one
// once the lock is held again.
func (l *lock) watch() {
	defer l.wg.Done()
	poll := l.svc.Poll
	if poll == 0 {
		poll = 20 * time.Millisecond
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	held := true
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		now := l.Held()
		l.mu.Lock()
		switch {
		case held && !now:
			close(l.lost)
		case !held && now:
			l.lost = make(chan struct{})
		}
		l.mu.Unlock()
		held = now
	}
}

// Relock takes the lock back: at once if the session survived and still
// holds it, else with the session (or a new one) waiting for the lock.
func (l *lock) Relock(ctx context.Context) error {
	if l.Held() {
		return l.waitHeld(ctx)
	}
	l.mu.Lock()
	c, h := l.c, l.h.Load()
	l.mu.Unlock()
	if h != nil {
		err := h.Acquire(ctx, coord.Exclusive)
		switch {
		case err == nil:
			return l.waitHeld(ctx)
		case errors.Is(err, coord.ErrInvalidHandle):
			// The node was deleted, or the session ended; look again.
		case !errors.Is(err, coord.ErrSessionExpired):
			return err
		}
	}
	if c != nil {
		c.Close(ctx)
	}
	if err := l.take(ctx, false); err != nil {
		return err
	}
	return l.waitHeld(ctx)
}

// Resume waits until the lock is held safely again by the session that
// held it, which it is once a session in jeopardy comes back. It fails at
// once if that session ended: the lock may have gone to someone else
// since (Relock takes it in a new session instead).
func (l *lock) Resume(ctx context.Context) error {
	if l.Held() {
		return l.waitHeld(ctx)
	}
	l.mu.Lock()
	h := l.h.Load()
	l.mu.Unlock()
	if h == nil {
		return fmt.Errorf("coordlock: %s: no handle to resume", l.path)
	}
	// In jeopardy the call waits until the session is safe again or has
	// expired; the session's own lock is granted again at once, in the
	// same generation. Other errors (a cell between masters) are retried
	// until ctx ends.
	for {
		err := h.Acquire(ctx, coord.Exclusive)
		switch {
		case err == nil:
			return l.waitHeld(ctx)
		case errors.Is(err, coord.ErrSessionExpired), errors.Is(err, coord.ErrInvalidHandle), ctx.Err() != nil:
			return fmt.Errorf("coordlock: resume %s: %w", l.path, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("coordlock: resume %s: %w", l.path, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitHeld returns once the lock counts as held again and the watcher has
// given it a new Lost channel. A handle that still holds the lock while
// its session is in jeopardy is not held (Held needs a safe session), and
// returning before the watcher noticed the hold would hand the caller the
// old, closed channel: it would see the lock lost again at once, and spin.
func (l *lock) waitHeld(ctx context.Context) error {
	for {
		if l.Held() {
			select {
			case <-l.Lost():
			default:
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// take opens a session if need be, opens the file (creating it and its
// parents if create) and waits for its lock.
func (l *lock) take(ctx context.Context, create bool) error {
	l.mu.Lock()
	c := l.c
	l.mu.Unlock()
	if c == nil || !c.Safe() {
		opts := l.svc.Client
		opts.OnEvent = nil
		c = client.New(opts)
		if err := c.Open(ctx); err != nil {
			return fmt.Errorf("open a session: %w", err)
		}
	}
	fail := func(err error) error {
		c.Close(context.Background())
		l.mu.Lock()
		l.c = nil
		l.h.Store(nil)
		l.mu.Unlock()
		return err
	}
	if create {
		if err := mkdirs(ctx, c, l.path); err != nil {
			return fail(err)
		}
	}
	h, created, err := c.OpenNode(ctx, l.path, client.OpenOptions{Mode: coord.ModeRead | coord.ModeWrite, Create: create,
		Contents: l.contents, Events: coord.Mask(coord.EventHandleInvalid), LockDelay: l.delay})
	if errors.Is(err, coord.ErrNotFound) {
		return fail(fmt.Errorf("%s: %w", l.path, tabletserver.ErrFileGone))
	}
	if err != nil {
		return fail(err)
	}
	if err := h.Acquire(ctx, coord.Exclusive); err != nil {
		return fail(fmt.Errorf("lock %s: %w", l.path, err))
	}
	// A file left by an earlier holder names that holder: name this one.
	if !created {
		if _, err := h.SetContents(ctx, l.contents); err != nil {
			return fail(fmt.Errorf("write %s: %w", l.path, err))
		}
	}
	l.mu.Lock()
	l.c = c
	l.h.Store(h)
	l.mu.Unlock()
	return nil
}

// mkdirs creates the parent directories of path.
func mkdirs(ctx context.Context, c *client.Client, path string) error {
	i := strings.LastIndexByte(path, '/')
	if !strings.HasPrefix(path, coord.Prefix) || i < 0 {
		return fmt.Errorf("%s is not a lock service name", path)
	}
	return MkdirAll(ctx, c, path[:i])
}

// MkdirAll creates dir and every missing directory above it in its cell,
// like mkdir -p; it fails if one of them exists as a file.
func MkdirAll(ctx context.Context, c *client.Client, dir string) error {
	n, err := coord.ParseName(dir)
	if err != nil {
		return err
	}
	prefix := coord.Prefix + n.Cell
	for _, part := range strings.Split(strings.Trim(n.Path, "/"), "/") {
		if part == "" {
			continue
		}
		prefix += "/" + part
		h, _, err := c.OpenNode(ctx, prefix, client.OpenOptions{Mode: coord.ModeRead, Create: true, Directory: true})
		if err != nil {
			return fmt.Errorf("create %s: %w", prefix, err)
		}
		st, err := h.GetStat(ctx)
		h.Close(ctx)
		if err != nil {
			return err
		}
		if !st.IsDirectory {
			return fmt.Errorf("%s exists and is a file", prefix)
		}
	}
	return nil
}

// Release gives the lock up and ends the session.
func (l *lock) Release(ctx context.Context) error {
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	c, h := l.c, l.h.Swap(nil)
	l.c = nil
	l.mu.Unlock()
	if c == nil {
		return nil
	}
	var err error
	if h != nil && h.LockHeld() {
		err = h.Release(ctx)
	}
	return errors.Join(err, c.Close(ctx))
}

// Session is a Chubby session for reads and writes of files: the
// master's in the servers directory, and the root-file reads of the kv
// clients. A session that expires (its holder was paused, or the cell was
// away for longer than the lease) is replaced by a new one on its next
// use; the locks that matter are held elsewhere, each in its own session.
type Session struct {
	svc *Service

	mu sync.Mutex
	c  *client.Client
}

// NewSession opens a session with the options of svc.
func (s *Service) NewSession(ctx context.Context) (*Session, error) {
	c, err := s.openClient(ctx)
	if err != nil {
		return nil, err
	}
	return &Session{svc: s, c: c}, nil
}

func (s *Service) openClient(ctx context.Context) (*client.Client, error) {
	opts := s.Client
	opts.OnEvent = nil
	c := client.New(opts)
	if err := c.Open(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// cur returns the session's client.
func (s *Session) cur() *client.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c
}

// do runs f, and once more on a new session if the session has expired.
func (s *Session) do(ctx context.Context, f func(*client.Client) error) error {
	c := s.cur()
	err := f(c)
	if !errors.Is(err, coord.ErrSessionExpired) {
		return err
	}
	s.mu.Lock()
	if s.c == c {
		nc, oerr := s.svc.openClient(ctx)
		if oerr != nil {
			s.mu.Unlock()
			return errors.Join(err, oerr)
		}
		s.c = nc
		go c.Close(context.Background())
	}
	c = s.c
	s.mu.Unlock()
	return f(c)
}

// List returns the files of dir with their contents and whether they are
// locked; a missing dir has no files.
func (s *Session) List(ctx context.Context, dir string) ([]master.File, error) {
	var out []master.File
	err := s.do(ctx, func(c *client.Client) error {
		var err error
		out, err = s.list(ctx, c, dir)
		return err
	})
	return out, err
}

func (s *Session) list(ctx context.Context, c *client.Client, dir string) ([]master.File, error) {
	h, _, err := c.OpenNode(ctx, dir, client.OpenOptions{Mode: coord.ModeRead})
	if errors.Is(err, coord.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer h.Close(ctx)
	entries, err := h.ReadDir(ctx)
	if err != nil {
		return nil, err
	}
	var out []master.File
	for _, e := range entries {
		if e.Stat.IsDirectory {
			continue
		}
		f := master.File{Name: e.Name, Locked: e.Stat.LockMode != coord.Unlocked}
		fh, _, err := c.OpenNode(ctx, dir+"/"+e.Name, client.OpenOptions{Mode: coord.ModeRead})
		if errors.Is(err, coord.ErrNotFound) {
			continue // deleted since
		}
		if err != nil {
			return nil, err
		}
		f.Contents, _, err = fh.GetContentsAndStat(ctx)
		fh.Close(ctx)
		if err != nil && !errors.Is(err, coord.ErrInvalidHandle) {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// TakeAndDelete tries to take path's lock without waiting and, if it gets
// it, deletes the file. It reports whether it deleted it.
func (s *Session) TakeAndDelete(ctx context.Context, path string) (bool, error) {
	var ok bool
	err := s.do(ctx, func(c *client.Client) error {
		var err error
		ok, err = s.takeAndDelete(ctx, c, path)
		return err
	})
	return ok, err
}

func (s *Session) takeAndDelete(ctx context.Context, c *client.Client, path string) (bool, error) {
	h, _, err := c.OpenNode(ctx, path, client.OpenOptions{Mode: coord.ModeRead | coord.ModeWrite})
	if errors.Is(err, coord.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer h.Close(ctx)
	ok, err := h.TryAcquire(ctx, coord.Exclusive)
	if err != nil || !ok {
		return false, err
	}
	if err := h.Delete(ctx); err != nil {
		return false, err
	}
	return true, nil
}

// CheckSequencer implements tabletserver.SequencerChecker: it asks the
// cell whether seq's holder still holds the (exclusive) lock.
func (s *Session) CheckSequencer(ctx context.Context, seq kvclient.Sequencer) error {
	cs := coord.Sequencer{Path: seq.Path, Mode: coord.Exclusive, LockGeneration: seq.Generation, Instance: seq.Instance}
	err := s.do(ctx, func(c *client.Client) error { return c.CheckSequencer(ctx, cs) })
	var ce *coord.Error
	if errors.As(err, &ce) && ce.Kind == coord.StaleSequencer {
		return fmt.Errorf("%w: %s", tabletserver.ErrStaleSequencer, ce.Msg)
	}
	return err
}

// DeleteFile deletes a file; a missing one is not an error.
func (s *Session) DeleteFile(ctx context.Context, path string) error {
	return s.do(ctx, func(c *client.Client) error { return s.deleteFile(ctx, c, path) })
}

func (s *Session) deleteFile(ctx context.Context, c *client.Client, path string) error {
	h, _, err := c.OpenNode(ctx, path, client.OpenOptions{Mode: coord.ModeRead | coord.ModeWrite})
	if errors.Is(err, coord.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	if err := h.Delete(ctx); err != nil && !errors.Is(err, coord.ErrInvalidHandle) {
		return err
	}
	return nil
}

// DeleteFile implements master.Coordinator.
func (m ForMaster) DeleteFile(ctx context.Context, path string) error {
	return m.Session.DeleteFile(ctx, path)
}

// Close ends the session.
func (s *Session) Close(ctx context.Context) error { return s.cur().Close(ctx) }

// ReadFile implements master.Coordinator.
func (m ForMaster) ReadFile(ctx context.Context, path string) ([]byte, bool, error) {
	return m.Session.ReadFile(ctx, path)
}

// WriteFile implements master.Coordinator.
func (m ForMaster) WriteFile(ctx context.Context, path string, data []byte) error {
	return m.Session.WriteFile(ctx, path, data)
}

// ReadFile returns a file's contents and whether it exists.
func (s *Session) ReadFile(ctx context.Context, path string) ([]byte, bool, error) {
	var data []byte
	var ok bool
	err := s.do(ctx, func(c *client.Client) error {
		var err error
		data, ok, err = s.readFile(ctx, c, path)
		return err
	})
	return data, ok, err
}

func (s *Session) readFile(ctx context.Context, c *client.Client, path string) ([]byte, bool, error) {
	h, _, err := c.OpenNode(ctx, path, client.OpenOptions{Mode: coord.ModeRead})
	if errors.Is(err, coord.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer h.Close(ctx)
	data, _, err := h.GetContentsAndStat(ctx)
	if errors.Is(err, coord.ErrInvalidHandle) {
		return nil, false, nil // deleted meanwhile
	}
	return data, err == nil, err
}

// WriteFile creates or replaces a file, and its parent directories.
func (s *Session) WriteFile(ctx context.Context, path string, data []byte) error {
	return s.do(ctx, func(c *client.Client) error { return s.writeFile(ctx, c, path, data) })
}

func (s *Session) writeFile(ctx context.Context, c *client.Client, path string, data []byte) error {
	if err := mkdirs(ctx, c, path); err != nil {
		return err
	}
	h, created, err := c.OpenNode(ctx, path, client.OpenOptions{Mode: coord.ModeRead | coord.ModeWrite, Create: true, Contents: data})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	if !created {
		_, err = h.SetContents(ctx, data)
	}
	return err
}

// RootFile reads the root tablet's location for kv/client.
type RootFile struct {
	Session *Session
	// Path is the root file (default /ls/local/cellar/root).
	Path string
}

// Root implements kv/client.RootReader.
func (r RootFile) Root(ctx context.Context) (string, error) {
	path := r.Path
	if path == "" {
		path = "/ls/local/cellar/root"
	}
	data, err := r.Session.readLocation(ctx, path, "no master has set up METADATA yet")
	if err != nil {
		return "", err
	}
	d, err := model.ParseRootFile([]byte(data))
	if err != nil {
		return "", err
	}
	return d.Addr, nil
}

// WriteRoot implements kv/tabletserver.RootWriter.
func (r RootFile) WriteRoot(ctx context.Context, descriptor []byte) error {
	path := r.Path
	if path == "" {
		path = "/ls/local/cellar/root"
	}
	return r.Session.WriteFile(ctx, path, descriptor)
}

// readLocation reads an address from a file that a role writes, and says
// why it is missing if it is.
func (s *Session) readLocation(ctx context.Context, path, ifMissing string) (string, error) {
	data, ok, err := s.ReadFile(ctx, path)
	if err == nil && !ok {
		err = fmt.Errorf("%s does not exist: %s", path, ifMissing)
	}
	return string(data), err
}

// MasterAddr returns a function that reads the active master's address
// from its lock file (default /ls/local/cellar/master).
func (s *Session) MasterAddr(path string) func(context.Context) (string, error) {
	if path == "" {
		path = "/ls/local/cellar/master"
	}
	return func(ctx context.Context) (string, error) {
		return s.readLocation(ctx, path, "no master has run in this cell yet")
	}
}
