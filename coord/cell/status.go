package cell

import (
	"context"
	"fmt"
	"sort"
	"time"

	pb "github.com/cellardb/cellar/coord/coordpb"
)

// Status is a read-only snapshot of a replica for status pages: who
// leads, and the cell's sessions and locks.
type Status struct {
	Cell      string
	ReplicaID uint64
	// LeaderID is the Raft leader's replica id; 0 while none is known.
	LeaderID uint64
	// IsMaster: this replica is the cell's master and has taken over.
	IsMaster bool
	// Epoch is the master's epoch (0 unless IsMaster).
	Epoch    uint64
	Sessions []SessionStatus
	Locks    []LockStatus
}

// SessionStatus is one session of the cell.
type SessionStatus struct {
	ID        uint64
	Principal string
	// LeaseExpires is when the master ends the session unless it hears a
	// KeepAlive; zero on a replica that is not the master, which keeps no
	// leases.
	LeaseExpires time.Time
	// LastKeepAlive is when the master last heard from it (zero if never
	// in this epoch, or not the master).
	LastKeepAlive time.Time
}

// LockStatus is one held lock: a node and the sessions holding it.
type LockStatus struct {
	// Path is the node's full name, /ls/<cell>/….
	Path string
	// Mode is "exclusive" or "shared".
	Mode    string
	Holders []LockHolder
}

// LockHolder is a session holding a lock through one of its handles.
type LockHolder struct {
	Session   uint64
	Principal string
	Handle    uint64
}

// Status returns the replica's view of the cell. Leadership comes from
// this replica's memory; sessions and locks from a linearizable read of
// the replicated state, which needs a quorum: when that read fails, the
// leadership fields are still filled in and the error says why the rest
// is missing.
func (r *Replica) Status(ctx context.Context) (Status, error) {
	st := Status{Cell: r.opts.Cell, ReplicaID: r.opts.ReplicaID}
	if id, ok := r.leader(); ok {
		st.LeaderID = id
	}
	m := r.currentMaster()
	if m != nil {
		st.IsMaster, st.Epoch = true, m.epoch
	}
	snap, err := r.Dump(ctx)
	if err != nil {
		return st, fmt.Errorf("cell %s replica %d: read sessions and locks: %w", r.opts.Cell, r.opts.ReplicaID, err)
	}
	principals := map[uint64]string{}
	for _, s := range snap.Sessions {
		principals[s.Id] = s.Principal
		st.Sessions = append(st.Sessions, SessionStatus{ID: s.Id, Principal: s.Principal})
	}
	if m != nil {
		m.mu.Lock()
		for i := range st.Sessions {
			if ls := m.sessions[st.Sessions[i].ID]; ls != nil {
				st.Sessions[i].LeaseExpires, st.Sessions[i].LastKeepAlive = ls.leaseEnd, ls.lastKeepAlive
			}
		}
		m.mu.Unlock()
	}
	sort.Slice(st.Sessions, func(i, j int) bool { return st.Sessions[i].ID < st.Sessions[j].ID })
	locks := map[string]*LockStatus{}
	for _, h := range snap.Handles {
		if h.Held == pb.LockMode_LOCK_NONE {
			continue
		}
		l := locks[h.Path]
		if l == nil {
			// The state keeps paths below the cell; clients name them /ls/<cell>/….
			l = &LockStatus{Path: "/ls/" + r.opts.Cell + h.Path, Mode: "shared"}
			locks[h.Path] = l
		}
		if h.Held == pb.LockMode_LOCK_EXCLUSIVE {
			l.Mode = "exclusive"
		}
		l.Holders = append(l.Holders, LockHolder{Session: h.Session, Principal: principals[h.Session], Handle: h.Id})
	}
	for _, l := range locks {
		sort.Slice(l.Holders, func(i, j int) bool { return l.Holders[i].Handle < l.Holders[j].Handle })
		st.Locks = append(st.Locks, *l)
	}
	sort.Slice(st.Locks, func(i, j int) bool { return st.Locks[i].Path < st.Locks[j].Path })
	return st, nil
}

// Ready reports why the cell has no master as far as this replica knows,
// or nil: this replica is the master, or another replica leads.
func (r *Replica) Ready() error {
	if r.IsMaster() {
		return nil
	}
	id, ok := r.leader()
	switch {
	case !ok:
		return fmt.Errorf("cell %s replica %d: no Raft leader known", r.opts.Cell, r.opts.ReplicaID)
	case id == r.opts.ReplicaID:
		return fmt.Errorf("cell %s replica %d: leads but has not taken over as master yet", r.opts.Cell, r.opts.ReplicaID)
	}
	return nil
}
