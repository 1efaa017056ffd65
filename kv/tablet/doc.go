// Package tablet is the storage engine of a tablet server: tablets (row
// ranges of a table) over a shared commit log, memtables and SSTables, as
// in sections 5.3, 5.4 and 6 of the Bigtable paper. A Store holds the
// tablets of one server.
//
// # Writes
//
// Apply validates a row mutation, takes the row's lock stripe and the
// tablet's commit mutex, assigns one sequence number per mutation and the
// server timestamps (milliseconds, never below the newest timestamp the
// tablet holds), and appends one record to the commit log. It then waits,
// without locks, for the group commit that makes the record durable,
// inserts the entries into the memtable that was active when the sequence
// numbers were assigned, and publishes them. Publication follows sequence
// order: the visible sequence number advances only over a prefix of writes
// that have all been inserted (or failed), and every read filters entries
// above the visible number it started with. A row mutation therefore
// becomes visible all at once, and only after it is durable. A write whose
// log append or fsync fails is never inserted and never acknowledged.
//
// ReadModifyWrite and CheckAndMutate hold the row's stripe from their read
// to their log append, after waiting for earlier writes under the stripe to
// become visible, so they are atomic per row.
//
// # The merged view
//
// A read takes the visible sequence number, then pins the current version:
// the active memtable, the frozen memtables waiting for their flush, and
// for each locality group its SSTables, newest first. It merges their
// iterators (skipping files whose bloom filter rules the row out), and a
// resolver applies the deletion rules of package model in one pass: a
// marker hides only entries with a smaller sequence number. Only the
// locality groups of the families asked for are read.
//
// # Compactions
//
// A memtable that reaches MemtableSize is frozen and a new one takes the
// writes; a background worker writes the frozen one as one SSTable per
// locality group (a minor compaction), then records the new files and the
// tablet's new redo point in the store's state, and only then drops the
// memtable. A merging compaction rewrites a group's newest files into one
// when enough sorted runs of similar size pile up (a sorted run is a
// stretch of files whose key ranges do not overlap, so a sequential load
// is never rewritten just because it made many files). A compaction whose inputs
// reach the group's oldest file is a major compaction: it drops the
// deletion markers and the data they hide, and applies the families' GC
// rules that count versions (max-age rules apply in every compaction).
// Major compactions also run on a timer and when deletions pile up.
//
// # Backpressure
//
// Writers stall (until their context ends) while a tablet has
// MaxFrozenMemtables frozen memtables and a full active one, while a
// locality group holds StallRuns overlapping runs of SSTables, or while the
// store's memtables
// exceed MemoryLimit. A flush that keeps failing (a full disk) turns those
// stalls into errors that name the cause.
//
// # Splits and merges
//
// A split flushes the tablet while writes continue, briefly holds writes
// to flush what arrived meanwhile, and records two children that share the
// parent's SSTables; each child reads only its own rows and rewrites shared
// files at its next compaction. A merge records one tablet over the files
// of two adjacent ones. Sequence numbers and the timestamp floor carry over
// in both directions.
//
// # Recovery
//
// The store's state (STATE files) holds each tablet's SSTables, its redo
// point (a commit log LSN) and the highest sequence number its SSTables
// hold. Open replays the log from the smallest redo point and gives each
// tablet only its own records above that sequence number. SSTables that no
// state names (unfinished compactions) are deleted at Open.
package tablet
