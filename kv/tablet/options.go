package tablet

import (
	"fmt"
	"strings"
	"time"

	"github.com/cellardb/cellar/kv/model"
)

// Options configure a Store and every tablet in it.
type Options struct {
	// MemtableSize is the size at which a tablet freezes its memtable and
	// starts a minor compaction.
	MemtableSize int64
	// MaxFrozenMemtables is how many frozen memtables may wait for their
	// flush before writers to the tablet stall.
	MaxFrozenMemtables int
	// MemoryLimit bounds the memtables of all tablets together; writers
	// stall above it until flushes catch up.
	MemoryLimit int64

	// BlockSize is the uncompressed size of SSTable data blocks.
	BlockSize int
	// BloomFalsePositiveRate sizes the bloom filters.
	BloomFalsePositiveRate float64
	// BlockCacheSize bounds the block cache, in bytes.
	BlockCacheSize int64
	// ScanCacheSize bounds the scan cache of recently read rows, in
	// bytes. Zero turns it off.
	ScanCacheSize int64

	// CompactionTrigger is how many sorted runs of SSTables (stretches of
	// files whose key ranges do not overlap) a locality group may hold
	// before a merging compaction runs.
	CompactionTrigger int
	// StallRuns is how many sorted runs a locality group may hold before
	// writers stall until compactions catch up.
	StallRuns int
	// SizeRatio: a merging compaction takes the newest runs while the next
	// older one is at most (1+SizeRatio) times their total size.
	SizeRatio float64
	// MajorCompactionInterval is how often every tablet gets a major
	// compaction, which applies version-counting GC rules and drops
	// deletion markers even in tablets that stopped growing. Default 24h;
	// a negative value turns periodic major compactions off.
	MajorCompactionInterval time.Duration
	// CompactionConcurrency is the number of background flush and
	// compaction workers.
	CompactionConcurrency int

	// SplitSize is the size at which a tablet splits in two. Zero turns
	// automatic splits off.
	SplitSize int64
	// KeepWhole, if set, names tablets that never split automatically
	// (the root tablet of METADATA).
	KeepWhole func(table string, r model.RowRange) bool

	// LogSegmentSize is the size of commit log segments.
	LogSegmentSize int64
	// MaxLogSize is how much commit log the store keeps before it flushes
	// the tablets that pin the oldest segments.
	MaxLogSize int64

	// Shared, if set, puts the store in shared mode (see shared.go): its
	// tablets are described in a catalog instead of STATE files, and its
	// files live on a dfs root that other stores share.
	Shared *Shared

	// Clock supplies wall-clock time for server-assigned timestamps and
	// max-age garbage collection. Default time.Now.
	Clock func() time.Time
	// Events receives notifications for logs and metrics.
	Events Events
}

// Events are hooks for logs and metrics; any may be nil. They run on the
// goroutine that did the work and must not block.
type Events struct {
	FlushEnd      func(FlushInfo)
	CompactionEnd func(CompactionInfo)
	Split         func(parent uint64, children [2]uint64, key []byte)
	Merge         func(parents [2]uint64, child uint64)
	WriteStall    func(tablet uint64, reason string)
	// BackgroundError reports a failed flush or compaction; it will be
	// retried.
	BackgroundError func(tablet uint64, err error)
	// LogCorruption reports that recovery stopped early at corrupt log data.
	LogCorruption func(err error)
	// LogSynced reports a commit log group commit: the records its one
	// write and fsync made durable, and how long those took.
	LogSynced func(records int, d time.Duration)
	// LogWriteFailed reports a failed commit log write or fsync, whose
	// writes all failed, and whether the log voided it by starting a new
	// segment (if not, every write fails until it can).
	LogWriteFailed func(err error, recovered bool)
}

// FlushInfo describes a finished minor compaction.
type FlushInfo struct {
	Tablet   uint64
	Files    int
	Bytes    int64
	Entries  int
	Duration time.Duration
}

// CompactionInfo describes a finished merging or major compaction.
type CompactionInfo struct {
	Tablet        uint64
	Group         string
	Major         bool
	InputFiles    int
	InputBytes    int64
	OutputBytes   int64
	DroppedCells  int64
	DroppedMarker int64
	Duration      time.Duration
}

// Defaults fills in zero fields.
func (o Options) Defaults() Options {
	def := func(p *int64, v int64) {
		if *p == 0 {
			*p = v
		}
	}
	def(&o.MemtableSize, 64<<20)
	def(&o.MemoryLimit, 1<<30)
	def(&o.BlockCacheSize, 256<<20)
	def(&o.LogSegmentSize, 64<<20)
	def(&o.MaxLogSize, 1<<30)
	if o.MaxFrozenMemtables == 0 {
		o.MaxFrozenMemtables = 2
	}
	if o.BlockSize == 0 {
		o.BlockSize = 64 << 10
	}
	if o.BloomFalsePositiveRate == 0 {
		o.BloomFalsePositiveRate = 0.01
	}
	if o.CompactionTrigger == 0 {
		o.CompactionTrigger = 4
	}
	if o.StallRuns == 0 {
		o.StallRuns = 24
	}
	if o.SizeRatio == 0 {
		o.SizeRatio = 1
	}
	if o.CompactionConcurrency == 0 {
		o.CompactionConcurrency = 2
	}
	if o.MajorCompactionInterval == 0 {
		o.MajorCompactionInterval = 24 * time.Hour
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return o
}

// Validate checks the options after Defaults.
func (o Options) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: tablet options: %s", model.ErrInvalidArgument, fmt.Sprintf(format, args...))
	}
	switch {
	case o.MemtableSize < 4<<10:
		return bad("memtable size %d below 4 KiB", o.MemtableSize)
	case o.MemoryLimit < o.MemtableSize:
		return bad("memory limit %d below the memtable size %d", o.MemoryLimit, o.MemtableSize)
	case o.MaxFrozenMemtables < 1:
		return bad("max frozen memtables %d below 1", o.MaxFrozenMemtables)
	case o.BlockSize < 512 || o.BlockSize > 16<<20:
		return bad("block size %d outside [512, 16 MiB]", o.BlockSize)
	case o.BloomFalsePositiveRate <= 0 || o.BloomFalsePositiveRate >= 1:
		return bad("bloom false-positive rate %v outside (0, 1)", o.BloomFalsePositiveRate)
	case o.BlockCacheSize < 0 || o.ScanCacheSize < 0:
		return bad("negative cache size")
	case o.CompactionTrigger < 2:
		return bad("compaction trigger %d below 2", o.CompactionTrigger)
	case o.StallRuns <= o.CompactionTrigger:
		return bad("stall runs %d not above the compaction trigger %d", o.StallRuns, o.CompactionTrigger)
	case o.SizeRatio < 0:
		return bad("negative size ratio")
	case o.CompactionConcurrency < 1:
		return bad("compaction concurrency %d below 1", o.CompactionConcurrency)
	case o.SplitSize < 0 || (o.SplitSize > 0 && o.SplitSize < 2*o.MemtableSize/8):
		return bad("split size %d too small for memtables of %d", o.SplitSize, o.MemtableSize)
	case o.LogSegmentSize < 4<<10:
		return bad("log segment size %d below 4 KiB", o.LogSegmentSize)
	case o.MaxLogSize < 2*o.LogSegmentSize:
		return bad("max log size %d below two segments", o.MaxLogSize)
	case o.Shared != nil && (o.Shared.Name == "" || strings.ContainsAny(o.Shared.Name, "/\x00") || o.Shared.Catalog == nil):
		return bad("shared mode needs a name without slashes and a catalog")
	}
	return nil
}
