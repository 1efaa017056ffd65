// Package sstable implements cellar's SSTable: an immutable file of sorted
// key/value entries, cut into blocks, with an index, an optional bloom
// filter and a properties block, after the Bigtable paper and in the manner
// of LevelDB's table format and Pebble's sstable package.
//
// # File layout
//
//	file    := data-block* filter-block? properties-block index-block footer
//	block   := payload | type (1 byte: 0 = none, 1 = snappy) | crc32c (4 bytes LE)
//	payload := entry* restart-offset* num-restarts    (after decompression)
//	entry   := shared-key-len uvarint | unshared-key-len uvarint | value-len uvarint | key-suffix | value
//	restart-offset, num-restarts := uint32 LE
//
//	footer (64 bytes):
//	  0  index handle       offset u64 LE, length u64 LE
//	  16 filter handle      offset u64 LE, length u64 LE (length 0: no filter)
//	  32 properties handle  offset u64 LE, length u64 LE
//	  48 format version     u32 LE (1)
//	  52 crc32c             u32 LE, over bytes 0..51
//	  56 magic              u64 LE, the bytes "cellarSS"
//
//	+--------------+-----+--------------+--------+------------+-------+--------+
//	| data block 0 | ... | data block n | filter | properties | index | footer |
//	+--------------+-----+--------------+--------+------------+-------+--------+
//
// A handle's length counts the (stored, possibly compressed) payload only,
// not the 5-byte trailer. The checksum is Castagnoli CRC-32 over the stored
// payload and the type byte. Every byte of a file lies in a checksummed
// block or in the footer, so a single flipped bit anywhere is detected.
//
// Keys are opaque byte strings ordered by bytes.Compare and strictly
// increasing. Within a block each key is stored as the length it shares with
// its predecessor plus the rest; every RestartInterval entries, or sooner
// in a data block once the entries since the last restart point take 1 KiB,
// a restart point stores a whole key (shared = 0) and its offset goes into
// the restart array, so a seek binary-searches the restart points and then
// scans at most one interval: a few cache lines even when values are large.
// Readers take restart points wherever the restart array puts them. A
// block with no entries has no restart points.
//
// # Design choices
//
// Checksum and compression are per block: a reader verifies exactly the
// bytes it uses, one ReadAt fetches a block and its trailer, and a block
// that snappy does not shrink by at least an eighth is stored as it is, so
// incompressible values cost no decompression on reads. Data blocks and the
// index block are compressed as WriterOptions say; the filter (random bits)
// and the properties (tiny) never are.
//
// Data blocks are cut once their uncompressed payload reaches BlockSize, or
// just before an entry that would overflow a block that is already 90% full,
// so blocks rarely exceed BlockSize. An entry of BlockSize or more gets a
// block to itself.
//
// The index holds one entry per data block: the block's full last key and
// its handle. LevelDB stores a shortened separator instead to make the index
// smaller; cellar keeps real keys because tablets pick split points and
// sample rows from index keys, and a separator is not a key that exists.
// Readers decode the whole index at open, so a point lookup costs one binary
// search in memory and at most one data block read.
//
// The bloom filter holds, for every entry, both the entry's encoded row
// (model.RowPrefix) and its encoded row and column (model.ColumnPrefix), so
// a row read and a single-column read can each skip a file that lacks them.
// The two kinds cannot collide: a row prefix ends at the first row
// terminator, a column prefix goes on past it. Consecutive duplicates, such
// as the many versions of one column, are added once.
//
// The properties block is a block of name/value entries (numbers as
// uvarints, timestamps as zig-zag varints, keys as raw bytes) so new
// properties can be added without a format change; readers skip names they
// do not know.
//
// Readers never panic on bad input: every length, varint and offset is
// bounds-checked, and every problem is reported as a *model.CorruptionError
// that names the file and the byte offset of the block (or footer) at fault.
package sstable
