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
// # Row filters
//
// A read's filter may carry a Cloud Bigtable row filter (model.RowFilter,
// on the wire as tabletpb.RowFilter). The server decodes it without
// trusting it (bounded depth and size, no enum that wraps), compiles it
// once per request with model.CompileRowFilter, and evaluates it through
// an evaluator of the request's own on each row after the filter's other
// steps (families, time range, versions, conditions, regular
// expressions): in ReadRow, in Scan in either direction, and as
// CheckAndMutate's predicate (the row matches if the filter outputs a
// cell). Labels and stripped values go back in the response's cells. The
// filter narrows the families read when the request names none
// (model.CompiledRowFilter.Families), and a filter that can output nothing
// reads nothing. A row filter drops rows, so a scan with one is bounded
// like a scan with a selective regular expression: it stops after many
// dropped rows or its time budget and says where to resume. Row samples
// draw from Options.Rand.
//
// # Authentication and ACLs
//
// With Options.Secret set, every call must carry the cluster's secret
// (kv/client's auth.go), else it is Unauthenticated. A call may name the
// principal it acts for; a call that names none comes from a cluster
// member and is not checked. A principal's data calls are checked
// against the table's ACL (Options.ACLs, files in the lock service,
// cached for Options.ACLTTL): reads need read on the families they read,
// writes need write on the families they write (acl.go). A denied call
// gets PermissionDenied naming the principal, the table and the family.
//
// # Errors
//
// Requests that can never succeed get InvalidArgument or NotFound. A
// request for a row the server does not serve, or any request while it is
// fenced, gets FailedPrecondition with a message starting "not serving":
// the client should re-locate the row and retry. Transient failures of the
// store get Unavailable or ResourceExhausted.
package tabletserver
