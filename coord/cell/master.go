package cell

import (
	"context"
	"crypto/hmac"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/cellardb/cellar/coord"
	pb "github.com/cellardb/cellar/coord/coordpb"
	"github.com/cellardb/cellar/coord/fsm"
)

// liveSession is the master's in-memory view of a session: its lease (on
// this process's monotonic clock), the invalidations it must apply, and
// how far it has acknowledged its events. The events themselves are in
// the replicated state (coord/fsm), so that no failover loses one.
type liveSession struct {
	id       uint64
	leaseEnd time.Time

	ackedEvent   uint64 // the client has every event up to this seq
	trimmedEvent uint64 // events up to this seq were dropped from the replicated queue
	invals       []*pb.Invalidation
	invalSeq     uint64
	acked        uint64 // invalidations applied by the client, up to this seq

	failoverSeq   uint64 // the seq of this epoch's failover event; 0 once acked
	ackBelow      uint64
	wake          chan struct{}
	expiring      bool
	lastKeepAlive time.Time
}

func (s *liveSession) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// newLiveSession starts a session's bookkeeping on this master.
// Invalidation sequence numbers start at the epoch in the high 32 bits, so
// that they exceed every number an earlier master gave the session: the
// client ignores numbers it has seen, and its acknowledgements of an older
// master's numbers acknowledge nothing here. (Event numbers need no such
// care: the replicated state gives them, the same on every master.)
func (m *master) newLiveSession(id uint64, leaseEnd time.Time) *liveSession {
	return &liveSession{id: id, leaseEnd: leaseEnd, wake: make(chan struct{}, 1),
		invalSeq: m.epoch << 32, acked: m.epoch << 32}
}

// master is the state a replica keeps while it is the cell's master. None
// of it is replicated: a new master rebuilds it conservatively (sessions'
// event queues, which must survive, live in the replicated state).
type master struct {
	r      *Replica
	ctx    context.Context
	cancel context.CancelFunc
	epoch  uint64
	key    []byte
	lease  time.Duration

	mu         sync.Mutex
	changed    chan struct{} // closed and replaced whenever acks or sessions change
	sessions   map[uint64]*liveSession
	cachers    map[string]map[uint64]bool // path -> sessions that may cache it
	uncachable map[string]int             // paths with a write waiting on invalidations
	handles    map[uint64]string          // handle -> path, learned from Opens
	nodeMoved  map[string]chan struct{}   // path -> closed when the node's lock may have freed
	failoverAt time.Time
	wg         sync.WaitGroup

	// The cell's clock, which lock-delays are judged by, is clockBase ms
	// at clockAt and runs on Go's monotonic clock from there: a step of
	// this machine's wall clock must neither end a lock-delay early nor
	// make one last for hours. Set once by takeOver.
	clockBase int64
	clockAt   time.Time
}

func newMaster(r *Replica) *master {
	ctx, cancel := context.WithCancel(context.Background())
	return &master{r: r, ctx: ctx, cancel: cancel, lease: r.opts.Lease, changed: make(chan struct{}),
		sessions: map[uint64]*liveSession{}, cachers: map[string]map[uint64]bool{}, uncachable: map[string]int{},
		handles: map[uint64]string{}, nodeMoved: map[string]chan struct{}{}}
}

// now returns the cell's clock in milliseconds.
func (m *master) now() int64 { return m.clockBase + time.Since(m.clockAt).Milliseconds() }

// propose proposes cmd stamped with the cell's clock. Like read, it gives
// up with NotMaster when this master steps down; the outcome is then
// unknown, which a client's request id settles at the next master.
func (m *master) propose(ctx context.Context, cmd *pb.Command) (*pb.Result, error) {
	cmd.NowMs = m.now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(m.ctx, cancel)()
	res, err := m.r.propose(ctx, cmd)
	if err != nil && m.ctx.Err() != nil && res == nil {
		return nil, coord.Errorf(coord.NotMaster, "master stepped down")
	}
	return res, err
}

// read is a linearizable read for a client's call that gives up when this
// master steps down, with NotMaster so that the client goes to the new
// one. A read index issued by a deposed leader that has not heard of the
// new term yet (a paused process, just resumed) is not answered but waits
// out the call's deadline, which is the client's local lease: the client
// would find the new master only in jeopardy.
func (m *master) read(ctx context.Context, q any) (any, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(m.ctx, cancel)()
	v, err := m.r.read(ctx, q)
	if err != nil && m.ctx.Err() != nil {
		return nil, coord.Errorf(coord.NotMaster, "master stepped down")
	}
	return v, err
}

func (m *master) stop() {
	m.cancel()
	m.wg.Wait()
}

// broadcast wakes everything that waits for acks or session changes. m.mu
// must be held.
func (m *master) broadcast() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// takeOver runs the paper's master start-up: new epoch, sessions rebuilt
// from the replicated state with a fresh lease plus the grace period, a
// failover event for each.
func (m *master) takeOver() error {
	r := m.r
	ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
	defer cancel()
	v, err := r.read(ctx, fsm.InfoQuery{})
	if err != nil {
		return err
	}
	if v.(fsm.Info).Cell == "" {
		key := make([]byte, 32)
		if _, err := r.opts.Rand.Read(key); err != nil {
			return err
		}
		if _, err := r.propose(ctx, &pb.Command{Op: &pb.Command_Bootstrap{Bootstrap: &pb.Bootstrap{
			Cell: r.opts.Cell, Key: key, RootAcl: pb.ACLToProto(r.opts.RootACL)}}}); err != nil {
			return err
		}
	}
	// NewEpoch queues a failover event for every session; its result
	// lists them, which tells this master the sessions and the number of
	// each one's failover event.
	epochRes, err := r.propose(ctx, &pb.Command{Op: &pb.Command_NewEpoch{NewEpoch: &pb.NewEpoch{}}})
	if err != nil {
		return err
	}
	m.epoch = epochRes.Epoch
	v, err = r.read(ctx, fsm.InfoQuery{})
	if err != nil {
		return err
	}
	info := v.(fsm.Info)
	m.key = info.Key
	// Continue the cell's clock where the last master left it. The time
	// between its last command and now is not counted, so a failover can
	// only lengthen lock-delays, never shorten them. A new cell starts
	// from the wall clock, only so that its readings look like dates.
	m.clockBase, m.clockAt = info.ClockMs, time.Now()
	if m.clockBase == 0 {
		m.clockBase = r.opts.Clock().UnixMilli()
	}
	now := time.Now()
	m.mu.Lock()
	m.failoverAt = now
	for _, d := range epochRes.Deliveries {
		s := m.newLiveSession(d.Session, now.Add(m.lease+r.opts.Grace))
		s.failoverSeq = d.Event.Seq
		m.sessions[d.Session] = s
	}
	m.mu.Unlock()
	return nil
}

// run does the master's periodic work until it steps down: it ends the
// sessions whose lease lapsed, and (in another goroutine) trims the
// replicated event queues.
func (m *master) run() {
	// Not in m.wg: an Add here could race with stop's Wait. Both loops
	// end when m.ctx does.
	trimmed := make(chan struct{})
	go func() { defer close(trimmed); m.trimEvents() }()
	defer func() { <-trimmed }()
	tick := time.NewTicker(min(m.lease/20, 250*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-tick.C:
		}
		if !m.leads() {
			// Deposed but not told yet (paused, say): its leases are
			// stale, and a follower's proposals reach the new leader.
			continue
		}
		if !m.anyLapsed(time.Now()) {
			continue
		}
		// A master paused past its deposition runs again believing it
		// leads until it hears of the new term, and finds every lease
		// lapsed. Only a read index, which a quorum must confirm in this
		// replica's term, proves that it still leads: until then no
		// session is marked expiring, which its calls would see.
		ctx, cancel := context.WithTimeout(m.ctx, m.lease)
		_, err := m.read(ctx, fsm.InfoQuery{})
		cancel()
		if err != nil || m.ctx.Err() != nil || !m.leads() {
			continue
		}
		now := time.Now()
		var lapsed []*liveSession
		m.mu.Lock()
		for _, s := range m.sessions {
			if !s.expiring && now.After(s.leaseEnd) {
				s.expiring = true
				lapsed = append(lapsed, s)
			}
		}
		m.mu.Unlock()
		for _, s := range lapsed {
			m.wg.Add(1)
			go func(s *liveSession) {
				defer m.wg.Done()
				if err := m.endSession(m.ctx, s.id, true); err != nil {
					m.r.opts.Logger.Warn("expiring session failed", slog.String("cell", m.r.opts.Cell), slog.Uint64("session", s.id), slog.Any("err", err))
					m.mu.Lock()
					s.expiring = false // try again on a later tick
					m.mu.Unlock()
				}
			}(s)
		}
	}
}

// anyLapsed tells whether a session's lease ended before now.
func (m *master) anyLapsed(now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.sessions {
		if !s.expiring && now.After(s.leaseEnd) {
			return true
		}
	}
	return false
}

// trimEvents proposes, every EventAckInterval, one AckEvents command with
// the event acknowledgements that came in KeepAlives since the last, so
// that the replicated queues hold only what clients have not yet seen. A
// failed proposal is retried with the next batch; until then the events
// stay queued, which costs only space (and a client dropping repeats).
func (m *master) trimEvents() {
	tick := time.NewTicker(m.r.opts.EventAckInterval)
	defer tick.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-tick.C:
		}
		var acks []*pb.EventAck
		m.mu.Lock()
		for _, s := range m.sessions {
			if s.ackedEvent > s.trimmedEvent {
				acks = append(acks, &pb.EventAck{Session: s.id, Seq: s.ackedEvent})
			}
		}
		m.mu.Unlock()
		if len(acks) == 0 {
			continue
		}
		// Sorted, so that the log holds the same bytes whatever the map's order.
		sort.Slice(acks, func(i, j int) bool { return acks[i].Session < acks[j].Session })
		ctx, cancel := context.WithTimeout(m.ctx, m.r.opts.EventAckInterval*5)
		_, err := m.propose(ctx, &pb.Command{Op: &pb.Command_AckEvents{AckEvents: &pb.AckEvents{Acks: acks}}})
		cancel()
		if err != nil {
			if m.ctx.Err() == nil {
				m.r.opts.Logger.Debug("trimming event queues failed", slog.String("cell", m.r.opts.Cell), slog.Any("err", err))
			}
			continue
		}
		m.mu.Lock()
		for _, a := range acks {
			if s := m.sessions[a.Session]; s != nil {
				s.trimmedEvent = max(s.trimmedEvent, a.Seq)
			}
		}
		m.mu.Unlock()
	}
}

// session validates a session reference against the live sessions. Only
// a committed end is reported as SessionExpired: a session whose lapsed
// lease this master is still expiring gets a retryable answer (the
// EndSession may yet be refused, if this master turns out to be deposed),
// and one this master does not know is looked up in the replicated state
// first (see adopt).
func (m *master) session(ctx context.Context, ref *pb.SessionRef) (*liveSession, error) {
	if ref == nil {
		return nil, coord.Errorf(coord.InvalidArgument, "no session")
	}
	if !hmac.Equal(ref.Check, fsm.Check(m.key, ref.Id, 0)) {
		return nil, coord.Errorf(coord.SessionExpired, "session %d has expired or does not exist", ref.Id)
	}
	m.mu.Lock()
	s := m.sessions[ref.Id]
	expiring := s != nil && s.expiring
	m.mu.Unlock()
	switch {
	case expiring:
		return nil, coord.Errorf(coord.Unavailable, "session %d: its lease lapsed and its end is not committed yet", ref.Id)
	case s == nil:
		return m.adopt(ctx, ref.Id)
	}
	return s, nil
}

// adopt answers for a session this master has no lease for: SessionExpired
// if the replicated state, read after a read index, no longer has it, and
// otherwise a fresh lease. A session may be committed without this
// master's knowledge: a deposed master's CreateSession forwarded by
// dragonboat after this master's NewEpoch.
func (m *master) adopt(ctx context.Context, id uint64) (*liveSession, error) {
	v, err := m.read(ctx, fsm.EventsQuery{Session: id})
	if err != nil {
		return nil, err
	}
	if m.ctx.Err() != nil || !m.leads() {
		return nil, coord.Errorf(coord.NotMaster, "no longer the leader")
	}
	if !v.(fsm.Events).Found {
		return nil, coord.Errorf(coord.SessionExpired, "session %d has expired or does not exist", id)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sessions[id]; s != nil {
		if s.expiring {
			return nil, coord.Errorf(coord.Unavailable, "session %d: its lease lapsed and its end is not committed yet", id)
		}
		return s, nil
	}
	s := m.newLiveSession(id, time.Now().Add(m.lease))
	m.sessions[id] = s
	return s, nil
}

// wake wakes the held KeepAlives of the sessions that applied commands
// queued events for, whoever proposed the commands.
func (m *master) wake(ds []*pb.Delivery) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range ds {
		if s := m.sessions[d.Session]; s != nil {
			s.poke()
		}
	}
}

// hasEvents tells whether the session has events queued after seq, from
// this replica's state without a read index: it only decides whether a
// KeepAlive is answered at once, and the answer itself reads after one.
func (m *master) hasEvents(id, after uint64) bool {
	v, err := m.r.nh.StaleRead(shardID, fsm.EventsQuery{Session: id, After: after})
	if err != nil {
		return false
	}
	ev, ok := v.(fsm.Events)
	return ok && len(ev.Events) > 0
}

// createSession starts a session with a fresh lease.
func (m *master) createSession(ctx context.Context, principal string) (*pb.CreateSessionResponse, error) {
	res, err := m.propose(ctx, &pb.Command{Op: &pb.Command_CreateSession{CreateSession: &pb.CreateSession{Principal: principal}}})
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	s := m.newLiveSession(res.Session.Id, time.Now().Add(m.lease))
	s.lastKeepAlive = time.Now()
	m.sessions[res.Session.Id] = s
	m.mu.Unlock()
	return &pb.CreateSessionResponse{Session: res.Session, Epoch: m.epoch, LeaseMs: m.lease.Milliseconds()}, nil
}

// endSession invalidates what the session's end changes, commits it, and
// lets waiting lockers retry.
func (m *master) endSession(ctx context.Context, id uint64, expired bool) error {
	v, err := m.read(ctx, fsm.SessionPathsQuery{Session: id})
	if err != nil {
		return err
	}
	paths := v.([]string)
	done, err := m.invalidate(ctx, id, paths...)
	if err != nil {
		return err
	}
	end := &pb.EndSession{Id: id, Expired: expired}
	if expired {
		if !m.leads() {
			return coord.Errorf(coord.NotMaster, "no longer the leader")
		}
		// The FSM refuses it if this master was deposed meanwhile and the
		// new one's epoch is in the log first.
		end.Epoch = m.epoch
	}
	_, err = m.propose(ctx, &pb.Command{Op: &pb.Command_EndSession{EndSession: end}})
	done()
	if err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.sessions, id)
	for _, set := range m.cachers {
		delete(set, id)
	}
	m.broadcast()
	m.mu.Unlock()
	m.nodesMoved(paths...)
	return nil
}

// invalidate tells every session that may cache one of paths to drop it,
// and waits until each has acknowledged or its lease has lapsed. While it
// waits, and until done is called, the paths are not cacheable. writer's
// own cache is included: its library drops its copy when it writes.
//
// Right after a failover the master does not know who caches what, so it
// also waits for every session that has not acknowledged the failover
// event, but never past one lease after the failover: by then every
// client's cache from the old master's time has expired on its own.
func (m *master) invalidate(ctx context.Context, writer uint64, paths ...string) (done func(), err error) {
	type wait struct {
		s   *liveSession
		seq uint64 // invalidation seq to be acked; 0: the failover event
	}
	m.mu.Lock()
	var waits []wait
	for _, p := range paths {
		m.uncachable[p]++
		for sid := range m.cachers[p] {
			s := m.sessions[sid]
			if s == nil || sid == writer {
				continue // the writer's library dropped its own copy before it wrote
			}
			s.invalSeq++
			s.invals = append(s.invals, &pb.Invalidation{Path: p, Seq: s.invalSeq})
			s.poke()
			waits = append(waits, wait{s, s.invalSeq})
		}
		delete(m.cachers, p)
	}
	failoverEnd := m.failoverAt.Add(m.lease)
	if time.Now().Before(failoverEnd) {
		for _, s := range m.sessions {
			if s.failoverSeq != 0 {
				waits = append(waits, wait{s, 0})
			}
		}
	}
	m.mu.Unlock()
	done = func() {
		m.mu.Lock()
		for _, p := range paths {
			if m.uncachable[p]--; m.uncachable[p] == 0 {
				delete(m.uncachable, p)
			}
		}
		m.mu.Unlock()
	}
	for {
		m.mu.Lock()
		now := time.Now()
		pending := 0
		var next time.Time
		for _, w := range waits {
			live := m.sessions[w.s.id] == w.s && now.Before(w.s.leaseEnd)
			var ok bool
			if w.seq == 0 {
				ok = w.s.failoverSeq == 0 || !now.Before(failoverEnd)
				if next.IsZero() || failoverEnd.Before(next) {
					next = failoverEnd
				}
			} else {
				ok = w.s.acked >= w.seq
			}
			if live && !ok {
				pending++
				if next.IsZero() || w.s.leaseEnd.Before(next) {
					next = w.s.leaseEnd
				}
			}
		}
		ch := m.changed
		m.mu.Unlock()
		if pending == 0 {
			return done, nil
		}
		t := time.NewTimer(time.Until(next) + time.Millisecond)
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			done()
			return func() {}, ctx.Err()
		case <-m.ctx.Done():
			t.Stop()
			done()
			return func() {}, coord.Errorf(coord.NotMaster, "master stepped down")
		}
		t.Stop()
	}
}

// registerCacher records that s may cache path, unless a write to path is
// waiting on invalidations. It reports whether the copy may be cached.
func (m *master) registerCacher(s *liveSession, path string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.uncachable[path] > 0 || s.failoverSeq != 0 {
		return false
	}
	set := m.cachers[path]
	if set == nil {
		set = map[uint64]bool{}
		m.cachers[path] = set
	}
	set[s.id] = true
	return true
}

// handlePath returns the path of a handle, from memory or the state.
func (m *master) handlePath(ctx context.Context, id uint64) (string, error) {
	m.mu.Lock()
	p, ok := m.handles[id]
	m.mu.Unlock()
	if ok {
		return p, nil
	}
	v, err := m.read(ctx, fsm.HandleQuery{Handle: id})
	if err != nil {
		return "", err
	}
	info := v.(fsm.HandleInfo)
	if !info.Found {
		return "", coord.Errorf(coord.InvalidHandle, "handle %d is not open", id)
	}
	m.mu.Lock()
	m.handles[id] = info.Path
	m.mu.Unlock()
	return info.Path, nil
}

// moved returns a channel that closes when the lock of path may have
// changed hands.
func (m *master) moved(path string) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := m.nodeMoved[path]
	if ch == nil {
		ch = make(chan struct{})
		m.nodeMoved[path] = ch
	}
	return ch
}

func (m *master) nodesMoved(paths ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range paths {
		if ch := m.nodeMoved[p]; ch != nil {
			close(ch)
			delete(m.nodeMoved, p)
		}
	}
}

// leads reports whether this replica is the Raft leader now. A read
// index does not prove it: dragonboat forwards a follower's to the
// leader.
func (m *master) leads() bool {
	id, ok := m.r.leader()
	return ok && id == m.r.opts.ReplicaID
}

// keepAlive takes the client's acknowledgements, holds the call until the
// lease nears its end or there is news, confirms that this replica still
// leads, and extends the lease.
func (m *master) keepAlive(ctx context.Context, req *pb.KeepAliveRequest) (*pb.KeepAliveResponse, error) {
	arrived := time.Now()
	// held is the time the call waited for news on purpose; the hook hears
	// the rest, which is the work of answering (mostly the read index).
	var held time.Duration
	if fn := m.r.opts.KeepAlive; fn != nil {
		defer func() { fn(time.Since(arrived) - held) }()
	}
	s, err := m.session(ctx, req.Session)
	if err != nil {
		if !m.leads() {
			return nil, coord.Errorf(coord.NotMaster, "no longer the leader")
		}
		var ce *coord.Error
		if errors.As(err, &ce) && ce.Kind == coord.SessionExpired {
			return &pb.KeepAliveResponse{Expired: true, Epoch: m.epoch}, nil
		}
		return nil, err
	}
	// A wake-up left from before this call is stale: what it announced is
	// either acknowledged or found by hasEvents below. Events applied
	// after hasEvents looks poke again.
	select {
	case <-s.wake:
	default:
	}
	m.mu.Lock()
	s.lastKeepAlive = arrived
	s.ackedEvent = max(s.ackedEvent, req.AckedEventSeq)
	if s.failoverSeq != 0 && req.AckedEventSeq >= s.failoverSeq {
		s.failoverSeq = 0
	}
	for len(s.invals) > 0 && s.invals[0].Seq <= req.AckedInvalidationSeq {
		s.invals = s.invals[1:]
	}
	s.acked = max(s.acked, req.AckedInvalidationSeq)
	s.ackBelow = max(s.ackBelow, req.RequestAckBelow)
	news := len(s.invals) > 0
	m.broadcast()
	leaseEnd := s.leaseEnd
	m.mu.Unlock()
	news = news || m.hasEvents(s.id, req.AckedEventSeq)

	// Hold the call until news arrives or the lease is about to run out,
	// leaving the reply a quarter of the lease to reach the client (and
	// the read index below its time).
	guard := m.lease / 4
	if !news {
		waitFrom := time.Now()
		t := time.NewTimer(time.Until(leaseEnd.Add(-guard)))
		select {
		case <-s.wake:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			held = time.Since(waitFrom)
			return nil, ctx.Err()
		case <-m.ctx.Done():
			t.Stop()
			held = time.Since(waitFrom)
			return nil, coord.Errorf(coord.NotMaster, "master stepped down")
		}
		t.Stop()
		held = time.Since(waitFrom)
	}
	// Only a leader that a quorum still follows may extend a lease; the
	// same read index makes the events read here every event committed
	// so far. Those after the client's acknowledgement go out, possibly
	// again (an answer may be lost): the client drops numbers it has seen.
	v, err := m.read(ctx, fsm.EventsQuery{Session: s.id, After: req.AckedEventSeq})
	if err != nil {
		return nil, err
	}
	events := v.(fsm.Events)
	if m.ctx.Err() != nil {
		return nil, coord.Errorf(coord.NotMaster, "master stepped down")
	}
	if !m.leads() {
		// Deposed while the call was held (paused, say), before
		// m.ctx heard of it: its leases are stale, and "expired"
		// from it would end a session the new master keeps.
		return nil, coord.Errorf(coord.NotMaster, "no longer the leader")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !events.Found {
		return &pb.KeepAliveResponse{Expired: true, Epoch: m.epoch}, nil
	}
	if m.sessions[s.id] != s || s.expiring {
		// Being expired (or just ended) here: "expired" only once the
		// end is committed, which the client's next try finds.
		return nil, coord.Errorf(coord.Unavailable, "session %d: its lease lapsed and its end is not committed yet", s.id)
	}
	// The lease runs from now; the client learns how long the call was
	// held, so that its own reckoning starts no later than this.
	now := time.Now()
	s.leaseEnd = now.Add(m.lease)
	return &pb.KeepAliveResponse{LeaseMs: m.lease.Milliseconds(), HeldMs: now.Sub(arrived).Milliseconds(), Epoch: m.epoch,
		Events: events.Events, Invalidations: append([]*pb.Invalidation(nil), s.invals...)}, nil
}

// mutate runs a command that changes the node at path: invalidate the
// caches, commit (which queues the events), and wake lockers waiting on
// it.
func (m *master) mutate(ctx context.Context, s *liveSession, path string, cmd *pb.Command) (*pb.Result, error) {
	done, err := m.invalidate(ctx, s.id, path)
	if err != nil {
		return nil, err
	}
	cmd.Session = s.id
	m.mu.Lock()
	if v, ok := ctx.Value(ackBelowKey{}).(uint64); ok {
		s.ackBelow = max(s.ackBelow, v)
	}
	cmd.AckBelow = s.ackBelow
	m.mu.Unlock()
	res, err := m.propose(ctx, cmd)
	done()
	if mayFreeLock(cmd) {
		m.nodesMoved(path)
	}
	return res, err
}

// mayFreeLock tells whether cmd can let a waiting locker in. Waking waiters
// on anything else would make each retry wake the others (and itself),
// and each retry is a Raft proposal.
func mayFreeLock(cmd *pb.Command) bool {
	switch cmd.Op.(type) {
	case *pb.Command_Release, *pb.Command_Close, *pb.Command_Delete:
		return true
	}
	return false
}

// sessionsByID lists live session ids, for tests and status pages.
func (m *master) sessionIDs() []uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]uint64, 0, len(m.sessions))
	for id := range m.sessions {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
