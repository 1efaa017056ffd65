package cell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lni/dragonboat/v4"
	"github.com/lni/dragonboat/v4/config"
	dblogger "github.com/lni/dragonboat/v4/logger"
	"github.com/lni/dragonboat/v4/plugin/tan"
	"github.com/lni/dragonboat/v4/raftio"
	sm "github.com/lni/dragonboat/v4/statemachine"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/cellardb/cellar/coord"
	pb "github.com/cellardb/cellar/coord/coordpb"
	"github.com/cellardb/cellar/coord/fsm"
)

// shardID is the one Raft shard of a cell.
const shardID = 1

// machine adapts the deterministic state machine to dragonboat.
type machine struct {
	st *fsm.State
	// queued hears the events each applied command queued, to wake the
	// sessions' KeepAlives. It runs on dragonboat's apply goroutine and
	// must not block; it changes nothing replicated.
	queued func([]*pb.Delivery)
}

var marshal = proto.MarshalOptions{Deterministic: true}

func (m *machine) Update(e sm.Entry) (sm.Result, error) {
	cmd := &pb.Command{}
	var res *pb.Result
	if err := proto.Unmarshal(e.Cmd, cmd); err != nil {
		res = &pb.Result{Code: int32(coord.InvalidArgument.Code()), Message: coord.Errorf(coord.InvalidArgument, "undecodable command: %v", err).StatusMessage()}
	} else {
		res = m.st.Apply(cmd)
		if len(res.Deliveries) > 0 && m.queued != nil {
			m.queued(res.Deliveries)
		}
	}
	data, err := marshal.Marshal(res)
	return sm.Result{Value: uint64(res.Code), Data: data}, err
}

func (m *machine) Lookup(q any) (any, error) { return m.st.Lookup(q) }

func (m *machine) SaveSnapshot(w io.Writer, _ sm.ISnapshotFileCollection, _ <-chan struct{}) error {
	data, err := marshal.Marshal(m.st.Snapshot())
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

func (m *machine) RecoverFromSnapshot(r io.Reader, _ []sm.SnapshotFile, _ <-chan struct{}) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	snap := &pb.Snapshot{}
	if err := proto.Unmarshal(data, snap); err != nil {
		return fmt.Errorf("cell snapshot does not decode: %w", err)
	}
	m.st = fsm.Restore(snap)
	return nil
}

func (m *machine) Close() error { return nil }

// Replica is one replica of a cell: a dragonboat NodeHost with the cell's
// shard, and the client server. While its Raft replica leads, it is the
// cell's master.
type Replica struct {
	opts Options

	nh     *dragonboat.NodeHost
	ln     net.Listener
	server *grpc.Server

	leaderCh chan raftio.LeaderInfo
	stop     chan struct{}
	wg       sync.WaitGroup

	mu     sync.Mutex
	master *master // nil unless this replica is the master and ready
}

// New returns a replica. It does no I/O; Open starts it.
func New(opts Options) *Replica {
	return &Replica{opts: opts.Defaults(), leaderCh: make(chan raftio.LeaderInfo, 64), stop: make(chan struct{})}
}

// LeaderUpdated implements raftio.IRaftEventListener. Dragonboat calls it
// on its own goroutines; it only hands the news over.
func (r *Replica) LeaderUpdated(info raftio.LeaderInfo) {
	select {
	case r.leaderCh <- info:
	default: // the watcher also polls; a lost notice only delays it
	}
}

// quietOnce guards dragonboat's loggers, which are process-wide and read
// without locks by running NodeHosts: they may be set only once, before the
// first NodeHost starts.
var quietOnce sync.Once

// quietDragonboat lowers dragonboat's process-wide loggers: its transport
// reports every refused connection while peers start and stop, which is
// normal here, and its warnings speak of internals.
func quietDragonboat() { quietOnce.Do(setDragonboatLevels) }

func setDragonboatLevels() {
	for _, name := range []string{"dragonboat", "raft", "rsm", "logdb", "raftpb", "config", "settings", "grpc", "tan", "registry"} {
		dblogger.GetLogger(name).SetLevel(dblogger.ERROR)
	}
	dblogger.GetLogger("transport").SetLevel(dblogger.CRITICAL)
}

// Open starts the replica: its Raft node (recovering its state from disk),
// its client server, and the watcher that makes it master when it leads.
func (r *Replica) Open(ctx context.Context) error {
	o := r.opts
	if err := o.Validate(); err != nil {
		return err
	}
	quietDragonboat()
	self := o.Peers[o.ReplicaID]
	listen := o.ClientListen
	if listen == "" {
		listen = self.ClientAddr
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("cell replica %d: client listener: %w", o.ReplicaID, err)
	}
	nh, err := dragonboat.NewNodeHost(config.NodeHostConfig{
		NodeHostDir:       filepath.Join(o.Dir, "nodehost"),
		WALDir:            filepath.Join(o.Dir, "wal"),
		RTTMillisecond:    uint64(max(o.RTT/time.Millisecond, 1)),
		RaftAddress:       self.RaftAddr,
		ListenAddress:     o.RaftListen,
		RaftEventListener: r,
		// tan, dragonboat's own log store, commits with one write and one
		// fsync per batch; its default (Pebble) adds a WAL pipeline.
		// The tiny buffers suit a cell's small writes: the defaults take
		// hundreds of MiB per replica.
		Expert: config.ExpertConfig{LogDBFactory: tan.Factory, LogDB: config.GetTinyMemLogDBConfig()},
	})
	if err != nil {
		ln.Close()
		if strings.Contains(err.Error(), "not the owner of the data directory") { // dragonboat's internal ErrNotOwner
			return fmt.Errorf("cell replica %d: %s belongs to a replica with another Raft address than %s (a replica keeps its Raft address for life): %w",
				o.ReplicaID, o.Dir, self.RaftAddr, err)
		}
		return fmt.Errorf("cell replica %d: %w", o.ReplicaID, err)
	}
	r.nh = nh
	members := map[uint64]dragonboat.Target{}
	for id, p := range o.Peers {
		members[id] = p.RaftAddr
	}
	newMachine := func(uint64, uint64) sm.IStateMachine { return &machine{st: fsm.New(), queued: r.eventsQueued} }
	err = nh.StartReplica(members, false, newMachine, config.Config{
		ReplicaID:          o.ReplicaID,
		ShardID:            shardID,
		ElectionRTT:        o.ElectionRTT,
		HeartbeatRTT:       1,
		CheckQuorum:        true,
		PreVote:            true,
		SnapshotEntries:    o.SnapshotEntries,
		CompactionOverhead: o.SnapshotEntries / 2,
	})
	if err != nil {
		ln.Close()
		nh.Close()
		return fmt.Errorf("cell replica %d: start shard: %w", o.ReplicaID, err)
	}
	r.ln = ln
	r.server = grpc.NewServer(grpc.ChainUnaryInterceptor(r.authInterceptor))
	pb.RegisterChubbyServer(r.server, &server{r: r})
	r.wg.Add(2)
	go func() { defer r.wg.Done(); r.server.Serve(ln) }()
	go func() { defer r.wg.Done(); r.watchLeadership() }()
	return nil
}

// ClientAddr returns the address the client server listens on.
func (r *Replica) ClientAddr() string { return r.ln.Addr().String() }

// ID returns the replica's id.
func (r *Replica) ID() uint64 { return r.opts.ReplicaID }

// IsMaster reports whether this replica is the cell's master now.
func (r *Replica) IsMaster() bool { return r.currentMaster() != nil }

// eventsQueued wakes, on the master, the sessions that applied commands
// queued events for. Commands applied before a master is ready need no
// wake-up: every session's first KeepAlive there looks for events.
func (r *Replica) eventsQueued(ds []*pb.Delivery) {
	if m := r.currentMaster(); m != nil {
		m.wake(ds)
	}
}

func (r *Replica) currentMaster() *master {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.master
}

// Stats describe a replica for metrics and status pages.
type Stats struct {
	ID uint64
	// IsMaster: this replica leads the Raft group and serves as the cell's
	// master.
	IsMaster bool
	// Leader is the replica id of the Raft leader; 0 if none is known.
	Leader uint64
	// Sessions, Handles and Locks (nodes whose lock is held) are counted
	// in this replica's applied state, which may trail the leader's.
	Sessions, Handles, Locks int
}

// Stats returns a snapshot of the replica's state. It reads the local
// state without a Raft round trip. It is safe to call once Open has
// returned, from any goroutine; after Close it counts nothing.
func (r *Replica) Stats() Stats {
	st := Stats{ID: r.opts.ReplicaID, IsMaster: r.IsMaster()}
	if r.nh == nil {
		return st
	}
	if id, ok := r.leader(); ok {
		st.Leader = id
	}
	if v, err := r.nh.StaleRead(shardID, fsm.CountsQuery{}); err == nil {
		if c, ok := v.(fsm.Counts); ok {
			st.Sessions, st.Handles, st.Locks = c.Sessions, c.Handles, c.Locks
		}
	}
	return st
}

// leader returns the replica id of the Raft leader, if known.
func (r *Replica) leader() (uint64, bool) {
	id, _, ok, err := r.nh.GetLeaderID(shardID)
	return id, ok && err == nil
}

// advertised returns the client address that clients and peers know this
// replica by, its address in Peers. It may be a proxy's or a NAT's in
// front of the one the replica listens on (ClientListen): naming the
// listener's own address to clients would send them around the proxy.
// Only a configured port 0 needs the listener's.
func (r *Replica) advertised() string {
	if a := r.opts.Peers[r.opts.ReplicaID].ClientAddr; !strings.HasSuffix(a, ":0") {
		return a
	}
	return r.ClientAddr()
}

// masterAddr returns the client address of the current master, if known.
func (r *Replica) masterAddr() string {
	if id, ok := r.leader(); ok {
		if id == r.opts.ReplicaID {
			return r.advertised()
		}
		return r.opts.Peers[id].ClientAddr
	}
	return ""
}

// watchLeadership starts a master when this replica becomes the leader
// and stops it when it no longer is. It polls as well as listening, since
// dragonboat's notices can be dropped.
func (r *Replica) watchLeadership() {
	tick := time.NewTicker(r.opts.RTT * 5)
	defer tick.Stop()
	var cur *master
	for {
		select {
		case <-r.stop:
			if cur != nil {
				cur.stop()
			}
			return
		case <-r.leaderCh:
		case <-tick.C:
		}
		id, ok := r.leader()
		leading := ok && id == r.opts.ReplicaID
		switch {
		case leading && cur == nil:
			cur = newMaster(r)
			go r.startMaster(cur)
		case !leading && cur != nil:
			r.opts.Logger.Info("no longer master", slog.String("cell", r.opts.Cell), slog.Uint64("replica", r.opts.ReplicaID), slog.Uint64("epoch", cur.epoch))
			r.mu.Lock()
			if r.master == cur {
				r.master = nil
			}
			r.mu.Unlock()
			cur.stop()
			cur = nil
		}
	}
}

// startMaster takes over as master: bootstrap the cell if it is new, start
// a new epoch, and give every known session a fresh lease plus the grace
// period and a failover event.
func (r *Replica) startMaster(m *master) {
	for attempt := 1; m.ctx.Err() == nil; attempt++ {
		err := m.takeOver()
		if err == nil {
			r.mu.Lock()
			r.master = m
			r.mu.Unlock()
			r.opts.Logger.Info("master for epoch", slog.String("cell", r.opts.Cell), slog.Uint64("replica", r.opts.ReplicaID), slog.Uint64("epoch", m.epoch))
			m.run()
			return
		}
		// A new leader's shard is often not ready for a few RTTs; only a
		// take-over that keeps failing is news.
		if attempt%10 == 0 {
			r.opts.Logger.Warn("take-over failed, retrying", slog.String("cell", r.opts.Cell), slog.Uint64("replica", r.opts.ReplicaID), slog.Int("attempts", attempt), slog.Any("err", err))
		}
		select {
		case <-m.ctx.Done():
		case <-time.After(r.opts.RTT * 5):
		}
	}
}

// propose proposes cmd and returns its result; a failed command comes
// back as a *coord.Error. A master stamps cmd with the cell's clock first
// (master.propose); the take-over's own commands carry none, leaving the
// cell's clock as it was.
func (r *Replica) propose(ctx context.Context, cmd *pb.Command) (*pb.Result, error) {
	data, err := marshal.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	ctx, cancel := withDeadline(ctx, 10*time.Second)
	defer cancel()
	res, err := r.nh.SyncPropose(ctx, r.nh.GetNoOPSession(shardID), data)
	if err != nil {
		return nil, raftError("propose", err)
	}
	out := &pb.Result{}
	if err := proto.Unmarshal(res.Data, out); err != nil {
		return nil, fmt.Errorf("cell: undecodable result: %w", err)
	}
	if out.Code != 0 {
		return out, coord.FromStatus(int(out.Code), out.Message)
	}
	return out, nil
}

// read runs a linearizable query: a Raft read index, then the query on
// this replica's state.
func (r *Replica) read(ctx context.Context, q any) (any, error) {
	ctx, cancel := withDeadline(ctx, 10*time.Second)
	defer cancel()
	v, err := r.nh.SyncRead(ctx, shardID, q)
	if err != nil {
		var ce *coord.Error
		if errors.As(err, &ce) {
			return nil, ce
		}
		return nil, raftError("read", err)
	}
	return v, nil
}

func withDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// raftError turns a dragonboat error into a retryable one, keeping
// context errors as they are.
func raftError(op string, err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return coord.Errorf(coord.Unavailable, "cell %s: %v", op, err)
}

// Dump returns the cell's whole replicated state, read linearizably.
func (r *Replica) Dump(ctx context.Context) (*pb.Snapshot, error) {
	v, err := r.read(ctx, fsm.DumpQuery{})
	if err != nil {
		return nil, err
	}
	return v.(*pb.Snapshot), nil
}

// Close stops the replica. Sessions survive on the other replicas.
func (r *Replica) Close(ctx context.Context) error {
	select {
	case <-r.stop:
		return nil
	default:
	}
	close(r.stop)
	if r.server != nil {
		done := make(chan struct{})
		go func() { r.server.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Second):
			r.server.Stop() // held KeepAlives would keep a graceful stop waiting
		}
	}
	r.wg.Wait()
	if r.nh != nil {
		r.nh.Close()
	}
	return ctx.Err()
}
