// Package master is cellar's master (Bigtable paper, section 5.2): at most
// one runs at a time, holding the master lock in the lock service.
//
//	Open ── master lock taken, address written ──► active
//	          (a standby waits here)                  │ every ScanInterval:
//	                                                  ▼
//	  1. list the servers directory; ask every locked server for its
//	     tablets; a server whose file is unlocked, or that does not answer
//	     MaxMisses times in a row, is dead once the master has taken its
//	     file's lock and deleted the file; only then may its tablets go
//	     elsewhere;
//	  2. make sure the root tablet is assigned, then scan METADATA and
//	     assign every unassigned tablet (assign.go);
//	  3. when everything is assigned: merge small neighbours, move a tablet
//	     to balance load, and now and then collect garbage files
//	     (maintain.go).
//
// A new master runs the same loop, so its start-up is the paper's: scan
// the servers, ask them what they serve, assign the root tablet, scan
// METADATA.
//
// When its lock stops being held safely, the master pauses. If its Chubby
// session was only in jeopardy (a Chubby failover, a partition shorter
// than the grace period) and still holds the lock in the same generation,
// it resumes: no other master can have acted meanwhile. Otherwise (the
// session expired, so another master may be active) it stops for good
// (Options.OnFatal).
package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/kv/client"
	"github.com/cellardb/cellar/kv/dfs"
	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// Coordinator is what the master needs of the lock service.
type Coordinator interface {
	// Lock creates the file at path unless it exists, waits under ctx for
	// its exclusive lock, and writes contents into it.
	Lock(ctx context.Context, path string, contents []byte) (Lock, error)
	// List returns the files of dir.
	List(ctx context.Context, dir string) ([]File, error)
	// TakeAndDelete takes path's lock if it is free, without waiting, and
	// deletes the file; it reports whether it did.
	TakeAndDelete(ctx context.Context, path string) (bool, error)
	// ReadFile returns a file's contents and whether it exists.
	ReadFile(ctx context.Context, path string) ([]byte, bool, error)
	// WriteFile creates or replaces a file (and its parent directories).
	WriteFile(ctx context.Context, path string, data []byte) error
	// DeleteFile deletes a file; a missing file is not an error.
	DeleteFile(ctx context.Context, path string) error
}

// Lock is the held master lock.
type Lock interface {
	Held() bool
	Lost() <-chan struct{}
	Release(ctx context.Context) error
}

// SequencedLock is a Lock that has a sequencer. The master sends it on
// its admin calls to the tablet servers and its METADATA mutations, which
// the servers refuse once the lock has moved on to a newer master
// (kv/tabletserver's fence.go): a master paused past its lease cannot act
// after it wakes. A Lock without one (tests, benchmarks) sends none.
type SequencedLock interface {
	Lock
	Sequencer() (client.Sequencer, error)
}

// ResumableLock is a Lock whose session can come back from jeopardy:
// Resume waits until the same session holds it safely again, and fails
// once that session has ended.
type ResumableLock interface {
	Lock
	Resume(ctx context.Context) error
}

// File is a file in the servers directory.
type File struct {
	Name     string
	Locked   bool
	Contents []byte
}

// Options configure the master.
type Options struct {
	// Addr is where the master can be reached; it goes into the lock file.
	Addr string
	// Dir is the cellar directory in the lock service (default
	// /ls/local/cellar): the master lock is Dir/master, the servers are in
	// Dir/servers.
	Dir string
	// Coord is the lock service.
	Coord Coordinator
	// ScanInterval is how often the master looks at the servers.
	ScanInterval time.Duration
	// MaxMisses is how many scans in a row a locked server may fail to
	// answer before the master tries to take its lock.
	MaxMisses int
	// Logger receives notable events (nil: discarded).
	Logger *slog.Logger
	// OnFatal is called once when the master must stop (it lost its lock).
	OnFatal func(error)
	// RelockWait bounds the pause after the lock stopped being held
	// safely: the master waits this long for its session to come out of
	// jeopardy still holding the lock, then stops (default 10 s; negative:
	// stop at once).
	RelockWait time.Duration
	// FS and DFSRoot are the shared file system the tablet servers use;
	// the master's file GC deletes files there. Without FS there is no GC.
	FS      dfs.FS
	DFSRoot string
	// GCEvery is how many scans pass between file GC rounds (default 30).
	GCEvery int
	// MergeSize: two adjacent tablets of a table on one server whose sizes
	// add up to less than it are merged. Zero turns merges off, which keeps
	// the split points a table was created with.
	MergeSize int64
	// NoBalance turns off moves that even out the servers' tablet counts.
	NoBalance bool
	// Clock stamps Events (default time.Now).
	Clock func() time.Time
	// MaxEvents is how many recent events Events keeps (default 200).
	MaxEvents int
	// Secret is the cluster's shared secret, sent on the master's calls
	// to the tablet servers (kv/client's auth.go).
	Secret string
}

func (o Options) withDefaults() Options {
	if o.Dir == "" {
		o.Dir = "/ls/local/cellar"
	}
	if o.ScanInterval == 0 {
		o.ScanInterval = time.Second
	}
	if o.MaxMisses == 0 {
		o.MaxMisses = 3
	}
	if o.GCEvery == 0 {
		o.GCEvery = 30
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.RelockWait == 0 {
		o.RelockWait = 10 * time.Second
	}
	if o.OnFatal == nil {
		o.OnFatal = func(error) {}
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.MaxEvents == 0 {
		o.MaxEvents = 200
	}
	return o
}

// Validate checks the options.
func (o Options) Validate() error {
	if o.Addr == "" || o.Coord == nil {
		return errors.New("master: an address and a lock service are required")
	}
	if o.MaxEvents < 0 {
		return errors.New("master: MaxEvents is negative")
	}
	return nil
}

// Server is what the master knows of a tablet server.
type Server struct {
	ID      string
	Addr    string
	Tablets []*pb.TabletInfo
	// LowWater is the server's file number below which its SSTables are
	// recorded or abandoned (for the file GC).
	LowWater uint64
	// Misses counts the scans in a row it did not answer.
	Misses int
}

// Master is the cluster's master.
type Master struct {
	opts Options

	// seq is the master lock's sequencer, set once by Open; nil: none.
	seq atomic.Pointer[client.Sequencer]

	mu      sync.Mutex
	lock    Lock
	servers map[string]*Server
	conns   map[string]*grpc.ClientConn // by address
	dead    []string                    // ids, in the order they died
	client  *client.Client              // for METADATA; made on first use
	// missing counts scans in a row a tablet whose row names a live server
	// went unserved, by tabletKey.
	missing map[string]int
	// partitions are the dead servers' logs, split by tablet.
	partitions map[string]*partition
	rounds     int
	// schemaMu orders schema changes, so that a conditional one compares
	// with the schema it replaces (the master is the files' one writer).
	schemaMu sync.Mutex
	// busy is the upkeep token: a round, or an operator's split or move,
	// holds it (ops.go).
	busy chan struct{}

	evMu   sync.Mutex
	events eventRing

	stop chan struct{}
	wg   sync.WaitGroup
}

// New returns a master. It does no I/O; Open makes it active.
func New(opts Options) *Master {
	return &Master{opts: opts.withDefaults(), servers: map[string]*Server{}, conns: map[string]*grpc.ClientConn{},
		missing: map[string]int{}, partitions: map[string]*partition{}, busy: make(chan struct{}, 1), stop: make(chan struct{})}
}

// Open waits for the master lock (a standby master waits here), then
// starts the master's work.
func (m *Master) Open(ctx context.Context) error {
	if err := m.opts.Validate(); err != nil {
		return err
	}
	l, err := m.opts.Coord.Lock(ctx, m.opts.Dir+"/master", []byte(m.opts.Addr))
	if err != nil {
		return fmt.Errorf("master: take %s/master: %w", m.opts.Dir, err)
	}
	if sl, ok := l.(SequencedLock); ok {
		seq, err := sl.Sequencer()
		if err != nil {
			l.Release(ctx)
			return fmt.Errorf("master: the sequencer of %s/master: %w", m.opts.Dir, err)
		}
		m.seq.Store(&seq)
	}
	m.mu.Lock()
	m.lock = l
	m.mu.Unlock()
	seq := "none"
	if p := m.seq.Load(); p != nil {
		seq = p.String()
	}
	m.event(EventMaster, slog.LevelInfo, "master active", slog.String("addr", m.opts.Addr), slog.String("sequencer", seq))
	// Scan once before Open returns, so that the master starts from what
	// the servers serve (the paper's start-up steps 1 and 2).
	m.scan(ctx)
	m.wg.Add(1)
	go m.run(l)
	return nil
}

func (m *Master) run(l Lock) {
	defer m.wg.Done()
	ctx, cancel := m.roundCtx()
	m.round(ctx) // start-up steps 3 and 4: the root tablet, then METADATA
	cancel()
	t := time.NewTicker(m.opts.ScanInterval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-l.Lost():
			if m.retake(l) {
				continue
			}
			select {
			case <-m.stop:
				return // closed while it waited: not a loss
			default:
			}
			m.event(EventMaster, slog.LevelError, "lost the master lock; stopping", slog.String("addr", m.opts.Addr))
			m.opts.OnFatal(errors.New("master: lost the master lock"))
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), m.opts.ScanInterval*10)
			m.scan(ctx)
			cancel()
			ctx, cancel = m.roundCtx()
			m.round(ctx)
			cancel()
		}
	}
}

// retake pauses the master until its lock is held safely again by the
// same session, and reports whether it is: the session never ended, so no
// other master held the lock in between, and the master's view of the
// cluster is still its own (the lock's generation is checked too). If the
// session ended, another master may have acted, and this one stops. Rounds do not run meanwhile; an operator's call that
// does is fenced by the sequencer, which the tablet servers check with the
// cell.
func (m *Master) retake(l Lock) bool {
	rl, ok := l.(ResumableLock)
	sl, sok := l.(SequencedLock)
	old := m.seq.Load()
	if !ok || !sok || old == nil || m.opts.RelockWait < 0 {
		return false
	}
	m.event(EventMaster, slog.LevelWarn, "the master lock is not held safely (its session is in jeopardy); pausing until it is", slog.String("addr", m.opts.Addr))
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.RelockWait)
	defer cancel()
	go func() {
		select {
		case <-m.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := rl.Resume(ctx); err != nil {
		m.opts.Logger.Warn("the master lock's session did not come back", slog.Duration("relock_wait", m.opts.RelockWait), slog.Any("err", err))
		return false
	}
	seq, err := sl.Sequencer()
	if err != nil || seq.Instance != old.Instance || seq.Generation != old.Generation {
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		l.Release(rctx)
		rcancel()
		m.opts.Logger.Warn("the master lock came back in a new generation; another master may have acted", slog.String("was", old.String()), slog.Any("err", err))
		return false
	}
	m.event(EventMaster, slog.LevelInfo, "the master lock is held safely again; resuming", slog.String("addr", m.opts.Addr), slog.String("sequencer", seq.String()))
	return true
}

// roundTimeout bounds one round of assignment and upkeep: long enough to
// partition a dead server's log and load its tablets.
const roundTimeout = 10 * time.Minute

// roundCtx is the context of one round; it ends when the master stops.
func (m *Master) roundCtx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), roundTimeout)
	go func() {
		select {
		case <-m.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// scan lists the servers, asks each for its tablets, and buries the dead.
func (m *Master) scan(ctx context.Context) {
	dir := m.opts.Dir + "/servers"
	files, err := m.opts.Coord.List(ctx, dir)
	if err != nil {
		m.opts.Logger.Warn("list failed", slog.String("dir", dir), slog.Any("err", err))
		return
	}
	seen := map[string]bool{}
	for _, f := range files {
		seen[f.Name] = true
		m.mu.Lock()
		s := m.servers[f.Name]
		if s == nil {
			s = &Server{ID: f.Name}
			m.servers[f.Name] = s
		}
		s.Addr = string(f.Contents)
		m.mu.Unlock()
		if f.Locked {
			misses, err := m.refresh(ctx, f.Name)
			if err == nil || misses < m.opts.MaxMisses {
				continue
			}
			m.opts.Logger.Warn("server did not answer", slog.String("server", f.Name), slog.String("addr", s.Addr), slog.Int("misses", misses), slog.Any("err", err))
		}
		// Unlocked, or locked but silent: the server is dead only if the
		// master can take its lock, which proves the lock service is
		// reachable and the server's session is gone.
		deleted, err := m.opts.Coord.TakeAndDelete(ctx, dir+"/"+f.Name)
		if err != nil {
			m.opts.Logger.Warn("take the lock of a server failed", slog.String("server", f.Name), slog.Any("err", err))
			continue
		}
		if deleted {
			m.bury(f.Name)
		}
	}
	m.mu.Lock()
	for id := range m.servers {
		if !seen[id] {
			delete(m.servers, id) // its file was deleted by someone else
		}
	}
	m.mu.Unlock()
}

// refresh asks a server for its tablets and records the answer, or one
// more miss. It returns the server's misses in a row.
func (m *Master) refresh(ctx context.Context, id string) (int, error) {
	m.mu.Lock()
	s := m.servers[id]
	m.mu.Unlock()
	if s == nil {
		return 0, status.Errorf(codes.NotFound, "server %q is not live", id)
	}
	resp, err := m.listTablets(ctx, s.Addr)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		s.Misses++
		return s.Misses, err
	}
	s.Tablets, s.LowWater, s.Misses = resp.Tablets, resp.LowWater, 0
	return 0, nil
}

// bury forgets a dead server. Its tablets are unassigned from now on.
func (m *Master) bury(id string) {
	m.mu.Lock()
	s := m.servers[id]
	delete(m.servers, id)
	m.dead = append(m.dead, id)
	m.mu.Unlock()
	n := 0
	if s != nil {
		n = len(s.Tablets)
	}
	m.event(EventDeath, slog.LevelInfo, "server is dead; its file is deleted and its tablets are unassigned", slog.String("server", id), slog.Int("tablets", n))
}

func (m *Master) stub(addr string) (pb.TabletServerClient, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cc := m.conns[addr]
	if cc == nil {
		var err error
		opts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, m.dialOptions()...)
		cc, err = grpc.NewClient("passthrough:///"+addr, opts...)
		if err != nil {
			return nil, err
		}
		m.conns[addr] = cc
	}
	return pb.NewTabletServerClient(cc), nil
}

// dialOptions are the options of the master's connections to the tablet
// servers: the cluster's secret and the master lock's sequencer.
func (m *Master) dialOptions() []grpc.DialOption {
	return append(client.AuthDialOptions(m.opts.Secret), client.SequencerDialOptions(m.sequencer)...)
}

// sequencer returns the master lock's sequencer, if the lock has one.
func (m *Master) sequencer() (client.Sequencer, bool) {
	if p := m.seq.Load(); p != nil {
		return *p, true
	}
	return client.Sequencer{}, false
}

func (m *Master) listTablets(ctx context.Context, addr string) (*pb.ListTabletsResponse, error) {
	cli, err := m.stub(addr)
	if err != nil {
		return nil, err
	}
	// At least a second: a short scan interval must not turn a busy
	// server into a silent one.
	ctx, cancel := context.WithTimeout(ctx, max(m.opts.ScanInterval, time.Second))
	defer cancel()
	return cli.ListTablets(ctx, &pb.ListTabletsRequest{})
}

// Servers returns the live servers, by id.
func (m *Master) Servers() []Server {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Server, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Dead returns the ids of the servers the master buried, in order.
func (m *Master) Dead() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.dead...)
}

// Close stops the master and releases the master lock, so that a standby
// takes over at once.
func (m *Master) Close(ctx context.Context) error {
	close(m.stop)
	m.wg.Wait()
	m.mu.Lock()
	l, kv := m.lock, m.client
	for _, cc := range m.conns {
		cc.Close()
	}
	m.conns = map[string]*grpc.ClientConn{}
	m.mu.Unlock()
	if kv != nil {
		kv.Close()
	}
	if l != nil && l.Held() {
		return l.Release(ctx)
	}
	return nil
}
