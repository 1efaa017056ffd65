// Package model holds the types that every layer of cellar's key-value side
// shares: row keys, columns, timestamps, cells, mutations, row ranges, table
// schemas with their garbage-collection rules and locality groups, the
// internal key encoding that the memtable and SSTables sort by, and the
// error classes that travel up to the front doors.
//
// # Data model
//
// A table maps (row, family:qualifier, timestamp) to a value, as in the
// Bigtable paper. Rows are arbitrary bytes of at most 64 KiB and sort
// lexicographically. A family is a short printable name declared in the
// table's schema; a qualifier is any bytes. Timestamps are int64
// microseconds; versions of one column are kept newest first.
//
// # Deletion
//
// Deletion markers cover a column over a timestamp range, a whole family, or
// a whole row. Every entry written to a tablet carries a sequence number,
// and a marker hides only entries with a smaller sequence number, that is,
// entries written before it. A later write that carries an older timestamp
// therefore stays visible (Bigtable's semantics, not HBase's before 2.0).
//
// # Internal keys
//
// The storage layers order entries by one byte-comparable key:
//
//	esc(row) 00 01 | family 00 | esc(qualifier) 00 01 | ^ts (8, BE) | ^(seq<<8|kind) (8, BE)
//
// esc() writes each 0x00 byte as 00 FF, so the terminator 00 01 sorts
// before any continuation and the encoding preserves the order of the raw
// bytes. Families are printable and need no escaping. Inverting the
// timestamp and the trailer gives "timestamp descending, then sequence
// descending". Deletion markers use reserved positions in this order so that
// a merged scan meets every marker before the entries it may hide:
//
//	row marker     family "" (sorts before every family), qualifier "", ts = MaxInt64
//	family marker  qualifier "", ts = MaxInt64
//	column marker  ts = end of its range - 1; its value holds the range start
//
// Because MaxInt64 is not a valid cell timestamp, no cell can sort before the
// family or row marker that covers it.
//
// # Row filters
//
// RowFilter is Cloud Bigtable's google.bigtable.v2.RowFilter without the
// generated code: CompileRowFilter validates a tree as the service does, and
// a RowFilterEvaluator applies it to one row at a time with reusable
// buffers, for the tablet servers' scan path. Regexes match bytes, as RE2's
// Latin-1 mode does. The doc comment of RowFilter spells out the semantics
// and lists where bttest, the emulator, differs.
package model
