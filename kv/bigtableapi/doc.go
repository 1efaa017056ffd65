// Package bigtableapi serves Cloud Bigtable's gRPC API — the data service
// google.bigtable.v2.Bigtable and the table admin service
// google.bigtable.admin.v2.BigtableTableAdmin — on top of cellar: rows go
// through kv/client to the tablet servers, schemas through an Admin the
// caller supplies (the master's admin RPCs, in ops). The official client
// libraries connect to it as they connect to Google's emulator, through
// BIGTABLE_EMULATOR_HOST. The package keeps no state of its own: every
// call is translated and forwarded, so any number of gateways can serve
// one cluster.
//
// # Names
//
// Every project and instance names the one cellar cluster: the table is
// the last element of projects/{p}/instances/{i}/tables/{t}, and answers
// carry the project and instance of the request. A name of any other
// shape is InvalidArgument.
//
// # ReadRows
//
// The request's row keys and row ranges are turned into half-open key
// intervals ([k, k+"\x00") for a key, open and closed bounds likewise),
// sorted and merged, so that a row asked for twice comes back once and
// rows come in key order (descending when reversed). An interval of one
// key is a point read (kv/client ReadRow); any other is a scan, forward or
// reversed, across tablets. rows_limit caps the rows sent over all
// intervals. The row filter is translated into kv/model's RowFilter and
// runs on the tablet servers, which also validate it (a bad filter is
// InvalidArgument); a row it leaves empty is not sent and does not count.
//
// Rows are streamed as CellChunks the way the service streams them, which
// is what the clients' chunk state machines accept:
//
//   - the first chunk of a row carries the row key, family and qualifier;
//     later chunks carry the family only when it changes (with the
//     qualifier, which the clients require), and the qualifier only when
//     it changes;
//   - every cell carries its timestamp and labels; a value longer than
//     Options.MaxChunkValue is split over several chunks, each but the
//     last carrying value_size (the whole value's length) and nothing
//     but the value, as the service does for large cells;
//   - the last chunk of a row has commit_row set;
//   - a response holds whole rows only (the Go client checks its state
//     machine at the end of every response) and is sent once it reaches
//     Options.MaxResponseBytes.
//
// With request_stats_view REQUEST_STATS_FULL the stream ends with a
// response holding only request_stats: rows and cells the tablet servers
// examined (before the filter) and returned, and the gateway's latency.
//
// # Interrupted streams
//
// The clients resume a broken ReadRows stream by sending the same request
// again with the row set narrowed to what lies after the last row they
// received (before it, when reversed) and rows_limit lowered by the rows
// they have. Nothing is kept between calls, so a resumed request is just
// a new request; since rows are sent in order and each response holds
// whole rows, the narrowed set never repeats or skips a row.
//
// # Mutations and timestamps
//
// A SetCell's timestamp of -1 means "the server's time": it is handed to
// the tablet as model.ServerTimestamp, and the tablet server assigns one
// millisecond timestamp per row mutation, never below the newest
// timestamp of the tablet (so time never goes back for a row, even across
// tablet moves and gateways with skewed clocks). Tables have millisecond
// granularity, as on the service by default: any other timestamp, and the
// bounds of a DeleteFromColumn time range, must be non-negative multiples
// of 1000 µs, else InvalidArgument. AddToCell and MergeToCell need
// aggregate column families, which cellar does not have: InvalidArgument.
// MutateRow is atomic; MutateRows answers one status per entry, each entry
// atomic and the batch not; an entry that is malformed fails alone.
// CheckAndMutateRow without a predicate matches a row that has any cell.
// ReadModifyWriteRow appends, or adds to an 8-byte big-endian integer (an
// absent cell counts as 0), and answers the new cells.
//
// # Admin
//
// Tables are cellar tables, the same ones SQL sees. Column families map to
// model.Family with their GC rules (max versions, max age, union,
// intersection); ModifyColumnFamilies reads the schema, applies the
// modifications in order and writes it back in one UpdateSchema, keeping
// what the Bigtable API does not describe (locality groups, SQL's column
// types in Schema.Meta). The write is conditional on the schema
// it was made from: of two concurrent changes of one table, the master
// refuses the later with ABORTED rather than lose the earlier. DropRowRange scans
// the rows (keys only, through a filter) and deletes them in batches of
// Options.DropBatch with ApplyBulk under the caller's context: it costs
// O(rows), is not atomic, and rows written while it runs may survive.
// Consistency tokens are always consistent: each tablet has one copy, so
// a write is visible everywhere once acknowledged. Backups, snapshots,
// authorized views, IAM and the other admin calls answer Unimplemented.
//
// # Errors
//
// kv/client answers gRPC statuses from the tablet servers, whose codes are
// kept (NotFound for a missing table or family, InvalidArgument for a bad
// filter or a key over 64 KiB, FailedPrecondition for an increment of a
// cell that is not 8 bytes); the Admin answers kv/model's error classes,
// which map to their codes; a context's end maps to Canceled or
// DeadlineExceeded. Nothing here retries: kv/client's loop does, and the
// Bigtable clients retry what the service marks retryable.
package bigtableapi
