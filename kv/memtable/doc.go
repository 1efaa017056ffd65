// Package memtable is a tablet's sorted in-memory write buffer (Bigtable
// paper, sections 5.3 and 5.4). Recent writes live here until the tablet
// flushes the memtable to an SSTable.
//
// # Structure
//
// A Memtable is a skiplist of internal keys (see kv/model), ordered by
// bytes.Compare, each with a value. A node has a random height: level 0
// links every node, and each level above links about a quarter of the
// nodes of the level below (p = 1/4, at most 12 levels, which keeps
// searches at O(log n) up to about 16 million entries). Heights come from a
// splitmix64 generator seeded by Options.Seed, so the same inserts always
// build the same list.
//
// An Add costs two allocations at most and usually none. The key and value
// are copied, back to back, into a chunk of a byte arena that holds no
// pointers, so the garbage collector never scans it; an entry over 4 KiB
// gets its own allocation. The node, with its tower of next pointers in the
// same object, comes from a slab of nodes of its height. A node also keeps
// the first 8 key bytes as an integer, so most comparisons in a search
// finish without touching the key.
//
// # Concurrency
//
// Writers take a mutex, so there is one writer at a time. Readers take no
// lock and never wait: they only load next pointers, which are
// atomic.Pointer values.
//
// A writer fills in a new node completely, key, value and its own next
// pointers, before any other node points to it. It then links the node
// level by level, bottom up, each with an atomic store. The store that
// links the node at level 0 publishes it, and the atomic load that finds it
// makes its contents visible to the reader. Because linking goes bottom up,
// a reader that meets the node at some level finds its lower levels already
// linked, so descending from it never leaves the list. A reader that raced
// with the insert either sees the new node or steps over it; it never sees a
// broken list. Nodes are never freed or changed once published, so keys and
// values handed out by an iterator stay valid for the memtable's lifetime.
//
// # Row atomicity
//
// Every key carries a sequence number. An iterator is created with a
// snapshot sequence number and skips every entry whose sequence number is
// greater. The tablet inserts all entries of a row mutation with one
// sequence number (AddBatch), and only then publishes that number as the
// new snapshot for readers. A reader therefore sees all of a row mutation
// or none of it, although the memtable itself knows nothing of rows.
//
// The core is deterministic: no goroutines, no clock, no global random
// source.
package memtable
