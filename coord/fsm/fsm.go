// Package fsm is the replicated state machine of a cellar lock cell: the
// namespace of files and directories, sessions, handles, locks and
// sequencers, as the Chubby paper describes them. Every replica applies the
// same commands in the same order and reaches the same state.
//
// The state machine is deterministic. It reads no clock and no randomness:
// time arrives as each command's now_ms (the cell's clock, which each master
// advances by its monotonic clock from the value it found at take-over, so
// that no wall clock step moves it; the machine keeps the largest it has
// seen, so time never runs backwards for it) and the secret behind check digits arrives in the Bootstrap
// command. Lock-delay is judged against that time. Leases are not here:
// they live in the master's memory (coord/cell) and end in an EndSession
// command.
//
// Events are part of the replicated state. Applying a command appends the
// events it causes to the queues of the sessions they are for, numbered
// per session (1, 2, 3… for the session's life), and lists them in the
// result too, so the master knows whom to wake. Whichever replica is
// master then serves each session the events after the last number its
// client acknowledged, read after a Raft read index; an AckEvents command
// drops acknowledged events. So no master failover loses or reorders an
// event, and a client that sees one twice knows it by its number. A queue
// holds at most MaxPendingEvents: one that overflows (a client out of
// touch while much changes) is replaced by a single EVENTS_LOST event.
//
// Commands that carry a session and a request id are idempotent: the
// result of each is recorded and returned again if the same request is
// applied twice (a client retrying after a failover). Results below the
// session's ack_below are forgotten.
package fsm

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/cellardb/cellar/coord"
	pb "github.com/cellardb/cellar/coord/coordpb"
)

type node struct {
	path      string
	dir       bool
	ephemeral bool
	contents  []byte
	stat      coord.Stat
	// lockDelayUntil: the lock of a holder that failed cannot be taken
	// again before this time (ms).
	lockDelayUntil int64
	holders        map[uint64]coord.LockMode // handle -> mode
	handles        map[uint64]bool           // open handles
	children       map[string]bool           // base names, for directories
}

type session struct {
	id        uint64
	principal string
	handles   map[uint64]bool
	results   map[uint64]*pb.Result
	events    []*pb.Event // not yet acknowledged, in seq order
	eventSeq  uint64      // the last seq given
}

// MaxPendingEvents bounds a session's queue of unacknowledged events. A
// live client acknowledges within a KeepAlive round trip, so only one out
// of touch for long (in jeopardy, or partitioned until its grace ends)
// while its watched nodes change a lot reaches it; the queue then gives
// way to one EVENTS_LOST event rather than growing the replicated state
// without bound.
const MaxPendingEvents = 1024

// queue appends e to the session's queue, numbering it, and returns the
// event as queued: e itself, or the EVENTS_LOST event that replaced a full
// queue (and e with it).
func (sess *session) queue(e *pb.Event, limit int) *pb.Event {
	sess.eventSeq++
	if len(sess.events) >= limit {
		e = &pb.Event{Type: pb.Event_EVENTS_LOST}
		sess.events = nil
	}
	e.Seq = sess.eventSeq
	sess.events = append(sess.events, e)
	return e
}

// ack drops the events up to and including seq.
func (sess *session) ack(seq uint64) {
	i := 0
	for i < len(sess.events) && sess.events[i].Seq <= seq {
		i++
	}
	if i > 0 {
		sess.events = slices.Clone(sess.events[i:])
	}
}

type handle struct {
	id        uint64
	session   uint64
	path      string
	instance  uint64
	mode      coord.Mode
	mask      coord.EventMask
	lockDelay int64 // ms
	epoch     uint64
	held      coord.LockMode
	seq       *pb.Sequencer
}

// State is a cell's replicated state.
type State struct {
	cell         string
	key          []byte
	epoch        uint64
	nextSession  uint64
	nextHandle   uint64
	nextInstance uint64
	clock        int64
	nodes        map[string]*node
	sessions     map[uint64]*session
	handles      map[uint64]*handle
	// maxEvents is MaxPendingEvents; tests lower it to reach the bound.
	maxEvents int
}

// New returns an empty state; the first command must be a Bootstrap.
func New() *State {
	return &State{nodes: map[string]*node{}, sessions: map[uint64]*session{}, handles: map[uint64]*handle{},
		nextSession: 1, nextHandle: 1, nextInstance: 1, maxEvents: MaxPendingEvents}
}

func fail(k coord.Kind, format string, args ...any) *pb.Result {
	return &pb.Result{Code: int32(k.Code()), Message: coord.Errorf(k, format, args...).StatusMessage()}
}

// Check returns the check digits of a session (handle == 0) or a handle.
func Check(key []byte, session, handle uint64) []byte {
	m := hmac.New(sha256.New, key)
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], session)
	binary.BigEndian.PutUint64(b[8:], handle)
	m.Write(b[:])
	return m.Sum(nil)[:8]
}

// Cell returns the cell's name ("" before Bootstrap).
func (s *State) Cell() string { return s.cell }

// Key returns the secret behind check digits.
func (s *State) Key() []byte { return s.key }

// Apply applies one command and returns its result.
func (s *State) Apply(cmd *pb.Command) *pb.Result {
	s.clock = max(s.clock, cmd.NowMs)
	var sess *session
	if cmd.Session != 0 {
		sess = s.sessions[cmd.Session]
		if sess != nil && cmd.RequestId != 0 {
			if r, ok := sess.results[cmd.RequestId]; ok {
				return r
			}
			for id := range sess.results {
				if id < cmd.AckBelow {
					delete(sess.results, id)
				}
			}
		}
	}
	r := s.apply(cmd)
	r.Epoch = s.epoch
	s.queueDeliveries(r.Deliveries)
	if sess != nil && cmd.RequestId != 0 && s.sessions[sess.id] == sess {
		rec := &pb.Result{Code: r.Code, Message: r.Message, Epoch: r.Epoch, Session: r.Session, Open: r.Open,
			Stat: r.Stat, Acquired: r.Acquired, Sequencer: r.Sequencer, RetryAfterMs: r.RetryAfterMs}
		sess.results[cmd.RequestId] = rec
	}
	return r
}

// queueDeliveries appends each delivery's event to its session's queue;
// each delivery then names the event as queued, with its number. The
// queue keeps its own copy, so that the result never aliases the state.
func (s *State) queueDeliveries(ds []*pb.Delivery) {
	for _, d := range ds {
		sess := s.sessions[d.Session]
		if sess == nil || d.Event == nil {
			continue
		}
		q := sess.queue(&pb.Event{Type: d.Event.Type, Handle: d.Event.Handle, Path: d.Event.Path}, s.maxEvents)
		d.Event = &pb.Event{Type: q.Type, Handle: q.Handle, Path: q.Path, Seq: q.Seq}
	}
}

func (s *State) apply(cmd *pb.Command) *pb.Result {
	if s.cell == "" {
		if b, ok := cmd.Op.(*pb.Command_Bootstrap); ok {
			return s.bootstrap(b.Bootstrap)
		}
		return fail(coord.Unavailable, "the cell is not bootstrapped yet")
	}
	switch op := cmd.Op.(type) {
	case *pb.Command_Bootstrap:
		return &pb.Result{} // a second bootstrap is a no-op
	case *pb.Command_NewEpoch:
		s.epoch++
		// Every session hears of the failover in its queue, in order with
		// the events before and after it.
		var d deliveries
		for _, id := range sortedKeys(s.sessions) {
			d = append(d, &pb.Delivery{Session: id, Event: &pb.Event{Type: pb.Event_MASTER_FAILOVER}})
		}
		return &pb.Result{Deliveries: d}
	case *pb.Command_AckEvents:
		for _, a := range op.AckEvents.Acks {
			if sess := s.sessions[a.GetSession()]; sess != nil {
				sess.ack(a.GetSeq())
			}
		}
		return &pb.Result{}
	case *pb.Command_CreateSession:
		id := s.nextSession
		s.nextSession++
		s.sessions[id] = &session{id: id, principal: op.CreateSession.Principal, handles: map[uint64]bool{}, results: map[uint64]*pb.Result{}}
		return &pb.Result{Session: &pb.SessionRef{Id: id, Check: Check(s.key, id, 0)}}
	case *pb.Command_EndSession:
		if e := op.EndSession.Epoch; op.EndSession.Expired && e != 0 && e != s.epoch {
			// Decided on a deposed master's leases: the current master
			// may have extended this session since.
			return fail(coord.NotMaster, "session %d: expiry decided in master epoch %d, now %d", op.EndSession.Id, e, s.epoch)
		}
		return s.endSession(op.EndSession.Id, op.EndSession.Expired)
	case *pb.Command_Open:
		return s.open(op.Open)
	case *pb.Command_Close:
		h, r := s.handleOf(op.Close.Session, op.Close.Handle, false)
		if r != nil {
			return r
		}
		var d deliveries
		s.closeHandle(h, false, &d)
		return &pb.Result{Deliveries: d}
	case *pb.Command_SetContents:
		return s.setContents(op.SetContents)
	case *pb.Command_SetAcl:
		return s.setACL(op.SetAcl)
	case *pb.Command_Delete:
		return s.delete(op.Delete)
	case *pb.Command_TryAcquire:
		return s.tryAcquire(op.TryAcquire)
	case *pb.Command_Release:
		h, r := s.handleOf(op.Release.Session, op.Release.Handle, true)
		if r != nil {
			return r
		}
		if h.held == coord.Unlocked {
			return fail(coord.NotHeld, "handle %d does not hold the lock of %s", h.id, h.path)
		}
		s.release(h, false)
		return &pb.Result{}
	case *pb.Command_SetSequencer:
		h, r := s.handleOf(op.SetSequencer.Session, op.SetSequencer.Handle, true)
		if r != nil {
			return r
		}
		if op.SetSequencer.Sequencer == nil {
			h.seq = nil
			return &pb.Result{}
		}
		if err := s.checkSequencer(op.SetSequencer.Sequencer); err != nil {
			return fail(coord.StaleSequencer, "%v", err)
		}
		h.seq = op.SetSequencer.Sequencer
		return &pb.Result{}
	}
	return fail(coord.InvalidArgument, "unknown command %T", cmd.Op)
}

func (s *State) bootstrap(b *pb.Bootstrap) *pb.Result {
	if b.Cell == "" || len(b.Key) < 16 {
		return fail(coord.InvalidArgument, "bootstrap needs a cell name and a key of at least 16 bytes")
	}
	s.cell, s.key = b.Cell, append([]byte(nil), b.Key...)
	acl := coord.ACL{}
	if b.RootAcl != nil {
		acl = coord.ACL{Read: b.RootAcl.Read, Write: b.RootAcl.Write, ChangeACL: b.RootAcl.ChangeAcl}
	}
	s.newNode("/", true, false, nil, acl)
	s.newNode(coord.ACLDir, true, false, nil, acl)
	s.nodes["/"].children[coord.Base(coord.ACLDir)] = true
	return &pb.Result{}
}

func (s *State) newNode(path string, dir, ephemeral bool, contents []byte, acl coord.ACL) *node {
	n := &node{path: path, dir: dir, ephemeral: ephemeral, contents: contents,
		holders: map[uint64]coord.LockMode{}, handles: map[uint64]bool{}}
	if dir {
		n.children = map[string]bool{}
	}
	n.stat = coord.Stat{Instance: s.nextInstance, IsDirectory: dir, Ephemeral: ephemeral, ACL: acl,
		Length: uint64(len(contents)), Checksum: checksum(contents)}
	s.nextInstance++
	s.nodes[path] = n
	return n
}

func checksum(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// allowed reports whether principal is on the ACL file named name.
func (s *State) allowed(principal, name string) bool {
	if name == "" {
		return true
	}
	f := s.nodes[coord.ACLDir+"/"+name]
	if f == nil || f.dir {
		return false
	}
	for _, line := range strings.Split(string(f.contents), "\n") {
		line = strings.TrimSpace(line)
		if line == principal || line == "*" {
			return true
		}
	}
	return false
}

func (s *State) permit(sess *session, n *node, mode coord.Mode) *pb.Result {
	check := func(m coord.Mode, acl, what string) *pb.Result {
		if mode&m != 0 && !s.allowed(sess.principal, acl) {
			return fail(coord.PermissionDenied, "principal %q may not %s %s (ACL %q)", sess.principal, what, n.path, acl)
		}
		return nil
	}
	if r := check(coord.ModeRead, n.stat.ACL.Read, "read"); r != nil {
		return r
	}
	if r := check(coord.ModeWrite, n.stat.ACL.Write, "write or lock"); r != nil {
		return r
	}
	return check(coord.ModeChangeACL, n.stat.ACL.ChangeACL, "change the ACL names of")
}

func (s *State) sessionOf(ref *pb.SessionRef) (*session, *pb.Result) {
	if ref == nil {
		return nil, fail(coord.InvalidArgument, "no session")
	}
	sess := s.sessions[ref.Id]
	if sess == nil || !hmac.Equal(ref.Check, Check(s.key, ref.Id, 0)) {
		return nil, fail(coord.SessionExpired, "session %d does not exist", ref.Id)
	}
	return sess, nil
}

// handleOf validates a handle reference of a session. live also demands
// that the handle's node still exists and its sequencer still holds.
func (s *State) handleOf(sref *pb.SessionRef, href *pb.HandleRef, live bool) (*handle, *pb.Result) {
	sess, r := s.sessionOf(sref)
	if r != nil {
		return nil, r
	}
	if href == nil {
		return nil, fail(coord.InvalidArgument, "no handle")
	}
	h := s.handles[href.Id]
	if h == nil || h.session != sess.id || !hmac.Equal(href.Check, Check(s.key, sess.id, href.Id)) {
		return nil, fail(coord.InvalidHandle, "handle %d is not open in session %d", href.Id, sess.id)
	}
	if live {
		if n := s.nodes[h.path]; n == nil || n.stat.Instance != h.instance {
			return nil, fail(coord.InvalidHandle, "%s was deleted after handle %d was opened", h.path, h.id)
		}
		if h.seq != nil {
			if err := s.checkSequencer(h.seq); err != nil {
				return nil, fail(coord.StaleSequencer, "handle %d: %v", h.id, err)
			}
		}
	}
	return h, nil
}

// deliveries collects events for sessions, in a deterministic order.
type deliveries []*pb.Delivery

// notify sends t about path to every handle open on n that asked for it.
func (s *State) notify(d *deliveries, n *node, t coord.EventType, path string) {
	if n == nil {
		return
	}
	for _, id := range sortedKeys(n.handles) {
		h := s.handles[id]
		if h.mask.Has(t) {
			*d = append(*d, &pb.Delivery{Session: h.session, Event: &pb.Event{Type: pb.Event_Type(t), Handle: h.id, Path: path}})
		}
	}
}

func sortedKeys[V any](m map[uint64]V) []uint64 {
	keys := make([]uint64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (s *State) open(req *pb.OpenRequest) *pb.Result {
	sess, r := s.sessionOf(req.Session)
	if r != nil {
		return r
	}
	path, err := coord.CleanPath(req.Path)
	if err != nil {
		return fail(coord.InvalidArgument, "%v", err)
	}
	mode := coord.Mode(req.Mode)
	if mode&^(coord.ModeRead|coord.ModeWrite|coord.ModeChangeACL) != 0 {
		return fail(coord.InvalidArgument, "unknown mode bits %#x", req.Mode)
	}
	if req.LockDelayMs < 0 || req.LockDelayMs > coord.MaxLockDelay.Milliseconds() {
		return fail(coord.InvalidArgument, "lock-delay of %d ms is outside [0, %d]", req.LockDelayMs, coord.MaxLockDelay.Milliseconds())
	}
	c := req.Create
	if c == nil {
		c = &pb.CreateOptions{}
	}
	if len(c.Contents) > coord.MaxContents {
		return fail(coord.InvalidArgument, "contents of %d bytes exceed %d", len(c.Contents), coord.MaxContents)
	}
	var d deliveries
	n := s.nodes[path]
	created := false
	switch {
	case n != nil && c.MustCreate:
		return fail(coord.Exists, "%s exists", path)
	case n == nil && !c.Create && !c.MustCreate:
		return fail(coord.NotFound, "%s does not exist", path)
	case n == nil:
		parent := s.nodes[coord.Parent(path)]
		if parent == nil {
			return fail(coord.NotFound, "parent directory of %s does not exist", path)
		}
		if !parent.dir {
			return fail(coord.NotDirectory, "%s is not a directory", parent.path)
		}
		if !s.allowed(sess.principal, parent.stat.ACL.Write) {
			return fail(coord.PermissionDenied, "principal %q may not create nodes in %s (ACL %q)", sess.principal, parent.path, parent.stat.ACL.Write)
		}
		if c.Directory && len(c.Contents) > 0 {
			return fail(coord.InvalidArgument, "a directory has no contents")
		}
		acl := parent.stat.ACL
		if c.Acl != nil {
			if c.Acl.Read != "" {
				acl.Read = c.Acl.Read
			}
			if c.Acl.Write != "" {
				acl.Write = c.Acl.Write
			}
			if c.Acl.ChangeAcl != "" {
				acl.ChangeACL = c.Acl.ChangeAcl
			}
		}
		n = s.newNode(path, c.Directory, c.Ephemeral, append([]byte(nil), c.Contents...), acl)
		if !n.dir {
			n.stat.ContentGeneration = 1
		}
		parent.children[coord.Base(path)] = true
		created = true
		s.notify(&d, parent, coord.EventChildAdded, path)
	}
	if r := s.permit(sess, n, mode); r != nil {
		if created {
			s.removeNode(n, &d)
		}
		return r
	}
	h := &handle{id: s.nextHandle, session: sess.id, path: path, instance: n.stat.Instance, mode: mode,
		mask: coord.EventMask(req.EventMask), lockDelay: req.LockDelayMs, epoch: s.epoch}
	s.nextHandle++
	s.handles[h.id] = h
	sess.handles[h.id] = true
	n.handles[h.id] = true
	st := s.statOf(n)
	return &pb.Result{Deliveries: d, Open: &pb.OpenResponse{
		Handle:  &pb.HandleRef{Id: h.id, Check: Check(s.key, sess.id, h.id), Epoch: h.epoch},
		Created: created,
		Stat:    st,
	}}
}

// removeNode deletes n, releases its lock and invalidates the handles
// still open on it.
func (s *State) removeNode(n *node, d *deliveries) {
	for _, id := range sortedKeys(n.handles) {
		h := s.handles[id]
		if h.mask.Has(coord.EventHandleInvalid) {
			*d = append(*d, &pb.Delivery{Session: h.session, Event: &pb.Event{Type: pb.Event_HANDLE_INVALID, Handle: h.id, Path: n.path}})
		}
		h.held = coord.Unlocked
	}
	delete(s.nodes, n.path)
	if parent := s.nodes[coord.Parent(n.path)]; parent != nil && n.path != "/" {
		delete(parent.children, coord.Base(n.path))
		s.notify(d, parent, coord.EventChildRemoved, n.path)
		if parent.ephemeral && len(parent.handles) == 0 && len(parent.children) == 0 {
			s.removeNode(parent, d)
		}
	}
}

// closeHandle closes h; expired says its session lapsed, which gives a
// held lock its lock-delay. An ephemeral node goes with its last handle.
func (s *State) closeHandle(h *handle, expired bool, d *deliveries) {
	if h.held != coord.Unlocked {
		s.release(h, expired)
	}
	delete(s.handles, h.id)
	if sess := s.sessions[h.session]; sess != nil {
		delete(sess.handles, h.id)
	}
	n := s.nodes[h.path]
	if n == nil || n.stat.Instance != h.instance {
		return
	}
	delete(n.handles, h.id)
	if n.ephemeral && len(n.handles) == 0 && len(n.children) == 0 {
		s.removeNode(n, d)
	}
}

func (s *State) release(h *handle, failed bool) {
	n := s.nodes[h.path]
	h.held = coord.Unlocked
	if n == nil || n.stat.Instance != h.instance {
		return
	}
	delete(n.holders, h.id)
	if failed && h.lockDelay > 0 {
		n.lockDelayUntil = max(n.lockDelayUntil, s.clock+h.lockDelay)
	}
	s.refreshLock(n)
}

func (s *State) refreshLock(n *node) {
	n.stat.LockMode, n.stat.LockHolders = coord.Unlocked, len(n.holders)
	for _, m := range n.holders {
		n.stat.LockMode = max(n.stat.LockMode, m)
	}
}

func (s *State) endSession(id uint64, expired bool) *pb.Result {
	sess := s.sessions[id]
	if sess == nil {
		return &pb.Result{} // already gone: ending is idempotent
	}
	var d deliveries
	for _, hid := range sortedKeys(sess.handles) {
		s.closeHandle(s.handles[hid], expired, &d)
	}
	delete(s.sessions, id)
	// Nobody hears about its own session's end.
	out := d[:0]
	for _, x := range d {
		if x.Session != id {
			out = append(out, x)
		}
	}
	return &pb.Result{Deliveries: out}
}

func (s *State) setContents(req *pb.SetContentsRequest) *pb.Result {
	h, r := s.handleOf(req.Session, req.Handle, true)
	if r != nil {
		return r
	}
	n := s.nodes[h.path]
	if h.mode&coord.ModeWrite == 0 {
		return fail(coord.PermissionDenied, "handle %d on %s was not opened for writing", h.id, h.path)
	}
	if n.dir {
		return fail(coord.IsDirectory, "%s is a directory", n.path)
	}
	if len(req.Contents) > coord.MaxContents {
		return fail(coord.InvalidArgument, "contents of %d bytes exceed %d", len(req.Contents), coord.MaxContents)
	}
	if req.HasIfGeneration && req.IfGeneration != n.stat.ContentGeneration {
		return fail(coord.GenerationMismatch, "%s is at content generation %d, not %d", n.path, n.stat.ContentGeneration, req.IfGeneration)
	}
	n.contents = append([]byte(nil), req.Contents...)
	n.stat.ContentGeneration++
	n.stat.Length = uint64(len(n.contents))
	n.stat.Checksum = checksum(n.contents)
	var d deliveries
	s.notify(&d, n, coord.EventContentsModified, n.path)
	s.notify(&d, s.nodes[coord.Parent(n.path)], coord.EventChildModified, n.path)
	return &pb.Result{Deliveries: d, Stat: s.statOf(n)}
}

func (s *State) setACL(req *pb.SetACLRequest) *pb.Result {
	h, r := s.handleOf(req.Session, req.Handle, true)
	if r != nil {
		return r
	}
	if h.mode&coord.ModeChangeACL == 0 {
		return fail(coord.PermissionDenied, "handle %d on %s was not opened to change ACL names", h.id, h.path)
	}
	if req.Acl == nil {
		return fail(coord.InvalidArgument, "no ACL names")
	}
	n := s.nodes[h.path]
	n.stat.ACL = coord.ACL{Read: req.Acl.Read, Write: req.Acl.Write, ChangeACL: req.Acl.ChangeAcl}
	n.stat.ACLGeneration++
	var d deliveries
	s.notify(&d, s.nodes[coord.Parent(n.path)], coord.EventChildModified, n.path)
	return &pb.Result{Deliveries: d, Stat: s.statOf(n)}
}

func (s *State) delete(req *pb.HandleRequest) *pb.Result {
	h, r := s.handleOf(req.Session, req.Handle, true)
	if r != nil {
		return r
	}
	if h.mode&coord.ModeWrite == 0 {
		return fail(coord.PermissionDenied, "handle %d on %s was not opened for writing", h.id, h.path)
	}
	n := s.nodes[h.path]
	if n.path == "/" || n.path == coord.ACLDir {
		return fail(coord.PermissionDenied, "%s cannot be deleted", n.path)
	}
	if len(n.children) > 0 {
		return fail(coord.NotEmpty, "%s has %d children", n.path, len(n.children))
	}
	var d deliveries
	s.removeNode(n, &d)
	return &pb.Result{Deliveries: d}
}

func (s *State) tryAcquire(req *pb.AcquireRequest) *pb.Result {
	h, r := s.handleOf(req.Session, req.Handle, true)
	if r != nil {
		return r
	}
	if h.mode&coord.ModeWrite == 0 {
		return fail(coord.PermissionDenied, "locking %s needs a handle opened for writing", h.path)
	}
	mode := coord.LockMode(req.Mode)
	if mode != coord.Shared && mode != coord.Exclusive {
		return fail(coord.InvalidArgument, "lock mode %d", req.Mode)
	}
	n := s.nodes[h.path]
	if h.held == mode {
		return &pb.Result{Acquired: true, Sequencer: s.sequencerOf(n, mode)}
	}
	if h.held != coord.Unlocked {
		return fail(coord.InvalidArgument, "handle %d already holds the lock of %s in %s mode", h.id, h.path, h.held)
	}
	busy := false
	for _, m := range n.holders {
		if m == coord.Exclusive || mode == coord.Exclusive {
			busy = true
		}
	}
	if busy || s.clock < n.lockDelayUntil {
		var d deliveries
		for _, id := range sortedKeys(n.holders) {
			if hh := s.handles[id]; hh.mask.Has(coord.EventConflictingLock) {
				d = append(d, &pb.Delivery{Session: hh.session, Event: &pb.Event{Type: pb.Event_CONFLICTING_LOCK, Handle: hh.id, Path: n.path}})
			}
		}
		res := &pb.Result{Deliveries: d}
		if !busy {
			res.RetryAfterMs = n.lockDelayUntil
		}
		return res
	}
	if len(n.holders) == 0 {
		n.stat.LockGeneration++
	}
	n.holders[h.id] = mode
	h.held = mode
	s.refreshLock(n)
	var d deliveries
	s.notify(&d, n, coord.EventLockAcquired, n.path)
	return &pb.Result{Deliveries: d, Acquired: true, Sequencer: s.sequencerOf(n, mode)}
}

func (s *State) sequencerOf(n *node, mode coord.LockMode) *pb.Sequencer {
	return &pb.Sequencer{Path: n.path, Mode: pb.LockMode(mode), LockGeneration: n.stat.LockGeneration, Instance: n.stat.Instance}
}

func (s *State) checkSequencer(q *pb.Sequencer) error {
	path, err := coord.CleanPath(q.Path)
	if err != nil {
		return err
	}
	n := s.nodes[path]
	switch {
	case n == nil || n.stat.Instance != q.Instance:
		return fmt.Errorf("%s no longer exists as the node the sequencer names", q.Path)
	case n.stat.LockGeneration != q.LockGeneration:
		return fmt.Errorf("the lock of %s changed hands (generation %d, sequencer has %d)", q.Path, n.stat.LockGeneration, q.LockGeneration)
	case len(n.holders) == 0:
		return fmt.Errorf("the lock of %s is free", q.Path)
	case n.stat.LockMode != coord.LockMode(q.Mode):
		return fmt.Errorf("the lock of %s is held in %s mode, the sequencer says %s", q.Path, n.stat.LockMode, coord.LockMode(q.Mode))
	}
	return nil
}

func (s *State) statOf(n *node) *pb.Stat { return pb.StatToProto(n.stat) }
