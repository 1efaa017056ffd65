package sstable

// ReadStats counts the work of one read, for statistics such as SQL's
// EXPLAIN ANALYZE. A read that is given one counts into it with plain
// adds, so a ReadStats must not be shared by reads running at the same
// time; a read without one (a nil pointer) pays only a nil check.
//
// kv/tablet's reads fill every field (tablet.ReadStats is this type);
// this package's readers fill the block and bloom filter counts.
type ReadStats struct {
	// Rows and Cells are the rows and cells the read produced: the live
	// cells after the read's families, time range and versions, before
	// any filtering above it (a tablet server's regular expressions and
	// conditions).
	Rows, Cells int64
	// Blocks is the data blocks read from the file (block cache misses);
	// CacheHits the data blocks served from memory instead: the block
	// cache, or an in-memory table. An iterator that stays in a block
	// counts it once.
	Blocks, CacheHits int64
	// BloomChecks is the bloom filter probes made for a point read, one
	// per file that has a filter; BloomUseful is how many of them showed
	// the file could not hold the key, so that it was not read.
	BloomChecks, BloomUseful int64
}

// Add adds o's counts to s.
func (s *ReadStats) Add(o ReadStats) {
	s.Rows += o.Rows
	s.Cells += o.Cells
	s.Blocks += o.Blocks
	s.CacheHits += o.CacheHits
	s.BloomChecks += o.BloomChecks
	s.BloomUseful += o.BloomUseful
}

// IsZero reports whether every count is zero.
func (s ReadStats) IsZero() bool { return s == ReadStats{} }
