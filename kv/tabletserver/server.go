package tabletserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/dfs"
	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/kv/tablet"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// Coordinator is what the server needs of the lock service: a file it
// owns under an exclusive lock.
type Coordinator interface {
	// Lock creates the file at path with contents unless it exists, and
	// takes its exclusive lock, waiting for it under ctx.
	Lock(ctx context.Context, path string, contents []byte) (Lock, error)
}

// Lock is a held lock on the server's file.
type Lock interface {
	// Held reports, without a network round trip, whether the lock is
	// still held and the session that holds it is safe.
	Held() bool
	// Lost returns a channel that is closed once the lock is lost.
	Lost() <-chan struct{}
	// LeaseEnd is the end of the local lease under which the lock counts
	// as held; once it passes, Held is false.
	LeaseEnd() time.Time
	// Relock takes the lock again after it was lost. It returns
	// ErrFileGone if the file no longer exists.
	Relock(ctx context.Context) error
	// Release gives the lock up.
	Release(ctx context.Context) error
}

// ErrFileGone says that the server's file in the lock service is gone.
var ErrFileGone = errors.New("the server's file is gone")

// Options configure a server.
type Options struct {
	// ID names the server; its file is ServersDir/ID.
	ID string
	// Addr is the address clients reach the server at; it is the file's
	// contents.
	Addr string
	// ServersDir is the lock service directory of the servers' files.
	ServersDir string
	// Store holds the tablets the server serves.
	Store *tablet.Store
	// Coord is the lock service.
	Coord Coordinator
	// RelockBackoff is the wait between attempts to retake a lost lock.
	RelockBackoff time.Duration
	// Logger receives notable events (nil: discarded).
	Logger *slog.Logger
	// OnFatal is called once, from the server's own goroutine, when the
	// server must stop for good (its file is gone).
	OnFatal func(error)
	// Meta is the client through which the server records its tablets'
	// descriptors in METADATA (see catalog.go).
	Meta *client.Client
	// Root writes the root tablet's descriptor into the lock service.
	Root RootWriter
	// Catalog, the store's catalog, is bound to this server by New.
	Catalog *Catalog
	// FS and DFSRoot are the shared file system and its root, which hold
	// every server's logs and SSTables.
	FS      dfs.FS
	DFSRoot string
	// ReportSplit, if set, tells the master of a split once it is in
	// METADATA. A failed report is only logged: the master's scan of the
	// servers' tablets finds the split anyway.
	ReportSplit func(ctx context.Context, server, table string, lower, upper model.RowRange) error
	// Rand supplies the numbers in [0, 1) that the row_sample filters of
	// row filters draw (model.CompiledRowFilter.NewEvaluator). Concurrent
	// requests call it, so it must be safe for concurrent use. If nil, New
	// gives the server a source of its own, seeded from the system's
	// randomness; tests set a deterministic one.
	Rand func() float64
	// ObserveRPC, if set, hears of every RPC once it ends: the method's
	// name (ReadRow), its duration and its error (nil on success). It runs
	// on the RPC's goroutine and must not block (see observe.go).
	ObserveRPC func(method string, d time.Duration, err error)
	// Secret, if set, is the cluster's shared secret: every call must
	// carry it (kv/client's auth.go), else it is Unauthenticated.
	Secret string
	// ACLs, if set, are the tables' ACLs, checked on every data call that
	// names a principal (acl.go); nil: every table is open.
	ACLs ACLReader
	// ACLTTL bounds how long an ACL is cached (default 5 s); keep it
	// within one Chubby lease so that a revoke takes effect within one.
	ACLTTL time.Duration
	// Now is the clock of the ACL cache and of the trust in sequencers
	// (default time.Now).
	Now func() time.Time
	// Sequencers checks the master's sequencers with the lock service
	// (fence.go). Without it, sequencers are only ordered: an older
	// generation than one seen is refused, a newer one accepted.
	Sequencers SequencerChecker
	// SequencerCheckTimeout bounds one check with the lock service
	// (default 2 s). A server cut off from the cell must answer the
	// master's call Unavailable soon rather than hold it: the master
	// scans and assigns from one loop, which would stall.
	SequencerCheckTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.ServersDir == "" {
		o.ServersDir = "/ls/local/cellar/servers"
	}
	if o.RelockBackoff == 0 {
		o.RelockBackoff = 200 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.OnFatal == nil {
		o.OnFatal = func(error) {}
	}
	if o.SequencerCheckTimeout == 0 {
		o.SequencerCheckTimeout = 2 * time.Second
	}
	if o.Rand == nil {
		o.Rand = newLockedRand().Float64
	}
	return o
}

// Validate checks the options.
func (o Options) Validate() error {
	switch {
	case o.ID == "":
		return errors.New("tabletserver: no server id")
	case o.Addr == "":
		return errors.New("tabletserver: no address")
	case o.Store == nil || o.Coord == nil:
		return errors.New("tabletserver: a store and a lock service are required")
	case o.ACLTTL < 0:
		return fmt.Errorf("tabletserver: ACLTTL %v is negative", o.ACLTTL)
	case o.SequencerCheckTimeout < 0:
		return fmt.Errorf("tabletserver: SequencerCheckTimeout %v is negative", o.SequencerCheckTimeout)
	case o.Catalog != nil && (o.Meta == nil || o.Root == nil || o.FS == nil):
		return errors.New("tabletserver: a store in shared mode needs a METADATA client, a root writer and the shared file system")
	}
	return nil
}

// Server serves the tablets of a store.
type Server struct {
	pb.UnimplementedTabletServerServer
	opts Options

	// lock is set once, by Open; every request reads it, so no mutex.
	lock atomic.Pointer[heldLock]
	dead atomic.Bool

	mu sync.Mutex // guards grpc

	stop   chan struct{}
	splits chan [2]uint64
	wg     sync.WaitGroup
	grpc   *grpc.Server
	acls   *aclCache // nil: no ACLs
	fence  *fence
}

type heldLock struct{ Lock }

// New returns a server. It does no I/O; Open registers it.
func New(opts Options) *Server {
	s := &Server{opts: opts.withDefaults(), stop: make(chan struct{}), splits: make(chan [2]uint64, splitQueueLen), acls: newACLCache(opts)}
	s.fence = newFence(s.opts)
	if opts.Catalog != nil {
		opts.Catalog.srv.Store(s)
	}
	return s
}

// Path is the server's file in the lock service.
func (s *Server) Path() string { return s.opts.ServersDir + "/" + s.opts.ID }

// Open registers the server: it creates its file and takes its lock, then
// watches the lock.
func (s *Server) Open(ctx context.Context) error {
	if err := s.opts.Validate(); err != nil {
		return err
	}
	l, err := s.opts.Coord.Lock(ctx, s.Path(), []byte(s.opts.Addr))
	if err != nil {
		return fmt.Errorf("tabletserver %s: register %s: %w", s.opts.ID, s.Path(), err)
	}
	s.lock.Store(&heldLock{l})
	s.wg.Add(1)
	go s.watch(l)
	s.wg.Add(1)
	go s.reportSplits()
	return nil
}

// watch retakes the lock whenever it is lost, until the file is gone.
func (s *Server) watch(l Lock) {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-l.Lost():
		}
		// A server that was paused finds out late; it stopped serving when
		// its lease ended, and says so, for the logs of serving intervals.
		since := time.Now()
		if end := l.LeaseEnd(); !end.IsZero() && end.Before(since) {
			since = end
		}
		s.opts.Logger.Error("lost its lock; not serving", slog.String("server", s.opts.ID), slog.String("path", s.Path()), slog.String("since", preciseTime(since)))
		for {
			// The lock may be held again from some point of Relock on.
			attempt := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			go func() {
				select {
				case <-s.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			err := l.Relock(ctx)
			cancel()
			if err == nil {
				s.opts.Logger.Info("holds its lock again; serving", slog.String("server", s.opts.ID), slog.String("since", preciseTime(attempt)))
				break
			}
			if errors.Is(err, ErrFileGone) {
				s.dead.Store(true)
				s.opts.Logger.Error("its file is gone; stopping", slog.String("server", s.opts.ID), slog.String("path", s.Path()))
				s.opts.OnFatal(fmt.Errorf("tabletserver %s: %w", s.opts.ID, ErrFileGone))
				return
			}
			select {
			case <-s.stop:
				return
			case <-time.After(s.opts.RelockBackoff):
			}
		}
	}
}

// serving is the per-request fencing check: local, no round trip.
func (s *Server) serving() error {
	l := s.lock.Load()
	switch {
	case s.dead.Load():
		return notServing("server %s has stopped: its lock file is gone", s.opts.ID)
	case l == nil || !l.Held():
		return notServing("server %s does not hold its lock", s.opts.ID)
	}
	return nil
}

// Serve answers RPCs on ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	// Stream workers keep their goroutines and so their grown stacks; a
	// goroutine per call would grow one through the read path each time.
	s.grpc = grpc.NewServer(append(append(client.ServerOptions(s.opts.Secret), s.observeOptions()...), grpc.NumStreamWorkers(uint32(8*runtime.GOMAXPROCS(0))))...)
	pb.RegisterTabletServerServer(s.grpc, s)
	g := s.grpc
	s.mu.Unlock()
	return g.Serve(ln)
}

// Close stops serving and releases the lock, so that the master can
// reassign the tablets at once.
func (s *Server) Close(ctx context.Context) error {
	close(s.stop)
	s.mu.Lock()
	g := s.grpc
	s.mu.Unlock()
	l := s.lock.Load()
	if g != nil {
		g.GracefulStop()
	}
	s.wg.Wait()
	if l != nil && !s.dead.Load() {
		return l.Release(ctx)
	}
	return nil
}
