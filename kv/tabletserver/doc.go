// Package tabletserver is the process that serves tablets (Bigtable paper,
// section 5.2): the internal data RPCs of kv/tabletpb over a tablet store,
// with registration and fencing in the lock service.
//
// # Registration and fencing
//
// At Open the server creates a uniquely named file in the servers
// directory of the lock service and takes an exclusive lock on it. It
// serves only while it holds that lock and its session is safe, which it
// checks on every request without a network round trip:
//
//	          Open
//	           │ file created, lock taken
//	           ▼
//	┌───────► serving ──── lock lost or session lapsed ───► fenced
//	│                                                        │
//	└──────────────────── lock taken again ◄─────────────────┤
//	                                                         │
//	                        the file is gone (the master     │
//	                        deleted it) ─────────────────────┴──► dead
//
// A fenced server answers every request with a "not serving" error, so
// clients go and find the tablet's new server. It keeps trying to take its
// lock back for as long as its file exists. Once the file is gone, the
// master has taken the server's tablets away for good, and the server
// stops for good (Options.OnFatal). A clean Close releases the lock.
//
// # Errors
//
// Requests that can never succeed get InvalidArgument or NotFound. A
// request for a row the server does not serve, or any request while it is
// fenced, gets FailedPrecondition with a message starting "not serving":
// the client should re-locate the row and retry. Transient failures of the
// store get Unavailable or ResourceExhausted.
package tabletserver
