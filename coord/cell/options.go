package cell

import (
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/cellardb/cellar/coord"
)

// Peer is one replica of the cell.
type Peer struct {
	// RaftAddr is where the replica's Raft transport listens (host:port).
	RaftAddr string
	// ClientAddr is where it serves clients (host:port).
	ClientAddr string
}

// Options configure one replica.
type Options struct {
	// Cell is the cell's name, as in /ls/<cell>/.
	Cell string
	// ReplicaID is this replica's id, a key of Peers.
	ReplicaID uint64
	// Peers lists every replica of the cell, this one included.
	Peers map[uint64]Peer
	// Dir holds the replica's Raft log and snapshots.
	Dir string
	// ClientListen overrides the address the client server listens on
	// (default Peers[ReplicaID].ClientAddr); ":0" picks a port.
	ClientListen string
	// RaftListen overrides the address the Raft transport listens on
	// (default Peers[ReplicaID].RaftAddr), for a replica that its peers
	// reach through a proxy or a NAT at its Raft address.
	//
	// Every replica must see every peer at the same Raft address: the
	// addresses are part of the replicated membership (the bootstrap
	// entries, snapshots), each message names its sender by its Raft
	// address, and dragonboat's registry stops the process if a peer's
	// address disagrees with the one it knows. So a per-pair view of the
	// peers (replica 1 reaching 2 through one proxy, 3 reaching 2 through
	// another) is unsound; a proxy is per destination, named as the
	// destination's Raft address, with the replica listening behind it
	// here. A replica keeps its Raft address for life (its data directory
	// records it); its listening address may change.
	RaftListen string

	// RTT is the round trip between replicas; elections take ElectionRTT
	// of them and heartbeats go every RTT.
	RTT         time.Duration
	ElectionRTT uint64
	// Lease is the session lease each KeepAlive grants.
	Lease time.Duration
	// Grace is added to every session's lease when a new master takes over.
	Grace time.Duration
	// Secret, if set, must accompany every call (metadata "cellar-secret").
	Secret string
	// RootACL are the ACL names of the root directory at bootstrap.
	RootACL coord.ACL
	// SnapshotEntries is how many applied commands trigger a snapshot.
	SnapshotEntries uint64
	// EventAckInterval is how often the master commits the clients' event
	// acknowledgements, dropping acknowledged events from the replicated
	// queues (default 1s). Shorter keeps the queues smaller at the cost
	// of more Raft proposals.
	EventAckInterval time.Duration

	// Clock is the replica's wall clock. Nothing that times leases or
	// lock-delays reads it: leases run on Go's monotonic clock, and the
	// cell's clock in commands runs on it too, from the value the last
	// master left (a new cell starts it at this clock's reading).
	Clock func() time.Time
	// Rand supplies the secret behind check digits at bootstrap.
	Rand io.Reader
	// Logger receives the replica's notable events (nil: discarded).
	Logger *slog.Logger
	// KeepAlive, if set, hears how long each KeepAlive this replica
	// answered as master took, without the time it held the call waiting
	// for news (up to most of a lease, by design): what remains is the
	// work of answering, chiefly the Raft read index that confirms the
	// lease. It runs on the call's goroutine and must not block.
	KeepAlive func(d time.Duration)
}

// Defaults fills in zero fields.
func (o Options) Defaults() Options {
	if o.RTT == 0 {
		o.RTT = 20 * time.Millisecond
	}
	if o.ElectionRTT == 0 {
		o.ElectionRTT = 10
	}
	if o.Lease == 0 {
		o.Lease = coord.DefaultLease
	}
	if o.Grace == 0 {
		o.Grace = coord.DefaultGrace
	}
	if o.SnapshotEntries == 0 {
		o.SnapshotEntries = 10000
	}
	if o.EventAckInterval == 0 {
		o.EventAckInterval = time.Second
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Validate checks the options after Defaults.
func (o Options) Validate() error {
	bad := func(format string, args ...any) error {
		return coord.Errorf(coord.InvalidArgument, "cell options: %s", fmt.Sprintf(format, args...))
	}
	if o.Cell == "" || o.Cell == coord.LocalCell {
		return bad("cell name %q: give the cell a real name (%q is what clients say for their own cell)", o.Cell, coord.LocalCell)
	}
	if _, ok := o.Peers[o.ReplicaID]; !ok || o.ReplicaID == 0 {
		return bad("replica %d is not among the peers", o.ReplicaID)
	}
	for id, p := range o.Peers {
		if id == 0 || p.RaftAddr == "" || p.ClientAddr == "" {
			return bad("peer %d needs an id above 0, a Raft address and a client address", id)
		}
	}
	if o.Dir == "" {
		return bad("no data directory")
	}
	if o.RTT < time.Millisecond || o.ElectionRTT < 5 {
		return bad("RTT %v with an election of %d RTTs is too short", o.RTT, o.ElectionRTT)
	}
	if o.Lease < time.Second || o.Grace < 0 {
		return bad("lease %v must be at least 1s and grace %v not negative", o.Lease, o.Grace)
	}
	if time.Duration(o.ElectionRTT)*o.RTT*2 >= o.Lease {
		return bad("the election timeout (%v) must be well below the lease (%v)", time.Duration(o.ElectionRTT)*o.RTT, o.Lease)
	}
	return nil
}
