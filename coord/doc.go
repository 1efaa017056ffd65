// Package coord holds the public types of cellar's lock service, a Chubby
// cell (Burrows, OSDI'06): names, handle modes, lock modes, events,
// sequencers, node metadata and errors. The cell itself is in coord/cell
// and its replicated state machine in coord/fsm; programs use the client
// library in coord/client.
//
// # Names
//
// Every name has the form /ls/<cell>/<path>. The cell "local" means the
// client's own cell. Within a cell, nodes (files and directories) form a
// strict tree; there are no links, no renames and no path-based
// permissions: each node carries its own three ACL names.
//
// # The protocol, as a state machine
//
// A client holds a session with the cell's master (the Raft leader of the
// cell's replicas). The session lives while the master keeps extending its
// lease in answers to KeepAlive calls:
//
//	           CreateSession
//	                │
//	                ▼
//	┌────────────► safe ──────── local lease lapses ────────► jeopardy
//	│      (lease extended by      (cache flushed, calls wait)     │
//	│       every KeepAlive)                                      │
//	└─────────── KeepAlive answered within the grace period ◄─────┤
//	                                                              │
//	                     grace period (45 s) ends ──────────────► expired
//
// Handles, locks, cached data and ephemeral nodes belong to a session and
// die with it: when the master lets a lease lapse it commits the session's
// expiry, which releases its locks (after their lock-delay), closes its
// handles and deletes the ephemeral nodes nobody else holds open.
//
// The master answers a KeepAlive only after it has confirmed, through a
// Raft read index, that it is still the leader, so a deposed master never
// extends a lease; nor does one end a session, which it reports expired
// only once the end is committed. A new master starts a new epoch, gives every session a
// fresh lease plus the grace period, and sends each a MASTER_FAILOVER event
// so that clients flush caches that may have missed an invalidation.
//
// Events are part of the replicated state: each session's are queued and
// numbered there as commands apply, and whichever replica is master serves
// them, so a failover loses none and a client hears each once, in order
// (it drops numbers it has seen). Only a session's queue that overflows
// while its client is out of touch loses events, and then says so with an
// EVENTS_LOST event.
package coord
