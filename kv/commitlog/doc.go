// Package commitlog is a tablet server's commit log: one redo log shared by
// every tablet the server holds (Bigtable §5.3 and the commit-log
// refinement of §6).
//
// # Files
//
// The log is a chain of segment files in one directory, named by a 16-digit
// hexadecimal segment number, each at most Options.SegmentSize long:
//
//	segment := header record*
//	header  := magic (8) | version (4, LE) | segment (8) | first LSN (8)
//	           | prev segment (8) | prev valid length (8) | crc32c (4) of the preceding 44 bytes
//	record  := length (4, LE) | crc32c (4, LE) of length+payload | payload
//	payload := type (1) | LSN | tablet | table | seq | row | mutations
//
// Integers in the payload are uvarints (timestamps zigzag varints), byte
// strings a uvarint length and the bytes. Every record is tagged with the
// tablet it belongs to, its table, its row, the server-wide log sequence
// number (LSN) and the tablet sequence number of its first mutation; the
// mutations inside take consecutive sequence numbers. Server-assigned
// timestamps are resolved before a record is written, so replay is exact.
//
// A segment may be preallocated (writer.go): zero-filled to SegmentSize
// and made durable before it is renamed into place, then written from the
// start, so that a commit's fsync writes data blocks and no new length.
// Its zeros after the last record read as a torn tail. The spare waiting
// to become the next segment is named spare.prealloc, which is not a
// segment name; replay ignores it and Open removes it.
//
// # The chain
//
// Each segment's header names its predecessor and how many of the
// predecessor's bytes are valid. A normal rotation records the old
// segment's full length. After a failed write or sync, or at start-up after
// a crash, the writer opens a new segment whose header records only the
// length known to be good, which voids a torn tail, or the tail of a write
// that was reported as failed, for good. Replay starts at the newest segment
// with a valid header and follows the prev links back, so a segment outside
// the chain (one voided by recovery) is never read.
//
// # Replay
//
// Replay reads the chain oldest first. In every segment but the last it
// expects well-formed records up to the valid length its successor
// declares. It stops at the first torn or corrupt record and never returns
// data past it: at the tail of the last segment that is the normal trace of
// a crash; anywhere else it is corruption of acknowledged data, reported as
// a *model.CorruptionError with the file and offset, and replay still ends
// there (point-in-time recovery).
//
// # Group commit
//
// Writer.Append encodes a record into a shared buffer under a mutex and
// returns at once. One flusher goroutine takes everything buffered, writes
// it with one write and makes it durable with one fsync, then releases every
// writer whose record was in that batch. While it waits for the disk, new
// records pile up for the next batch, so concurrent writers share fsyncs.
// A writer's record is acknowledged only after the fsync that covers it
// succeeded.
package commitlog
